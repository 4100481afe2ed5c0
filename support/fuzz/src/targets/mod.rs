//! The targets: each feeds one input to a real parser entry point of pado, the way
//! pado itself reaches it, and checks the invariants its callers rely on.

use std::future::Future;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use pado_engine::cookies::CookieJar;
use pado_engine::response_view::ResponseView;
use pado_http::response::{parse_head, BodyKind, ChunkedDecoder};
use pado_http::{exchange, Origin, RequestRef};
use pado_metrics::{ObserveWriter, ResultDir, ScrapeOutcome};

use crate::{corpus_files, crate_dir, Target};

mod bundle;
mod h2;
mod live;
mod merge;
mod websocket;

pub use bundle::bundle;
pub use h2::{grpc_response, h2_response};
pub use live::live;
pub use merge::merge;
pub use websocket::websocket;

/// Every target.
pub static ALL: &[Target] = &[
    Target {
        name: "scenario",
        about: "scenario loader: load::parse_str (lossy UTF-8), load_file (raw bytes), validate",
        run: scenario,
        seeds: scenario_seeds,
        dict: SCENARIO_DICT,
        max_len: 16 * 1024,
    },
    Target {
        name: "http_response",
        about: "HTTP/1.1 response head and body framing: parse_head + ChunkedDecoder in pieces, \
                and the client's exchange() over loopback TCP; cookies and header view",
        run: http_response,
        seeds: || corpus_files("http_response", &[]),
        dict: HTTP_DICT,
        max_len: 16 * 1024,
    },
    Target {
        name: "exposition",
        about: "Prometheus text / OpenMetrics parser, then observe.jsonl written and read back",
        run: exposition,
        seeds: || corpus_files("exposition", &[]),
        dict: EXPOSITION_DICT,
        max_len: 16 * 1024,
    },
    Target {
        name: "result_timeline",
        about:
            "timeline.jsonl of a result directory through `pado report`'s load, build and renderers",
        run: result_timeline,
        seeds: || corpus_files("result_timeline", &[]),
        dict: RESULT_DICT,
        max_len: 32 * 1024,
    },
    Target {
        name: "result_run",
        about: "run.json of a result directory through `pado report`'s load, build and renderers",
        run: result_run,
        seeds: || corpus_files("result_run", &[]),
        dict: RESULT_DICT,
        max_len: 16 * 1024,
    },
    Target {
        name: "result_observe",
        about: "observe.jsonl of a result directory: read_observations and `pado report`",
        run: result_observe,
        seeds: || corpus_files("result_observe", &[]),
        dict: RESULT_DICT,
        max_len: 16 * 1024,
    },
    Target {
        name: "result_events",
        about: "events.jsonl of a result directory: read_events and `pado report` (impact, expectations)",
        run: result_events,
        seeds: || corpus_files("result_events", &[]),
        dict: RESULT_DICT,
        max_len: 16 * 1024,
    },
    Target {
        name: "h1server_request",
        about: "the demo target's and test server's request reader (h1server::read_request)",
        run: h1server_request,
        seeds: || corpus_files("h1server_request", &[]),
        dict: HTTP_DICT,
        max_len: 16 * 1024,
    },
    Target {
        name: "merge",
        about: "pado merge of segment directories (run.json, timeline.jsonl, ...) from the input: \
                merge::plan and write_each, the merged length within the plan's bound",
        run: merge,
        seeds: merge::seeds,
        dict: merge::DICT,
        max_len: 64 * 1024,
    },
    Target {
        name: "live",
        about: "the coordinator's live loop (coordinate::watch, LiveMerger::bounded) polling \
                generators whose feeds are the input's lines",
        run: live,
        seeds: live::seeds,
        dict: live::DICT,
        max_len: 32 * 1024,
    },
    Target {
        name: "bundle",
        about: "an agent's job bundle and a result tar unpacked (bundle::unpack, archive::unpack): \
                entries with `..`, links, PAX and long names, lying sizes",
        run: bundle,
        seeds: bundle::seeds,
        dict: bundle::DICT,
        max_len: 16 * 1024,
    },
    Target {
        name: "h2_response",
        about: "the HTTP/2 client (H2Pool, exchange_h2, body decoding) against a loopback server \
                sending the input as its frames",
        run: h2_response,
        seeds: h2::h2_seeds,
        dict: h2::DICT,
        max_len: 16 * 1024,
    },
    Target {
        name: "grpc_response",
        about: "a gRPC call (exchange_grpc: message framing, trailers, trailers-only) against a \
                loopback server sending the input as its HTTP/2 frames",
        run: grpc_response,
        seeds: h2::grpc_seeds,
        dict: h2::DICT,
        max_len: 16 * 1024,
    },
    Target {
        name: "websocket",
        about: "a ws: step's session run once (run_single: upgrade, frames, actions) against a \
                loopback server sending the input as its frames",
        run: websocket,
        seeds: websocket::seeds,
        dict: websocket::DICT,
        max_len: 16 * 1024,
    },
];

