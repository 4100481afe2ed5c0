//! A blocking client that sends a request's body without waiting for the answer
//! to its head, as curl and CI scripts do: the truth the tests of a server's
//! refusals are judged by (a refused request whose body arrives anyway must still
//! get its answer, not a TCP reset; see [`crate::linger`]). Test-only: behind the
//! `body-anyway` feature, which only dev-dependencies turn on.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Sends `head` (a whole request head announcing `len` bytes) to `addr` and a
/// body of `len` bytes: with `late`, the head first, then (once the answer has
/// arrived) the body in two writes 300 ms apart; else head and body in one
/// write. Then reads to the end: the answer's status and body, or what went
/// wrong, in words.
pub fn send_body_anyway(
    addr: &str,
    head: &str,
    len: usize,
    late: bool,
) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| format!("read timeout: {e}"))?;
    let body = vec![b'x'; len];
    if late {
        s.write_all(head.as_bytes())
            .map_err(|e| format!("head: {e}"))?;
        // The answer is in this socket before a byte of the body is sent.
        s.peek(&mut [0u8; 1]).map_err(|e| format!("peek: {e}"))?;
        let (first, second) = body.split_at(len / 2);
        s.write_all(first).map_err(|e| format!("first half: {e}"))?;
        // Generous: whatever the server's socket answers to the first half is here.
        std::thread::sleep(Duration::from_millis(300));
        s.write_all(second)
            .map_err(|e| format!("second half: {e}"))?;
    } else {
        let mut all = head.as_bytes().to_vec();
        all.extend_from_slice(&body);
        s.write_all(&all).map_err(|e| format!("request: {e}"))?;
    }
    let mut out = Vec::new();
    s.read_to_end(&mut out).map_err(|e| {
        format!(
            "reading the answer: {e} (read so far: {:?})",
            String::from_utf8_lossy(&out)
        )
    })?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.get(9..12).and_then(|v| v.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok((status, body.to_string()))
}
