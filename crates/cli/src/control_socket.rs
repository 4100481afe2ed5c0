//! How a generator's server (`pado agent`, `pado k8s generator`) reaches the run
//! it started as a child process (`pado run … --control-socket PATH`): a Unix
//! socket the run listens on, one change of the load per connection. The server
//! writes a `ControlCommand`'s JSON and a newline; the run applies it through its
//! `RunHandle` and answers one line, `{"ok":true}` or `{"status":409,"error":"…"}`.
//!
//! A Unix socket rather than a port: only this machine's processes reach it, and
//! only those its file's permissions let in (the run makes it readable and
//! writable by its own user only). Its path is in the job's directory when that
//! is short enough for a socket's address, else in the system's temporary
//! directory. Every exchange is bounded in time and size.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pado_fleet::job::ControlRefusal;
use pado_session::{ControlCommand, ControlError, RunHandle};

/// How long one exchange may take on either side.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(5);
/// Most bytes of one line (a command or an answer).
const MAX_LINE: u64 = 4096;
/// Longest path a socket's address holds on Linux (`sun_path` less its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Where the run of a job in `job_dir` (numbered `n`) listens: `control.sock` in
/// it, or in the temporary directory when that path is too long for a socket.
pub(crate) fn socket_path(job_dir: &Path, n: &str) -> PathBuf {
    let own = job_dir.join("control.sock");
    if own.as_os_str().len() <= MAX_SOCKET_PATH {
        own
    } else {
        std::env::temp_dir().join(format!("pado-control-{}-{n}.sock", std::process::id()))
    }
}

/// The status a refusal is answered with: `400` for a command that is not one,
/// `409` for one the run cannot take now.
fn status_of(e: &ControlError) -> u16 {
    match e {
        ControlError::BadCommand(_) => 400,
        _ => 409,
    }
}

/// The run's side: listen on `path` and apply every command to `handle`, on a
/// thread of its own, until the process ends. An error only when the socket
/// cannot be made (the run goes on; its load cannot be steered).
pub(crate) fn serve(path: &Path, handle: RunHandle) -> std::io::Result<()> {
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    std::thread::Builder::new()
        .name("control-socket".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = answer(stream, &handle);
            }
        })?;
    Ok(())
}

/// One connection: read a command line, apply it, answer.
fn answer(stream: UnixStream, handle: &RunHandle) -> std::io::Result<()> {
    stream.set_read_timeout(Some(EXCHANGE_TIMEOUT))?;
    stream.set_write_timeout(Some(EXCHANGE_TIMEOUT))?;
    let mut line = String::new();
    BufReader::new((&stream).take(MAX_LINE)).read_line(&mut line)?;
    let result = ControlCommand::from_json(line.trim()).and_then(|cmd| handle.apply(&cmd));
    let reply = match result {
        Ok(()) => serde_json::json!({ "ok": true }),
        Err(e) => serde_json::json!({ "status": status_of(&e), "error": e.to_string() }),
    };
    let mut out = &stream;
    writeln!(out, "{reply}")
}

/// The server's side: hand `body` (a command's JSON, one line) to the run
/// listening on `path` and read its answer, within [`EXCHANGE_TIMEOUT`].
pub(crate) fn send(path: &Path, body: &[u8]) -> Result<(), ControlRefusal> {
    let unreachable = |e: std::io::Error| ControlRefusal {
        status: 503,
        error: format!("the run could not be reached to change its load: {e}"),
    };
    if body.contains(&b'\n') || body.len() as u64 >= MAX_LINE {
        return Err(ControlRefusal {
            status: 400,
            error: "a command is one line of JSON of at most 4 KiB".into(),
        });
    }
    let stream = UnixStream::connect(path).map_err(unreachable)?;
    stream
        .set_read_timeout(Some(EXCHANGE_TIMEOUT))
        .map_err(unreachable)?;
    stream
        .set_write_timeout(Some(EXCHANGE_TIMEOUT))
        .map_err(unreachable)?;
    let mut w = &stream;
    w.write_all(body).map_err(unreachable)?;
    w.write_all(b"\n").map_err(unreachable)?;
    let mut line = String::new();
    BufReader::new((&stream).take(MAX_LINE))
        .read_line(&mut line)
        .map_err(unreachable)?;
    let v: serde_json::Value = serde_json::from_str(line.trim()).map_err(|e| ControlRefusal {
        status: 503,
        error: format!("the run's answer could not be read: {e}"),
    })?;
    if v["ok"] == true {
        return Ok(());
    }
    Err(ControlRefusal {
        status: v["status"].as_u64().map_or(409, |s| s as u16),
        error: v["error"].as_str().unwrap_or("refused").to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_job_directory_puts_the_socket_in_the_temporary_directory() {
        let short = socket_path(Path::new("/w/job-1"), "1");
        assert_eq!(short, Path::new("/w/job-1/control.sock"));
        let deep = PathBuf::from(format!("/{}", "디렉터리/".repeat(12)));
        let p = socket_path(&deep, "7");
        assert!(p.starts_with(std::env::temp_dir()), "{}", p.display());
        assert!(p.as_os_str().len() <= MAX_SOCKET_PATH);
    }

    #[test]
    fn nothing_listening_is_said_as_unreachable_and_a_bad_line_is_not_sent() {
        let dir = tempfile::tempdir().unwrap();
        let e = send(&dir.path().join("none.sock"), br#"{"action":"pause"}"#).unwrap_err();
        assert_eq!(e.status, 503);
        assert!(e.error.contains("could not be reached"), "{}", e.error);
        let e = send(&dir.path().join("none.sock"), b"{\n}").unwrap_err();
        assert_eq!(e.status, 400);
    }
}
