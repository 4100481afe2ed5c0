//! `POST /v1/chat/completions` and `POST /v1/completions`: the demo LLM
//! ([`crate::llm`]) answering OpenAI-compatible requests, streamed as Server-Sent
//! Events (`stream: true`) over HTTP/1.1 (chunked) or HTTP/2 (data frames), or
//! whole. The routes take no worker from the API's pool: the batch is their
//! capacity. They count in `http_server_requests_seconds` once the answer is
//! complete (a stream: its last event written).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::response::Response;
use super::routing::method_label;
use super::{unix_now, App};
use crate::http::{connection_value, write_chunk, Head, Request, LAST_CHUNK};
use crate::llm::events::{completion, Answer, DONE};
use crate::llm::request::{parse, ChatRequest};
use crate::metrics::SeriesKey;

/// Numbers the answers' ids (`chatcmpl-N`).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The `uri` label of a request to the LLM's routes, or `None` for any other path.
pub(super) fn llm_route(path: &str) -> Option<&'static str> {
    match path.strip_suffix('/').unwrap_or(path) {
        "/v1/chat/completions" => Some("/v1/chat/completions"),
        "/v1/completions" => Some("/v1/completions"),
        _ => None,
    }
}

/// What a request to the LLM routes comes to.
pub(super) enum Chat {
    /// A whole answer to write (an error, or a request that did not stream).
    Done(Response),
    /// A stream to write as it is generated.
    Stream(Stream),
}

/// A streamed answer about to be generated.
pub(super) struct Stream {
    chat: ChatRequest,
    uri: &'static str,
    arrived: Instant,
}

/// Where a stream's events go.
pub(super) trait Sink {
    /// Sends one event (or the stream's end) to the client.
    fn send(&mut self, bytes: &[u8]) -> impl std::future::Future<Output = io::Result<()>> + Send;
}

/// An HTTP/1.1 connection: each event its own chunk, flushed.
struct Chunked<'a, S> {
    stream: &'a mut S,
    chunk: Vec<u8>,
}

impl<S: AsyncWrite + Unpin + Send> Sink for Chunked<'_, S> {
    async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.chunk.clear();
        write_chunk(&mut self.chunk, bytes);
        self.stream.write_all(&self.chunk).await?;
        self.stream.flush().await
    }
}

/// An HTTP/2 stream: each event a data frame, through the body's channel.
struct Frames(tokio::sync::mpsc::Sender<Bytes>);

impl Sink for Frames {
    async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0
            .send(Bytes::copy_from_slice(bytes))
            .await
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }
}

/// A request that did not stream: the events are not sent, only paced.
struct Discard;

impl Sink for Discard {
    async fn send(&mut self, _bytes: &[u8]) -> io::Result<()> {
        Ok(())
    }
}

impl App {
    /// Reads a request to an LLM route (`uri`): an error, a whole answer (generated
    /// at the stream's pace before it is returned), or a stream to write.
    pub(super) async fn chat(&self, req: &Request, uri: &'static str) -> Chat {
        let arrived = Instant::now();
        self.wait_stall().await;
        let resp = if req.method != "POST" {
            Response::error(405, "method not allowed").with_header("allow", "POST".into())
        } else {
            let faults = self.faults();
            match parse(&req.body) {
                Err(e) => openai_error(400, &e),
                Ok(_) if faults.error_rate > 0.0 && fastrand::f64() < faults.error_rate => {
                    openai_error(500, "injected fault (error_rate)")
                }
                Ok(chat) if chat.stream => {
                    return Chat::Stream(Stream { chat, uri, arrived });
                }
                Ok(chat) => {
                    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
                    match self.generate(&chat, id, arrived, &mut Discard).await {
                        Ok(()) => Response::json(
                            200,
                            &completion(
                                id,
                                &chat.model,
                                unix_now() as u64,
                                chat.prompt_tokens,
                                chat.max_tokens,
                            ),
                        ),
                        Err(_) => Response::error(503, "shutting down"),
                    }
                }
            }
        };
        self.record_llm(&req.method, uri, resp.status, arrived);
        Chat::Done(resp)
    }

    fn record_llm(&self, method: &str, uri: &'static str, status: u16, arrived: Instant) {
        self.http.record(
            SeriesKey {
                method: method_label(method),
                uri,
                status,
            },
            arrived.elapsed(),
        );
    }

