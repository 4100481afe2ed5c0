//! Writing the command's output to stdout without panicking. `println!` panics when
//! stdout is a closed pipe (`pado compare a b | head -1`); a load tool's output is
//! often piped, and a run's results are already on disk by the time it prints, so a
//! reader that went away must neither crash pado nor change its exit code.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once stdout has gone away: nothing more is written to it.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Write formatted text to stdout. A closed pipe silences every later write; any
/// other failure (a full disk behind a redirect) is said once on stderr.
pub(crate) fn write(args: fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|_| o.flush()) {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = writeln!(std::io::stderr(), "warning: writing the output failed: {e}");
        }
    }
}

/// `print!` that never panics (see the module docs).
macro_rules! out {
    ($($t:tt)*) => { $crate::out::write(format_args!($($t)*)) };
}

/// `println!` that never panics (see the module docs).
macro_rules! outln {
    () => { $crate::out::write(format_args!("\n")) };
    ($($t:tt)*) => { $crate::out::write(format_args!("{}\n", format_args!($($t)*))) };
}

pub(crate) use {out, outln};

/// Whether the summary printed on stdout may use colours: never when `NO_COLOR` is set
/// to anything non-empty (<https://no-color.org>), always when `CLICOLOR_FORCE` is set
/// (and not `0`), otherwise when stdout is a terminal.
pub(crate) fn color() -> bool {
    color_from(
        std::env::var_os("NO_COLOR"),
        std::env::var_os("CLICOLOR_FORCE"),
        std::io::IsTerminal::is_terminal(&std::io::stdout()),
    )
}

fn color_from(
    no_color: Option<std::ffi::OsString>,
    force: Option<std::ffi::OsString>,
    terminal: bool,
) -> bool {
    if no_color.is_some_and(|v| !v.is_empty()) {
        return false;
    }
    if force.is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    terminal
}

#[cfg(test)]
mod tests {
    use super::color_from;

    #[test]
    fn no_color_wins_over_force_and_terminal() {
        let s = |v: &str| Some(std::ffi::OsString::from(v));
        assert!(!color_from(s("1"), s("1"), true));
        assert!(color_from(s(""), None, true), "an empty NO_COLOR is unset");
        assert!(color_from(None, s("1"), false));
        assert!(!color_from(None, s("0"), false));
        assert!(!color_from(None, None, false));
        assert!(color_from(None, None, true));
    }
}
