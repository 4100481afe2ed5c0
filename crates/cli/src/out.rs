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
pub fn write(args: fmt::Arguments<'_>) {
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