    /// Writes a stream on an HTTP/1.1 connection; an error ends the connection
    /// (the client went away, or the service stops).
    pub(super) async fn stream_h1<S: AsyncWrite + Unpin + Send>(
        &self,
        stream: &mut S,
        req: &Request,
        s: Stream,
    ) -> io::Result<()> {
        let mut head = Head::lowercase(200);
        head.header("content-type", "text/event-stream")
            .header("cache-control", "no-cache")
            .chunked()
            .connection(connection_value(req.keep_alive, req.version));
        stream.write_all(&head.finish()).await?;
        stream.flush().await?;
        let mut sink = Chunked {
            stream,
            chunk: Vec::with_capacity(512),
        };
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        self.generate(&s.chat, id, s.arrived, &mut sink).await?;
        sink.stream.write_all(LAST_CHUNK).await?;
        sink.stream.flush().await?;
        self.record_llm("POST", s.uri, 200, s.arrived);
        Ok(())
    }

    /// An HTTP/2 stream: its events generated on a task of their own into the
    /// response body's channel (a client that resets the stream ends the task).
    pub(super) fn stream_h2(self: &Arc<Self>, s: Stream) -> tokio::sync::mpsc::Receiver<Bytes> {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let app = self.clone();
        tokio::spawn(async move {
            let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
            if app
                .generate(&s.chat, id, s.arrived, &mut Frames(tx))
                .await
                .is_ok()
            {
                app.record_llm("POST", s.uri, 200, s.arrived);
            }
        });
        rx
    }

    /// Generates `chat`'s answer at the LLM's pace, sending its events to `sink`
    /// when it streams: a place in the batch, the prefill, then one token per decode
    /// step (scheduled from the first token's instant, so timer lateness does not
    /// add up), the finish, `usage` when asked, `[DONE]`.
    async fn generate<K: Sink>(
        &self,
        chat: &ChatRequest,
        id: u64,
        arrived: Instant,
        sink: &mut K,
    ) -> io::Result<()> {
        let mut admitted = self
            .llm
            .admit(chat.prompt_tokens)
            .await
            .map_err(|_| io::Error::other("the service is stopping"))?;
        let mut at = tokio::time::Instant::now() + self.llm.pacing().prefill(chat.prompt_tokens);
        tokio::time::sleep_until(at).await;
        let mut answer = Answer::new(id, &chat.model, unix_now() as u64);
        if chat.stream {
            sink.send(answer.role()).await?;
        }
        for i in 0..chat.max_tokens {
            if i > 0 {
                at += self.llm.pacing().decode_with(admitted.running());
                tokio::time::sleep_until(at).await;
            }
            admitted.token();
            if i == 0 {
                self.llm.first_token(arrived.elapsed());
            }
            if chat.stream {
                sink.send(answer.token(i)).await?;
            }
        }
        drop(admitted);
        self.llm.finished();
        if chat.stream {
            sink.send(answer.finish()).await?;
            if chat.include_usage {
                sink.send(answer.usage(chat.prompt_tokens, chat.max_tokens))
                    .await?;
            }
            sink.send(DONE).await?;
        }
        Ok(())
    }
}

