//! One event command: a program (argv) or `sh -c LINE`, in a process group of its
//! own so that a timeout — or the run's end while it still runs — kills it with
//! everything it started, the end of each output stream kept (the caller says how
//! much: the [`TAIL_BYTES`] shown plus a margin, so that secrets are masked before
//! the output is cut to what is shown).
//!
//! The command is also told to die with pado (`PR_SET_PDEATHSIG`, SIGKILL): when pado
//! itself is killed (`kill -9`, the OOM killer), the program it started does not go
//! on injecting its fault. What that program started in the background itself (a
//! daemon, `cmd &`) is not covered by the parent-death signal; see
//! `docs/events.md` for what then happens to the fault.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes kept of the end of each output stream.
pub const TAIL_BYTES: usize = 4096;

/// How a command ended.
#[derive(Debug, Default)]
pub struct CommandResult {
    /// Exit code; `None` when killed by a signal or never started.
    pub exit_code: Option<i32>,
    /// Killed at its timeout.
    pub timed_out: bool,
    /// Killed because the run ended while it ran (the caller's stop).
    pub stopped: bool,
    /// Could not be started (program not found, ...).
    pub spawn_error: Option<String>,
    /// Last bytes of stdout (at most the `keep` asked for).
    pub stdout: Vec<u8>,
    /// Last bytes of stderr (at most the `keep` asked for).
    pub stderr: Vec<u8>,
}

/// Keeps the last `keep` bytes written to it.
struct Tail {
    keep: usize,
    buf: Vec<u8>,
}

impl Tail {
    fn new(keep: usize) -> Tail {
        Tail {
            keep,
            buf: Vec::new(),
        }
    }

    fn push(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
        if self.buf.len() > 2 * self.keep {
            let cut = self.buf.len() - self.keep;
            self.buf.drain(..cut);
        }
    }

    fn take(&mut self) -> Vec<u8> {
        let mut v = std::mem::take(&mut self.buf);
        if v.len() > self.keep {
            v.drain(..v.len() - self.keep);
        }
        v
    }
}

fn drain(mut r: impl Read + Send + 'static, tail: Arc<Mutex<Tail>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            pado_base::lock(&tail).push(&buf[..n]);
        }
    })
}

