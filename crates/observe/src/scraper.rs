//! The scrape loop: one thread of its own (never a load worker's), one
//! current-thread runtime, each endpoint on a schedule of its own at
//! `t0 + k·interval` so the points line up with the load's seconds. An endpoint
//! still answering when its next tick comes skips the ticks it missed; the others
//! never wait for it (one slow exporter does not thin out everyone's points). It
//! uses pado's own HTTP/1.1 client (TLS included) with a keep-alive connection per
//! endpoint. Whatever goes wrong (refused, timeout, a 5xx, garbage, a body too
//! large) is one failed scrape, recorded with its category; the loop goes on.
//!
//! A scrape is recorded with when its request was sent (`t`) and how long the
//! answer took (`ms`); readers place its values at `t + ms`, when the answer
//! arrived (see `pado_results::read_observations`, which reads what a run's sink,
//! `pado_results::ObserveWriter`, wrote), so a late answer does not
//! inflate the rate of a counter.

use std::cell::RefCell;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pado_http::{exchange, tls_client_config, Conn, Origin, RequestRef};
use pado_metrics::{ScrapeOutcome, ScrapeSink};
use tokio::sync::watch;

use crate::exposition;

/// What Prometheus itself sends: OpenMetrics preferred, the text format accepted.
const ACCEPT: &str =
    "application/openmetrics-text;version=1.0.0;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// Largest exposition read (a node_exporter page is ~100 KiB; a 64 MiB page is a
/// misbehaving endpoint, counted as `too_large`).
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// One endpoint to scrape.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// Short name used in reports.
    pub name: String,
    /// Full URL.
    pub url: url::Url,
    /// Extra request headers (e.g. `Authorization`), already resolved. Never
    /// written anywhere.
    pub headers: Vec<(String, String)>,
    /// What results show instead of `url`, when the URL holds values from the
    /// environment (a relative endpoint on a `target: http://{{ env.HOST }}`).
    pub shown: Option<String>,
}

impl Endpoint {
    /// The URL as stored in the result: without user name or password.
    pub fn public_url(&self) -> String {
        if let Some(s) = &self.shown {
            return s.clone();
        }
        let mut u = self.url.clone();
        let _ = u.set_username("");
        let _ = u.set_password(None);
        u.to_string()
    }
}

/// What and how often to scrape.
#[derive(Clone, Debug)]
pub struct ObserveConfig {
    /// Endpoints.
    pub endpoints: Vec<Endpoint>,
    /// Time between scrapes.
    pub interval: Duration,
    /// Deadline of one scrape (connection included).
    pub timeout: Duration,
    /// Accept certificates that do not verify (test systems).
    pub insecure: bool,
}

/// How the scraping went, for the CLI's closing line.
#[derive(Clone, Debug, Default)]
pub struct ScrapeTally {
    /// Scrapes attempted.
    pub scrapes: u64,
    /// Scrapes that failed.
    pub failed: u64,
    /// Problems writing `observe.jsonl` (the run goes on without it).
    pub write_error: Option<String>,
}

/// A running scrape loop.
pub struct Scraper {
    /// Set to true to take each endpoint's last scrape and end.
    stop: watch::Sender<bool>,
    join: JoinHandle<ScrapeTally>,
}

impl Scraper {
    /// Start scraping: first at `t0` (second 0 of the run), then every interval,
    /// until [`Scraper::finish`], which takes one last scrape so counters cover
    /// the whole run. Every outcome goes to `writer` (a run's `observe.jsonl`).
    pub fn start<W: ScrapeSink>(
        cfg: ObserveConfig,
        t0: Instant,
        mut writer: W,
    ) -> std::io::Result<Self> {
        let (stop, flag) = watch::channel(false);
        for e in &cfg.endpoints {
            // Declared before the thread starts so even a run that ends at once
            // lists its endpoints.
            let _ = writer.endpoint(&e.name, &e.public_url(), cfg.interval.as_secs_f64());
        }
        let join = std::thread::Builder::new()
            .name("pado-observe".into())
            .spawn(move || scrape_loop(cfg, t0, writer, flag))?;
        Ok(Scraper { stop, join })
    }

    /// Stop after one final scrape and return the tally.
    pub fn finish(self) -> ScrapeTally {
        self.stop.send_replace(true);
        self.join.join().unwrap_or_default()
    }
}

struct Target {
    endpoint: Endpoint,
    origin: Result<Origin, String>,
    request: Vec<u8>,
    conn: Option<Conn>,
    body: Vec<u8>,
}

fn scrape_loop<W: ScrapeSink>(
    cfg: ObserveConfig,
    t0: Instant,
    writer: W,
    stop: watch::Receiver<bool>,
) -> ScrapeTally {
    let mut tally = ScrapeTally::default();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tally.write_error = Some(format!("could not start the scrape runtime: {e}"));
            return tally;
        }
    };
    let tls = std::cell::OnceCell::new();
    let mut targets: Vec<Target> = cfg
        .endpoints
        .iter()
        .map(|e| Target {
            origin: Origin::for_url(&e.url, || {
                tls.get_or_init(|| tls_client_config(cfg.insecure)).clone()
            }),
            request: request_bytes(e),
            endpoint: e.clone(),
            conn: None,
            body: Vec::new(),
        })
        .collect();
    // One thread polls every endpoint's loop: the writer is borrowed only between
    // awaits, never across one.
    let sink = RefCell::new(Sink { writer, tally });
    rt.block_on(async {
        let loops = targets
            .iter_mut()
            .map(|t| endpoint_loop(t, &cfg, t0, stop.clone(), &sink));
        join_all(loops).await
    });
    let Sink { mut writer, tally } = sink.into_inner();
    let _ = writer.flush();
    tally
}