/// An error in OpenAI's shape (`{"error": {"message", "type", "code"}}`), which
/// OpenAI's clients read.
fn openai_error(status: u16, message: &str) -> Response {
    let kind = if status < 500 {
        "invalid_request_error"
    } else {
        "server_error"
    };
    Response::json(
        status,
        &serde_json::json!({ "error": { "message": message, "type": kind, "code": status } }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::time::Duration;

    /// What a client saw of one streamed answer: when its first token and its end
    /// arrived (from just before the request was written), and its tokens.
    #[derive(Debug)]
    struct Seen {
        first_token: Duration,
        first_token_at: Instant,
        done_at: Instant,
        done: Duration,
        tokens: usize,
        body: String,
    }

    /// Streams one answer of `max_tokens` for a prompt of `prompt` over a new
    /// HTTP/1.1 connection.
    fn stream(addr: SocketAddr, prompt: &str, max_tokens: u64) -> Seen {
        let body = serde_json::json!({
            "model": "m", "stream": true, "max_tokens": max_tokens,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": prompt}],
        })
        .to_string();
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let t0 = Instant::now();
        write!(
            c,
            "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let (mut got, mut buf) = (Vec::new(), [0u8; 4096]);
        let mut first_token = None;
        loop {
            let n = c.read(&mut buf).unwrap();
            assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got);
            if first_token.is_none() && text.contains("\"delta\":{\"content\":\"") {
                first_token = Some(t0.elapsed());
            }
            if text.ends_with("0\r\n\r\n") && text.contains("data: [DONE]") {
                break;
            }
        }
        let body = String::from_utf8(got).expect("UTF-8 intact");
        let first_token = first_token.unwrap();
        Seen {
            first_token,
            first_token_at: t0 + first_token,
            done_at: Instant::now(),
            done: t0.elapsed(),
            tokens: body.matches("\"delta\":{\"content\":\"").count(),
            body,
        }
    }

    fn metric(addr: SocketAddr, name: &str) -> f64 {
        let mut c = TcpStream::connect(addr).unwrap();
        write!(
            c,
            "GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        c.read_to_string(&mut text).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']))
            .unwrap_or_else(|| panic!("no {name} in {text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    fn post_faults(addr: SocketAddr, json: &str) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        write!(
            c,
            "POST /admin/faults HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{json}",
            json.len()
        )
        .unwrap();
        let mut text = String::new();
        c.read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn the_stream_is_paced_by_prefill_and_decode_and_past_the_batch_requests_wait() {
        let target = crate::start(crate::TargetOptions {
            posts: 10,
            faults: crate::Faults {
                llm_batch_limit: 1,
                llm_prefill_ms_per_1k_tokens: 100.0,
                llm_decode_ms_per_token: 30.0,
                llm_batch_slowdown: 0.0,
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap();
        let addr = target.addr();
        // 2,000 ASCII characters: 500 tokens, 50 ms of prefill; 5 tokens then
        // take 4 × 30 ms more.
        let prompt = "a".repeat(2_000);
        let alone = stream(addr, &prompt, 5);
        assert_eq!(alone.tokens, 5, "{}", alone.body);
        assert!(
            alone.body.contains("\"completion_tokens\":5"),
            "{}",
            alone.body
        );
        assert!(
            alone.body.contains("\"prompt_tokens\":500"),
            "{}",
            alone.body
        );
        assert!(
            alone.body.contains(" 파도"),
            "Hangul intact: {}",
            alone.body
        );
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        assert!((49.0..250.0).contains(&ms(alone.first_token)), "{alone:?}");
        // The tokens are on the schedule of the prefill's end: the last one 50 +
        // 4 × 30 ms after the request, whatever the first one's timer lateness.
        assert!((169.0..600.0).contains(&ms(alone.done)), "{alone:?}");
        // A longer prompt waits longer for its first token (4× the prefill).
        let long = stream(addr, &"a".repeat(7_999), 1);
        assert!(
            long.first_token >= Duration::from_millis(199),
            "{long:?} vs {alone:?}"
        );

        // A batch of 1: two at once, the second waits for the first's whole answer.
        let both = || {
            let p = prompt.clone();
            let a = std::thread::spawn(move || stream(addr, &p, 5));
            std::thread::sleep(Duration::from_millis(20));
            let b = stream(addr, &prompt, 5);
            (a.join().unwrap(), b)
        };
        let (a, b) = both();
        // Its place comes when the first's last token is out; then its prefill.
        assert!(
            b.first_token_at >= a.done_at + Duration::from_millis(40),
            "the second's first token came before the first had finished: {a:?} {b:?}"
        );
        // Raised at run time: both run at once, neither waits.
        let r = post_faults(addr, r#"{"llm_batch_limit": 2}"#);
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        let (a, b) = both();
        assert!(
            b.first_token < Duration::from_millis(150),
            "waited for a place although the batch holds 2: {a:?} {b:?}"
        );
        assert_eq!(
            metric(addr, "pado_target_fault{fault=\"llm_batch_limit\"}"),
            2.0
        );
        assert!(metric(addr, "vllm:generation_tokens_total") >= 26.0);
        let bad = post_faults(addr, r#"{"llm_batch_limit": 0}"#);
        assert!(
            bad.starts_with("HTTP/1.1 400") && bad.contains("llm_batch_limit"),
            "{bad}"
        );
        target.shutdown();
    }

    #[test]
    fn the_llm_routes_are_told_by_their_paths() {
        assert_eq!(
            llm_route("/v1/chat/completions"),
            Some("/v1/chat/completions")
        );
        assert_eq!(
            llm_route("/v1/chat/completions/"),
            Some("/v1/chat/completions")
        );
        assert_eq!(llm_route("/v1/completions"), Some("/v1/completions"));
        assert_eq!(llm_route("/v1/models"), None);
        assert_eq!(llm_route("/api/posts"), None);
    }
}
