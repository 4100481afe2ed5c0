//! `GET /api/stream`: Server-Sent Events written from the store by the
//! connection's own task. A reader that does not keep up only slows itself: the
//! store is locked just long enough to copy the new seconds' (shared) JSON, and
//! every write gives up after the server's write patience.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::server::{bounded, head_of, write_answer, Answer, Body, Shared};

/// The most streams open at once (each holds a task and a buffer).
const MAX_STREAMS: usize = 32;

/// How often a stream sends the state when nothing else happens.
const STREAM_TICK: Duration = Duration::from_secs(1);

/// `/api/stream`: each new second (`event: second`) and the state (`event:
/// state`) about once a second, until the client goes or the server stops. Each
/// state carries `id: N`, the second to go on from: a browser's `EventSource`
/// that reconnects sends it back as `Last-Event-ID` and misses nothing.
pub(crate) async fn stream_events<S: AsyncWrite + Unpin>(stream: &mut S, a: Answer, s: &Shared) {
    let Body::Stream(mut next) = a.body else {
        return;
    };
    if s.streams.fetch_add(1, Ordering::SeqCst) >= MAX_STREAMS {
        s.streams.fetch_sub(1, Ordering::SeqCst);
        let busy = Answer::error_text(503, "too many streams open: poll /api/seconds instead");
        let _ = write_answer(stream, busy, false, 1, false).await;
        return;
    }
    let mut head = head_of(&a);
    head.connection(Some("close"));
    let mut out = head.finish();
    let mut changes = s.changes.subscribe();
    loop {
        let page = pado_base::lock(&s.store).page(next);
        for sec in &page.seconds {
            out.extend_from_slice(b"event: second\ndata: ");
            out.extend_from_slice(sec.as_bytes());
            out.extend_from_slice(b"\n\n");
        }
        let more = page.seconds.len() == crate::store::MAX_PAGE;
        next = page.next;
        out.extend_from_slice(format!("event: state\nid: {next}\ndata: ").as_bytes());
        out.extend_from_slice(crate::state::state_json(s).to_string().as_bytes());
        out.extend_from_slice(b"\n\n");
        if !bounded(stream.write_all(&out)).await || !bounded(stream.flush()).await {
            break;
        }
        out.clear();
        if !more {
            let _ = tokio::time::timeout(STREAM_TICK, changes.changed()).await;
        }
    }
    s.streams.fetch_sub(1, Ordering::SeqCst);
}
