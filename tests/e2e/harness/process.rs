//! Starting the `pado` binary (and the few other programs the tests drive): the
//! command, its environment, a deadline that kills it, a child killed on drop,
//! Ctrl-C by signal, and the text of what it printed. Every test spawns through
//! here, so that how the binary is found and what environment it inherits is
//! decided once ([`pado_bin`]).

use std::ffi::OsStr;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use super::{pado_bin, shared_machine, test_home};

/// `pado ARGS`, not started yet, with the `PADO_HOME` of the test that starts it
/// ([`test_home`]): the caller adds what it needs (environment, another
/// `PADO_HOME`, directory, pipes) and starts it.
pub(crate) fn pado_cmd<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(pado_bin());
    cmd.env("PADO_HOME", test_home()).args(args);
    cmd
}

/// `WRAPPER... pado`, not started yet: pado run by another program (`taskset`,
/// `timeout`, `ip netns exec`), with its test's `PADO_HOME` as [`pado_cmd`]
/// gives it; the caller adds pado's arguments.
pub(crate) fn pado_under(wrapper: &[&str]) -> Command {
    let (program, args) = wrapper.split_first().expect("a wrapper program");
    let mut cmd = Command::new(program);
    cmd.env("PADO_HOME", test_home()).args(args).arg(pado_bin());
    cmd
}

/// Run pado with arbitrary arguments and wait.
pub(crate) fn pado(args: &[&str]) -> Output {
    pado_env(args, &[])
}

/// [`pado`] with environment variables set for this process only.
pub(crate) fn pado_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let _machine = shared_machine();
    pado_cmd(args)
        .envs(env.iter().copied())
        .output()
        .expect("running pado")
}

/// Start `cmd` in the background with its stdout and stderr captured (read them
/// with `wait_with_output`).
pub(crate) fn spawn_piped(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting pado")
}

/// A child process killed on drop (a failing test must not leave it running).
pub(crate) struct Kid(pub Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Send SIGINT to a child, as Ctrl-C would.
pub(crate) fn interrupt(child: &Child) {
    // SAFETY: signalling our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
}

/// Wait for `child` at most `limit`: its exit status, or `None` once the limit
/// has passed, the child then killed and reaped (a test must not hang on it).
pub(crate) fn wait_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    wait_within_polling(child, limit, Duration::from_millis(50))
}

/// [`wait_within`], looking every `poll`.
pub(crate) fn wait_within_polling(
    child: &mut Child,
    limit: Duration,
    poll: Duration,
) -> Option<ExitStatus> {
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(poll);
    }
}

/// `pado <args>` for a server that prints `listening on URL` first (`pado target
/// serve ... --port 0`): its child (stdout taken, stderr dropped) and that URL.
pub(crate) fn serve_printing_url(args: &[&str]) -> (Child, String) {
    use std::io::BufRead as _;
    let mut child = pado_cmd(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("`pado {}` printed {line:?}", args.join(" ")))
        .to_string();
    (child, url)
}

/// Bytes a process printed, as text (lossy).
pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A process's stderr, as text.
pub(crate) fn stderr(o: &Output) -> String {
    text(&o.stderr)
}

/// All a process said, for a failed assertion's message: its exit code, stdout
/// and stderr.
pub(crate) fn say(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    )
}
