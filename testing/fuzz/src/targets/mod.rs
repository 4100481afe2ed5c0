//! The targets: each feeds one input to a real parser entry point of pado, the way
//! pado itself reaches it, and checks the invariants its callers rely on.
//!
//! Each module is one family of inputs; the crate's features choose which are built
//! (all by default), so a fuzz build of one family compiles only what it needs:
//! `engine` (scenario, HTTP/1.1 response, WebSocket), `report` (result files),
//! `observe` (exposition), `fleet` (merge, live loop, bundles); the HTTP/2 and gRPC
//! clients and the h1server reader are always built.

use std::future::Future;
#[cfg(any(
    feature = "engine",
    feature = "observe",
    feature = "report",
    feature = "fleet"
))]
use std::path::{Path, PathBuf};

use crate::{corpus_files, Target};

#[cfg(feature = "fleet")]
mod bundle;
#[cfg(feature = "observe")]
mod exposition;
mod h1server;
mod h2;
#[cfg(feature = "engine")]
mod http1;
#[cfg(feature = "fleet")]
mod live;
#[cfg(feature = "fleet")]
mod merge;
mod replay;
#[cfg(feature = "report")]
mod result;
#[cfg(feature = "engine")]
mod scenario;
#[cfg(feature = "engine")]
mod websocket;

#[cfg(feature = "fleet")]
pub use bundle::bundle;
#[cfg(feature = "observe")]
pub use exposition::exposition;
pub use h1server::h1server_request;
pub use h2::{grpc_response, h2_response};
#[cfg(feature = "engine")]
pub use http1::http_response;
#[cfg(feature = "fleet")]
pub use live::live;
#[cfg(feature = "fleet")]
pub use merge::merge;
#[cfg(feature = "report")]
pub use result::{result_events, result_observe, result_run, result_timeline};
#[cfg(feature = "engine")]
pub use scenario::scenario;
#[cfg(feature = "engine")]
pub use websocket::websocket;

/// Every target.
pub static ALL: &[Target] = &[
    #[cfg(feature = "engine")]
    Target {
        name: "scenario",
        about: "scenario loader: load::parse_str (lossy UTF-8), load_file (raw bytes), validate",
        run: scenario,
        seeds: scenario::scenario_seeds,
        dict: scenario::SCENARIO_DICT,
        max_len: 16 * 1024,
    },
    #[cfg(feature = "engine")]
    Target {
        name: "http_response",
        about: "HTTP/1.1 response head and body framing: parse_head + ChunkedDecoder in pieces, \
                and the client's exchange() over loopback TCP; cookies and header view",
        run: http_response,
        seeds: || corpus_files("http_response", &[]),
        dict: HTTP_DICT,
        max_len: 16 * 1024,
    },
    #[cfg(feature = "observe")]
    Target {
        name: "exposition",
        about: "Prometheus text / OpenMetrics parser, then observe.jsonl written and read back",
        run: exposition,
        seeds: || corpus_files("exposition", &[]),
        dict: exposition::EXPOSITION_DICT,
        max_len: 16 * 1024,
    },
    #[cfg(feature = "report")]
    Target {
        name: "result_timeline",
        about:
            "timeline.jsonl of a result directory through `pado report`'s load, build and renderers",
        run: result_timeline,
        seeds: || corpus_files("result_timeline", &[]),
        dict: result::RESULT_DICT,
        max_len: 32 * 1024,
    },
    #[cfg(feature = "report")]
    Target {
        name: "result_run",
        about: "run.json of a result directory through `pado report`'s load, build and renderers",
        run: result_run,
        seeds: || corpus_files("result_run", &[]),
        dict: result::RESULT_DICT,
        max_len: 16 * 1024,
    },
    #[cfg(feature = "report")]
    Target {
        name: "result_observe",
        about: "observe.jsonl of a result directory: read_observations and `pado report`",
        run: result_observe,
        seeds: || corpus_files("result_observe", &[]),
        dict: result::RESULT_DICT,
        max_len: 16 * 1024,
    },
    #[cfg(feature = "report")]
    Target {
        name: "result_events",
        about: "events.jsonl of a result directory: read_events and `pado report` (impact, expectations)",
        run: result_events,
        seeds: || corpus_files("result_events", &[]),
        dict: result::RESULT_DICT,
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
    #[cfg(feature = "fleet")]
    Target {
        name: "merge",
        about: "pado merge of segment directories (run.json, timeline.jsonl, ...) from the input: \
                merge::plan and write_each, the merged length within the plan's bound",
        run: merge,
        seeds: merge::seeds,
        dict: merge::DICT,
        max_len: 64 * 1024,
    },
    #[cfg(feature = "fleet")]
    Target {
        name: "live",
        about: "the coordinator's live loop (coordinate::watch, LiveMerger::bounded) polling \
                generators whose feeds (and generator 0's scrapes) are the input's lines",
        run: live,
        seeds: live::seeds,
        dict: live::DICT,
        max_len: 32 * 1024,
    },
    #[cfg(feature = "fleet")]
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
    #[cfg(feature = "engine")]
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

pub(crate) const HTTP_DICT: &[&[u8]] = &[
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

// ---- shared helpers ----------------------------------------------------------------

thread_local! {
    pub(crate) static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    #[cfg(any(feature = "engine", feature = "observe", feature = "report", feature = "fleet"))]
    static SCRATCH: Scratch = Scratch::new();
}

pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
    RUNTIME.with(|rt| rt.block_on(f))
}

#[cfg(any(
    feature = "engine",
    feature = "observe",
    feature = "report",
    feature = "fleet"
))]
/// A directory of this thread's own, removed when the thread ends.
struct Scratch(PathBuf);

#[cfg(any(
    feature = "engine",
    feature = "observe",
    feature = "report",
    feature = "fleet"
))]
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

#[cfg(any(
    feature = "engine",
    feature = "observe",
    feature = "report",
    feature = "fleet"
))]
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(any(
    feature = "engine",
    feature = "observe",
    feature = "report",
    feature = "fleet"
))]
pub(crate) fn with_scratch<R>(f: impl FnOnce(&Path) -> R) -> R {
    SCRATCH.with(|s| f(&s.0))
}

/// The sample result directory (`data/result/`): the valid files beside the one a
/// target replaces, and the segments the merge and live targets start from.
#[cfg(any(feature = "report", feature = "fleet"))]
pub(crate) const RUN_JSON: &[u8] = include_bytes!("../../data/result/run.json");
#[cfg(any(feature = "report", feature = "fleet"))]
pub(crate) const TIMELINE: &[u8] = include_bytes!("../../data/result/timeline.jsonl");
#[cfg(any(feature = "report", feature = "fleet"))]
pub(crate) const OBSERVE: &[u8] = include_bytes!("../../data/result/observe.jsonl");
#[cfg(any(feature = "report", feature = "fleet"))]
pub(crate) const EVENTS: &[u8] = include_bytes!("../../data/result/events.jsonl");
