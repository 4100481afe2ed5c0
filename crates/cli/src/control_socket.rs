//! The run's side of the control socket: how a generator's server (`pado agent`, `pado k8s generator`) reaches the run
//! it started as a child process (`pado run … --control-socket PATH`; the server's side and the limits are
//! `pado_fleet::control_socket`): a Unix
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
use std::path::Path;

use pado_fleet::control_socket::{EXCHANGE_TIMEOUT, MAX_LINE};
use pado_session::{ControlCommand, ControlError, RunHandle};

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