/// Starts `cmd` as every event command starts: no input, its output piped, in a
/// process group of its own, and killed (SIGKILL) when the thread that started it
/// ends (the parent-death signal: pado killed takes the command with it).
fn spawn(mut cmd: Command) -> std::io::Result<std::process::Child> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: between fork and exec only async-signal-safe calls are allowed;
    // prctl(2) and getppid(2) are plain system calls, nothing is allocated or locked.
    unsafe {
        cmd.pre_exec(|| {
            // Die with the thread that started us (the event's thread, which lives
            // until the command ends): pado killed means the command is killed.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            // pado may have died between fork and prctl: then nobody would signal.
            if libc::getppid() == 1 {
                return Err(std::io::Error::other(
                    "pado ended before the command started",
                ));
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// Runs `argv` (no shell), keeping the last `keep` bytes of each output stream,
/// waiting at most `timeout`; past it, the process group is
/// killed (SIGKILL) and the result says `timed_out`. When `stop` is given and its
/// sender is dropped (the run is over) while the command runs, the process group is
/// killed at once and the result says `stopped`: a Ctrl-C does not wait for a long
/// action.
pub fn run_command(
    argv: &[String],
    keep: usize,
    timeout: Duration,
    stop: Option<&crossbeam_channel::Receiver<()>>,
) -> CommandResult {
    let Some((prog, args)) = argv.split_first() else {
        return CommandResult {
            spawn_error: Some("no program".into()),
            ..Default::default()
        };
    };
    let mut cmd = Command::new(prog);
    cmd.args(args);
    let mut child = match spawn(cmd) {
        Ok(c) => c,
        Err(e) => {
            return CommandResult {
                spawn_error: Some(format!("could not start `{prog}`: {e}")),
                ..Default::default()
            }
        }
    };
    let out = Arc::new(Mutex::new(Tail::new(keep)));
    let err = Arc::new(Mutex::new(Tail::new(keep)));
    let readers = [
        child.stdout.take().map(|s| drain(s, out.clone())),
        child.stderr.take().map(|s| drain(s, err.clone())),
    ];
    let deadline = Instant::now() + timeout;
    let pgid = child.id() as i32;
    let mut timed_out = false;
    let mut stopped = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(_) => break None,
        }
        // Nothing is ever sent on `stop`: disconnected means the run is over.
        stopped = stop.is_some_and(|s| {
            matches!(
                s.try_recv(),
                Err(crossbeam_channel::TryRecvError::Disconnected)
            )
        });
        if stopped || Instant::now() >= deadline {
            timed_out = !stopped;
            // SAFETY: kill(2) with a negative pid signals the process group the
            // child leads (`process_group(0)` made it one); no memory is touched.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    if timed_out || stopped {
        // The group is gone: the pipes close and the readers end.
        for r in readers.into_iter().flatten() {
            let _ = r.join();
        }
    } else {
        // A background process the command left running may hold the pipes open:
        // wait a moment for the readers, then keep what they read.
        let until = Instant::now() + Duration::from_millis(500);
        for r in readers.into_iter().flatten() {
            while !r.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            if r.is_finished() {
                let _ = r.join();
            }
        }
    }
    let take = |t: &Arc<Mutex<Tail>>| pado_base::lock(t).take();
    CommandResult {
        exit_code: status.and_then(|s| s.code()),
        timed_out,
        stopped,
        spawn_error: None,
        stdout: take(&out),
        stderr: take(&err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(line: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), line.into()]
    }

    #[test]
    fn exit_code_and_output_tails() {
        let r = run_command(
            &sh("echo hello; echo oops >&2; exit 3"),
            TAIL_BYTES,
            Duration::from_secs(10),
            None,
        );
        assert_eq!(r.exit_code, Some(3));
        assert!(!r.timed_out);
        assert_eq!(r.stdout, b"hello\n");
        assert_eq!(r.stderr, b"oops\n");
        // Only the last TAIL_BYTES are kept: 10000 bytes of `a` then `END`.
        let r = run_command(
            &sh("head -c 10000 /dev/zero | tr '\\0' a; printf END"),
            TAIL_BYTES,
            Duration::from_secs(10),
            None,
        );
        assert_eq!(r.exit_code, Some(0));
        assert_eq!(r.stdout.len(), TAIL_BYTES);
        assert!(r.stdout.ends_with(b"aEND"));
    }

    #[test]
    fn timeout_kills_the_process_group() {
        let t = Instant::now();
        // The shell's child `sleep` would keep the pipe open if only the shell died.
        let r = run_command(
            &sh("echo started; sleep 30; echo never"),
            TAIL_BYTES,
            Duration::from_millis(300),
            None,
        );
        let took = t.elapsed();
        assert!(r.timed_out);
        assert_eq!(r.exit_code, None);
        assert_eq!(r.stdout, b"started\n");
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let r = run_command(
            &["/nonexistent/prog".to_string()],
            TAIL_BYTES,
            Duration::from_secs(1),
            None,
        );
        assert!(r.spawn_error.unwrap().contains("/nonexistent/prog"));
    }

    #[test]
    fn the_runs_end_kills_a_running_command_at_once() {
        let (tx, rx) = crossbeam_channel::bounded::<()>(0);
        let ender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(tx);
        });
        let t = Instant::now();
        let r = run_command(
            &sh("echo started; sleep 60; echo never"),
            TAIL_BYTES,
            Duration::from_secs(120),
            Some(&rx),
        );
        let took = t.elapsed();
        ender.join().unwrap();
        assert!(r.stopped && !r.timed_out, "{r:?}");
        assert_eq!(r.exit_code, None);
        assert_eq!(r.stdout, b"started\n");
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn a_command_dies_with_the_thread_that_started_it() {
        // The parent-death signal follows the thread that forked: a thread that
        // ends without waiting for its command (as when pado is killed) takes the
        // command with it. Neither a stop nor a timeout is involved here.
        let starter = std::thread::spawn(|| {
            let mut cmd = Command::new("sleep");
            cmd.arg("60");
            spawn(cmd).unwrap()
        });
        let mut child = starter.join().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break Some(st);
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        use std::os::unix::process::ExitStatusExt;
        let status = status.expect("the command outlived the thread that started it");
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }
}
