//! `/sse`: an OpenAI-style chat completion streamed as Server-Sent Events with
//! pacing the test plants: the first token `first_ms` after the request was read,
//! then one every `gap_ms` (each on the schedule from that instant, so delays do
//! not add up), each event its own chunk and flush. What a client must measure is
//! then known exactly: time to first token `first_ms`, inter-token latency
//! `gap_ms`, `tokens` tokens (or the `usage` count the last event gives). With
//! `id=X` every chunk carries `"id":"X"` (as OpenAI's completion id); with
//! `error=1` an `event: error` comes after the tokens; with `bad_at=K` token `K`
//! (0-based) comes as a broken event instead: type `warning`, `id: bad-K`, data
//! that is not JSON (`토큰K {broken`), the stream's event `K + 1` (the role event
//! is its first).

use std::io;
use std::time::{Duration, Instant};

use crate::http::{self, Request};
use tokio::io::AsyncWriteExt;

use super::{after, conn_header, head, sleep_until, After, Transport};

/// Most tokens one stream sends (a bound on the route's work).
const MAX_TOKENS: u64 = 100_000;

/// `/sse?tokens=N&first_ms=T0&gap_ms=D[&usage=K][&cut=1][&id=X][&error=1][&bad_at=K]`.
pub(super) async fn sse<S: Transport>(
    s: &mut S,
    req: &Request,
    received_at: Instant,
    shared: &crate::Shared,
) -> io::Result<After> {
    let num = |name: &str, default: u64| match req.query_param(name) {
        None => Some(default),
        Some(v) => v.parse::<u64>().ok(),
    };
    let (Some(tokens), Some(first_ms), Some(gap_ms)) =
        (num("tokens", 5), num("first_ms", 0), num("gap_ms", 0))
    else {
        return super::send(
            s,
            req,
            400,
            Some("text/plain"),
            &[],
            b"bad sse parameters\n",
        )
        .await;
    };
    let tokens = tokens.min(MAX_TOKENS);
    let usage = req.query_param("usage").and_then(|v| v.parse::<u64>().ok());
    let cut = req.query_param("cut") == Some("1");
    let error = req.query_param("error") == Some("1");
    let bad_at = req
        .query_param("bad_at")
        .and_then(|v| v.parse::<u64>().ok());
    // The completion's id in every chunk, as OpenAI sends it (letters, digits, `-`
    // and `_` only: it is written into JSON as is).
    let id = match req.query_param("id") {
        Some(v)
            if v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            format!("\"id\":\"{v}\",")
        }
        _ => String::new(),
    };
    let out = head(
        200,
        Some("text/event-stream"),
        None,
        &[
            ("Transfer-Encoding", "chunked"),
            ("Cache-Control", "no-cache"),
        ],
        conn_header(req),
    )
    .finish();
    s.write_all(&out).await?;
    // The role comes first and carries no token (as OpenAI's first chunk).
    let role = format!(
        ": keep-alive\n\ndata: {{{id}\"choices\":[{{\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}}}}]}}\n\n"
    );
    event(s, &role).await?;
    for i in 0..tokens {
        let wait = Duration::from_millis(first_ms + i * gap_ms);
        sleep_until(received_at, wait).await;
        if i == 0 {
            // How late the first token left against its plan (the server's own
            // timer on a busy machine), as `/delay` notes it.
            shared.delay_late(received_at.elapsed().saturating_sub(wait));
        }
        let text = if bad_at == Some(i) {
            format!("event: warning\nid: bad-{i}\ndata: 토큰{i} {{broken\n\n")
        } else {
            format!("data: {{{id}\"choices\":[{{\"delta\":{{\"content\":\"토큰{i} \"}}}}]}}\n\n")
        };
        event(s, &text).await?;
    }
    if let Some(k) = usage {
        let text = format!(
            "data: {{{id}\"choices\":[],\"usage\":{{\"prompt_tokens\":7,\"completion_tokens\":{k}}}}}\n\n"
        );
        event(s, &text).await?;
    }
    if error {
        event(
            s,
            "event: error\ndata: {\"error\":{\"message\":\"overloaded\"}}\n\n",
        )
        .await?;
    }
    if cut {
        // Half an event, then the connection closes: a stream cut mid-event.
        event(s, "data: {\"choices\":[{\"del").await?;
        return Ok(After::Close);
    }
    event(s, "data: [DONE]\n\n").await?;
    s.write_all(http::LAST_CHUNK).await?;
    s.flush().await?;
    Ok(after(req))
}

/// One event (or any text) as its own chunk, flushed.
async fn event<S: Transport>(s: &mut S, text: &str) -> io::Result<()> {
    let mut chunk = Vec::with_capacity(text.len() + 16);
    http::write_chunk(&mut chunk, text.as_bytes());
    s.write_all(&chunk).await?;
    s.flush().await
}