const SCENARIO_DICT: &[&[u8]] = &[
    b"\n  ",
    b"- ",
    b": ",
    b"&a ",
    b"*a",
    b"<<: *a",
    b"!!binary ",
    b"!!str ",
    b"? ",
    b"|\n",
    b">-\n",
    b"---\n",
    b"{{",
    b"}}",
    b"{{ vu }}",
    b"{{ feed.users.name }}",
    b"{{ random(1, 18446744073709551615) }}",
    b"scenarios:",
    b"executor: ",
    b"ramping-vus",
    b"constant-arrival-rate",
    b"ramping-arrival-rate",
    b"stages:",
    b"duration: ",
    b"target: ",
    b"rate: ",
    b"vus: ",
    b"request: ",
    b"GET /",
    b"POST /x",
    b"http://",
    b"check:",
    b"status: ",
    b"2xx",
    b"extract:",
    b"json: ",
    b"$.a[0]",
    b"regex: ",
    b"think: ",
    b"weight: ",
    b"flow:",
    b"mix:",
    b"thresholds:",
    b"p(95) < ",
    b"feeds:",
    b"observe:",
    b"1h",
    b"0s",
    b"99999999999h",
    b"1.5ms",
];

const HTTP_DICT: &[&[u8]] = &[
    b"HTTP/1.1 ",
    b"HTTP/1.0 ",
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\n",
    b"HTTP/1.1 204 No Content\r\n",
    b"HTTP/1.1 304 Not Modified\r\n",
    b"GET / HTTP/1.1\r\n",
    b"POST /x?a=%zz&b=+ HTTP/1.1\r\n",
    b"Content-Length: ",
    b"Content-Length: 18446744073709551615\r\n",
    b"Transfer-Encoding: chunked\r\n",
    b"Transfer-Encoding: gzip, chunked\r\n",
    b"Connection: close\r\n",
    b"Connection: keep-alive\r\n",
    b"Expect: 100-continue\r\n",
    b"Set-Cookie: a=b; Max-Age=0\r\n",
    b"Set-Cookie: ",
    b"Max-Age=",
    b"ffffffffffffffff\r\n",
    b"0\r\n\r\n",
    b"0\r\nTrailer: x\r\n\r\n",
    b";ext=\"v\"",
    b"%",
    b"%00",
    b"%ff",
];

const EXPOSITION_DICT: &[&[u8]] = &[
    b"# TYPE ",
    b"# HELP ",
    b"# UNIT ",
    b"# EOF",
    b" counter\n",
    b" gauge\n",
    b" histogram\n",
    b" summary\n",
    b" gaugehistogram\n",
    b" info\n",
    b"_total",
    b"_bucket",
    b"_created",
    b"_gcount",
    b"{le=\"+Inf\"}",
    b"{\"quoted.name\",a=\"b\"}",
    b"=\"",
    b"\\n",
    b"\\\"",
    b" # {trace_id=\"x\"} 1 2",
];

const RESULT_DICT: &[&[u8]] = &[
    b"\"t\":",
    b"\"vus\":",
    b"\"series\":",
    b"\"hist\":",
    b"\"HISTFAAAA",
    b"\"lag_hist\":{\"inf\":1}",
    b"\"generator\":",
    b"\"status\":{\"200\":",
    b"\"errors\":{\"timeout\":",
    b"\"k\":\"scrape\"",
    b"\"k\":\"series\"",
    b"\"k\":\"endpoint\"",
    b"\"v\":[[0,",
    b"\"gone\":[",
    b"\"stages\":",
    b"\"thresholds\":",
    b"\"expr\":\"",
    b"p(99.9)<",
    b"rate<",
    b"\"duration_s\":",
    b"\"version\":",
    b"\"start_s\":",
    b"\"end_s\":",
];