/// Where every endpoint's scrapes go.
struct Sink<W> {
    writer: W,
    tally: ScrapeTally,
}

impl<W: ScrapeSink> Sink<W> {
    fn record(&mut self, endpoint: &str, o: ScrapeOutcome) {
        self.tally.scrapes += 1;
        if o.error.is_some() {
            self.tally.failed += 1;
        }
        if let Err(e) = self.writer.scrape(endpoint, o) {
            self.tally.write_error.get_or_insert(e.to_string());
        }
    }
}

/// One endpoint's schedule: a scrape at each `t0 + k·interval` it is free for,
/// then one last when asked to stop.
async fn endpoint_loop<W: ScrapeSink>(
    t: &mut Target,
    cfg: &ObserveConfig,
    t0: Instant,
    mut stop: watch::Receiver<bool>,
    sink: &RefCell<Sink<W>>,
) {
    let mut k: u32 = 0;
    loop {
        let last = wait_until(t0 + cfg.interval * k, &mut stop).await;
        let outcome = scrape_one(t, t0, cfg.timeout).await;
        sink.borrow_mut().record(&t.endpoint.name, outcome);
        if last {
            return;
        }
        // Skip this endpoint's ticks missed while its scrape ran rather than
        // bursting to catch up.
        let now = Instant::now();
        k += 1;
        while t0 + cfg.interval * k < now {
            k += 1;
        }
    }
}

/// Sleep until `due` or until asked to stop; true when stopping (take the last
/// scrape now).
async fn wait_until(due: Instant, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow() {
        return true;
    }
    let stopped = tokio::select! {
        _ = tokio::time::sleep_until(due.into()) => false,
        // Stopping, or the `Scraper` is gone: either way this is the last.
        _ = stop.wait_for(|s| *s) => true,
    };
    stopped || *stop.borrow()
}

/// Poll futures of the same type together on the current thread.
async fn join_all<F: std::future::Future>(futs: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut set: Vec<std::pin::Pin<Box<F>>> = futs.map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = (0..set.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in set.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

fn request_bytes(e: &Endpoint) -> Vec<u8> {
    let mut path = e.url.path().to_string();
    if let Some(q) = e.url.query() {
        path.push('?');
        path.push_str(q);
    }
    let host = match e.url.port() {
        Some(p) => format!("{}:{p}", e.url.host_str().unwrap_or("")),
        None => e.url.host_str().unwrap_or("").to_string(),
    };
    let mut r = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: {ACCEPT}\r\nUser-Agent: pado/{} (observe)\r\n",
        env!("CARGO_PKG_VERSION")
    );
    for (k, v) in &e.headers {
        r.push_str(k);
        r.push_str(": ");
        r.push_str(v);
        r.push_str("\r\n");
    }
    r.push_str("\r\n");
    r.into_bytes()
}

async fn scrape_one(t: &mut Target, t0: Instant, timeout: Duration) -> ScrapeOutcome {
    let start = Instant::now();
    let at = if start >= t0 {
        (start - t0).as_secs_f64()
    } else {
        -(t0 - start).as_secs_f64()
    };
    let mut out = ScrapeOutcome {
        t: at,
        ..Default::default()
    };
    let origin = match &t.origin {
        Ok(o) => o,
        Err(e) => {
            out.error = Some(("config".into(), e.clone()));
            return out;
        }
    };
    t.body.clear();
    let ex = exchange(
        &mut t.conn,
        origin,
        RequestRef {
            bytes: &t.request,
            is_head: false,
            resend_safe: true,
            timeout,
            keep_body: Some((&mut t.body, MAX_BODY)),
            keep_head: None,
            failed_prefix: None,
            decoder: None,
            sse: None,
        },
    )
    .await;
    out.ms = start.elapsed().as_secs_f64() * 1000.0;
    if let Some(kind) = ex.error {
        let what = kind.as_str();
        let detail = match what {
            "timeout" => format!("no complete answer within {} ms", timeout.as_millis()),
            "connect_refused" => format!("{} refused the connection", origin.label),
            _ => format!("{what} while scraping {}", origin.label),
        };
        out.error = Some((what.to_string(), detail));
        return out;
    }
    if ex.status != 200 {
        out.error = Some((
            format!("http_{}", ex.status),
            format!("{} answered {}", t.endpoint.public_url(), ex.status),
        ));
        return out;
    }
    if ex.bytes_received as usize > MAX_BODY || t.body.len() >= MAX_BODY {
        out.error = Some((
            "too_large".into(),
            format!("exposition larger than {} MiB", MAX_BODY >> 20),
        ));
        return out;
    }
    match exposition::read_body(&t.body) {
        Ok(parsed) => {
            out.bad_lines = parsed.bad_lines;
            out.samples = parsed.samples;
        }
        Err(e) => {
            if let exposition::BodyError::NoSamples { bad_lines, .. } = &e {
                out.bad_lines = *bad_lines;
            }
            out.error = Some(("parse".into(), e.to_string()));
        }
    }
    out
}