// ---- shared helpers ----------------------------------------------------------------

thread_local! {
    pub(crate) static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    static SCRATCH: Scratch = Scratch::new();
    static SERVER: LoopServer = LoopServer::start();
}

pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
    RUNTIME.with(|rt| rt.block_on(f))
}

/// A directory of this thread's own, removed when the thread ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "pado-fuzz-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).expect("create fuzz scratch directory");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn with_scratch<R>(f: impl FnOnce(&Path) -> R) -> R {
    SCRATCH.with(|s| f(&s.0))
}

// ---- scenario ----------------------------------------------------------------------

fn scenario_seeds() -> Vec<Vec<u8>> {
    let mut extra: Vec<PathBuf> = std::fs::read_dir(crate_dir().join("../../examples"))
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    extra.retain(|p| p.extension().is_some_and(|e| e == "yaml" || e == "json"));
    extra.sort();
    corpus_files("scenario", &extra)
}

/// The scenario loader: the text (lossy UTF-8) through `parse_str`, and the raw bytes
/// through `load_file` as `pado run` reads a file; a parsed scenario is validated
/// again (as quick-mode overrides are) and every error is rendered.
pub fn scenario(data: &[u8]) {
    use pado_scenario::load;
    let text = String::from_utf8_lossy(data);
    match load::parse_str(&text, "fuzz.yaml") {
        Ok(cfg) => {
            if let Err(e) = load::validate(&cfg, "fuzz.yaml") {
                let _ = e.to_string();
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
    with_scratch(|dir| {
        let p = dir.join("scenario.yaml");
        std::fs::write(&p, data).expect("write scratch scenario");
        match load::load_file(&p) {
            Ok(l) => {
                let _ = load::validate(&l.config, &l.file);
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    });
}

// ---- HTTP response -----------------------------------------------------------------

/// Largest body kept, as a check's body cap would.
const BODY_CAP: usize = 1 << 20;

/// The client's response framing. The bytes are the server's whole answer: parsed
/// sans-I/O as the client does (the head re-parsed as pieces arrive, the body framed
/// and de-chunked piece by piece) for both GET and HEAD, then sent by a loopback
/// server to the real `exchange()`; what checks read (header view, cookie jar, JSON
/// body) is built from both.
pub fn http_response(data: &[u8]) {
    let mix = data
        .iter()
        .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(*b as usize));
    let piece = 1 + mix % 61;
    sans_io(data, false, piece);
    sans_io(data, true, piece);
    loopback(data, mix % 7 == 0);
}

fn keep(body: &mut Vec<u8>, b: &[u8]) {
    let room = BODY_CAP.saturating_sub(body.len());
    body.extend_from_slice(&b[..b.len().min(room)]);
}

fn sans_io(data: &[u8], is_head: bool, piece: usize) {
    // At most ~64 re-parses of the head, as a slow server's reads would cause.
    let piece = piece.max(data.len() / 64).max(1);
    let mut buf = Vec::new();
    let mut fed = 0;
    let head = loop {
        let end = (fed + piece).min(data.len());
        buf.extend_from_slice(&data[fed..end]);
        fed = end;
        match parse_head(&buf, is_head) {
            Ok(Some(h)) => break h,
            Ok(None) if fed < data.len() => continue,
            Ok(None) => return,
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        }
    };
    assert!(
        head.start <= head.len && head.len <= buf.len(),
        "head {head:?} outside the {} bytes read",
        buf.len()
    );
    let rest = &data[head.len..];
    let mut body = Vec::new();
    match head.body {
        BodyKind::None => {}
        BodyKind::Length(n) => {
            let n = n.min(rest.len() as u64) as usize;
            keep(&mut body, &rest[..n]);
        }
        BodyKind::UntilClose => keep(&mut body, rest),
        BodyKind::Chunked => {
            let mut dec = ChunkedDecoder::new();
            for p in rest.chunks(piece) {
                match dec.feed(p, |b| keep(&mut body, b)) {
                    Ok(used) => {
                        assert!(
                            used == p.len() || (used < p.len() && dec.is_done()),
                            "chunked decoder consumed {used} of {} bytes and is_done={}",
                            p.len(),
                            dec.is_done()
                        );
                        if dec.is_done() {
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = e.to_string();
                        break;
                    }
                }
            }
        }
    }
    read_like_checks(head.status, &buf[head.start..head.len], &body);
}

/// What checks, extraction and the cookie jar read from a response.
pub(crate) fn read_like_checks(status: u16, head: &[u8], body: &[u8]) {
    let view = ResponseView::new(status, head, body);
    let mut jar = CookieJar::default();
    jar.absorb(0, &view);
    let mut out = Vec::new();
    jar.write_header(0, &mut out);
    let _ = view.header("content-type");
    let _ = view.headers("set-cookie").count();
    let _ = view.json();
}

/// A loopback server that answers each connection with the next bytes it is given,
/// then closes; one per worker thread.
struct LoopServer {
    addr: SocketAddr,
    next: mpsc::Sender<Vec<u8>>,
}

impl LoopServer {
    fn start() -> LoopServer {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind loopback fuzz server");
        let addr = l.local_addr().expect("local address");
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        std::thread::Builder::new()
            .name("fuzz-http-server".into())
            .spawn(move || {
                for bytes in rx {
                    let Ok((mut s, _)) = l.accept() else { continue };
                    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
                    // No TIME_WAIT left behind: tens of thousands of connections a run.
                    let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
                    let mut req = Vec::new();
                    let mut b = [0u8; 1024];
                    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut b) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => req.extend_from_slice(&b[..n]),
                        }
                    }
                    let _ = s.write_all(&bytes);
                    let _ = s.shutdown(Shutdown::Write);
                    // Until the client closes, so it reads everything before the reset.
                    while let Ok(n) = s.read(&mut b) {
                        if n == 0 {
                            break;
                        }
                    }
                }
            })
            .expect("spawn loopback fuzz server");
        LoopServer { addr, next: tx }
    }
}

fn loopback(data: &[u8], is_head: bool) {
    let (addr, sent) = SERVER.with(|s| (s.addr, s.next.send(data.to_vec()).is_ok()));
    assert!(sent, "loopback fuzz server is gone");
    let origin = Origin {
        label: format!("http://{addr}"),
        host: addr.ip().to_string(),
        port: addr.port(),
        addrs: vec![addr],
        names: None,
        proxy: None,
        tls: None,
        protocol: pado_http::Protocol::Http1,
        h2_tls: None,
    };
    let request: &[u8] = if is_head {
        b"HEAD /fuzz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    } else {
        b"GET /fuzz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    };
    let mut body = Vec::new();
    let mut head = Vec::new();
    let mut slot = None;
    let ex = block_on(exchange(
        &mut slot,
        &origin,
        RequestRef {
            bytes: request,
            is_head,
            // One connection per input: the server answers each connection once.
            resend_safe: false,
            timeout: Duration::from_secs(3),
            keep_body: Some((&mut body, BODY_CAP)),
            keep_head: Some((&mut head, true)),
            failed_prefix: None,
            decoder: None,
        },
    ));
    drop(slot);
    assert!(
        ex.error != Some(pado_metrics::ErrorKind::Timeout),
        "exchange timed out on a response the server sent whole and closed"
    );
    assert!(body.len() <= BODY_CAP, "kept body over its cap");
    read_like_checks(ex.status, &head, &body);
}

// ---- exposition --------------------------------------------------------------------

/// The scraper's parser, then what the scraper does with its samples: written to
/// `observe.jsonl` (twice, the second only changes) and read back as reports do.
/// What pado writes, pado must read.
pub fn exposition(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let e = pado_observe::exposition::parse(&text);
    assert!(
        e.samples.len() + e.bad_lines as usize <= text.lines().count(),
        "more samples and bad lines than lines"
    );
    if let Some(first) = &e.first_bad {
        assert!(first.len() < 1024, "first_bad detail is not bounded");
    }
    if e.samples.is_empty() {
        return;
    }
    with_scratch(|dir| {
        let mut w = ObserveWriter::create(dir).expect("create observe.jsonl");
        w.endpoint("app", "http://127.0.0.1/metrics", 1.0)
            .expect("write endpoint");
        for t in [0.0, 1.0] {
            w.scrape(
                "app",
                ScrapeOutcome {
                    t,
                    ms: 1.0,
                    error: None,
                    samples: e.samples.clone(),
                    bad_lines: e.bad_lines,
                },
            )
            .expect("write scrape");
        }
        w.flush().expect("flush observe.jsonl");
        drop(w);
        let obs = pado_metrics::read_observations(dir, &|_| true)
            .unwrap_or_else(|err| panic!("observe.jsonl written by pado is unreadable: {err}"));
        assert_eq!(obs.endpoints.len(), 1);
        assert_eq!(obs.endpoints[0].scrapes, 2);
    });
}

// ---- result directory --------------------------------------------------------------

pub(crate) const RUN_JSON: &[u8] = include_bytes!("../../data/result/run.json");
pub(crate) const TIMELINE: &[u8] = include_bytes!("../../data/result/timeline.jsonl");
pub(crate) const OBSERVE: &[u8] = include_bytes!("../../data/result/observe.jsonl");
pub(crate) const EVENTS: &[u8] = include_bytes!("../../data/result/events.jsonl");

/// `timeline.jsonl` replaced by the input, beside a valid `run.json` and
/// `observe.jsonl`.
pub fn result_timeline(data: &[u8]) {
    result_dir(RUN_JSON, data, OBSERVE, EVENTS);
}

/// `run.json` replaced by the input.
pub fn result_run(data: &[u8]) {
    result_dir(data, TIMELINE, OBSERVE, EVENTS);
}

/// `events.jsonl` replaced by the input: each event's impact and expectations are
/// judged from it by the report.
pub fn result_events(data: &[u8]) {
    result_dir(RUN_JSON, TIMELINE, OBSERVE, data);
    with_scratch(|dir| {
        let _ = pado_metrics::events::read_events(dir);
    });
}

/// `observe.jsonl` replaced by the input.
pub fn result_observe(data: &[u8]) {
    result_dir(RUN_JSON, TIMELINE, data, EVENTS);
    with_scratch(|dir| {
        let _ = pado_metrics::read_observations(dir, &|_| true);
    });
}

/// A result directory with these four files, read as `pado report` reads it:
/// load, summary, summary.json, text, HTML, CSV and JUnit.
fn result_dir(run: &[u8], timeline: &[u8], observe: &[u8], events: &[u8]) {
    with_scratch(|dir| {
        for (name, bytes) in [
            ("run.json", run),
            ("timeline.jsonl", timeline),
            ("observe.jsonl", observe),
            ("events.jsonl", events),
        ] {
            std::fs::write(dir.join(name), bytes).expect("write scratch result file");
        }
        let d = match ResultDir::open(dir) {
            Ok(d) => d,
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        };
        let run = match pado_report::load(&d) {
            Ok(r) => r,
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        };
        let summary = match pado_report::build(&run) {
            Ok(s) => s,
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        };
        let _ = d.write_json(pado_metrics::result_dir::SUMMARY_FILE, &summary);
        let _ = pado_report::render(&summary, pado_report::TextOptions { color: false });
        let _ = pado_report::html::render_html(&run, &summary);
        let _ = pado_report::csv_export::timeline_csv(&run);
        let _ = pado_report::junit::junit_xml(&summary);
    });
}

// ---- h1server ----------------------------------------------------------------------

/// The request reader of pado's own servers: the bytes are what a client sent on one
/// connection (then closed); requests are read until the reader stops.
pub fn h1server_request(data: &[u8]) {
    use tokio::io::AsyncWriteExt;
    block_on(async {
        let (mut client, mut server) = tokio::io::duplex(data.len() + 64 * 1024);
        client.write_all(data).await.expect("write to duplex");
        drop(client);
        let mut buf = Vec::new();
        for _ in 0..10_000 {
            match pado_h1server::read_request(&mut server, &mut buf, pado_h1server::MAX_BODY).await
            {
                Ok(Some(req)) => {
                    let _ = req.header("content-type");
                    let _ = req.query_param("q");
                    let _ = req.is_head();
                    if !req.keep_alive {
                        break;
                    }
                }
                Ok(None) | Err(_) => break,
            }
        }
    });
}
