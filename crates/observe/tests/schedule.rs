//! The scrape loop against planted endpoints whose delays and counters the test
//! sets: each endpoint keeps its own schedule however slow another one is, a late
//! answer does not make a counter rise faster than it did, and bodies that are no
//! exposition (compressed, with a byte-order mark) or are one without samples are
//! recorded as what they are.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pado_observe::{Endpoint, ObserveConfig, Scraper};
use pado_results::{read_observations, ObserveWriter};

/// A loopback HTTP/1.1 server (keep-alive, as the scraper uses it) answering every
/// request with `answer(n)` for the n-th request (1-based), which may sleep first:
/// the delay and the body are the test's truth. Counts the requests it received.
struct Planted {
    url: String,
    hits: Arc<AtomicU64>,
}

impl Planted {
    fn start(answer: impl Fn(u64) -> Vec<u8> + Send + Sync + 'static) -> Planted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/metrics", listener.local_addr().unwrap());
        let hits = Arc::new(AtomicU64::new(0));
        let answer = Arc::new(answer);
        let counted = hits.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let (hits, answer) = (counted.clone(), answer.clone());
                std::thread::spawn(move || serve(conn, &hits, &*answer));
            }
        });
        Planted { url, hits }
    }

    fn hits(&self) -> u64 {
        self.hits.load(Ordering::SeqCst)
    }
}

fn serve(mut conn: TcpStream, hits: &AtomicU64, answer: &dyn Fn(u64) -> Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        // One request head (GETs carry no body).
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        buf.drain(..end);
        let n = hits.fetch_add(1, Ordering::SeqCst) + 1;
        let body = answer(n);
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        if conn.write_all(head.as_bytes()).is_err() || conn.write_all(&body).is_err() {
            return;
        }
    }
}

fn endpoint(name: &str, url: &str) -> Endpoint {
    Endpoint {
        name: name.into(),
        url: url::Url::parse(url).unwrap(),
        headers: Vec::new(),
        shown: None,
    }
}

fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("pado-observe-{name}-"))
        .tempdir()
        .unwrap()
}

/// Scrape `endpoints` every `interval` for `run`, then stop (bounded: the last
/// scrape waits at most `timeout`).
fn scrape_for(
    dir: &std::path::Path,
    endpoints: Vec<Endpoint>,
    interval: Duration,
    run: Duration,
) -> pado_observe::ScrapeTally {
    let cfg = ObserveConfig {
        endpoints,
        interval,
        timeout: Duration::from_secs(2),
        insecure: false,
    };
    let scraper = Scraper::start(cfg, Instant::now(), ObserveWriter::create(dir).unwrap()).unwrap();
    std::thread::sleep(run);
    scraper.finish()
}

/// One endpoint answers in 400 ms, more than the 250 ms interval; the other at
/// once. Scraped in one batch per tick, the fast one would be asked every other
/// tick (~6 times in 2.5 s); on its own schedule it is asked every tick (~11).
#[test]
fn a_slow_endpoint_does_not_thin_out_the_others_scrapes() {
    let fast = Planted::start(|_| b"up 1\n".to_vec());
    let slow = Planted::start(|_| {
        std::thread::sleep(Duration::from_millis(400));
        b"up 1\n".to_vec()
    });
    let dir = tmp("schedule");
    let interval = Duration::from_millis(250);
    let tally = scrape_for(
        dir.path(),
        vec![endpoint("fast", &fast.url), endpoint("slow", &slow.url)],
        interval,
        Duration::from_millis(2500),
    );
    assert!(tally.write_error.is_none(), "{:?}", tally.write_error);
    assert_eq!(tally.failed, 0);
    let obs = read_observations(dir.path(), &|_| true).unwrap();
    let log = |n: &str| obs.endpoints.iter().find(|e| e.name == n).unwrap().clone();
    // What pado recorded is what each server received.
    assert_eq!(log("fast").scrapes, fast.hits());
    assert_eq!(log("slow").scrapes, slow.hits());
    // Ticks at 0, 0.25, ..., 2.5 s and the last one: 11 or 12; allow a busy
    // machine two misses, never the half a shared batch gives.
    assert!(
        fast.hits() >= 9,
        "fast endpoint scraped {} times",
        fast.hits()
    );
    // The slow one is scraped as it can: every other tick.
    assert!(
        (4..=8).contains(&slow.hits()),
        "slow endpoint scraped {} times",
        slow.hits()
    );
    // The fast endpoint's points stay one interval apart.
    let up = obs.named("fast", "up").next().unwrap();
    let widest = up
        .points
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .fold(0.0, f64::max);
    assert!(
        widest < 0.4,
        "a gap of {widest:.3} s between the fast endpoint's points: {:?}",
        up.points
    );
}

/// A planted CPU-seconds counter rising exactly 1.0 per real second, read when the
/// server answers; every other answer comes 300 ms late. The rate between any two
/// stored points must stay at one core; stamped when the requests went out, a
/// late answer after a quick one reads (0.6 + 0.3) / 0.6 = 1.5 cores.
#[test]
fn a_late_answer_does_not_make_a_counter_rise_faster_than_it_did() {
    let epoch = Instant::now();
    let server = Planted::start(move |n| {
        if n % 2 == 0 {
            std::thread::sleep(Duration::from_millis(300));
        }
        let cpu = epoch.elapsed().as_secs_f64();
        format!("# TYPE process_cpu_seconds counter\nprocess_cpu_seconds_total {cpu:.6}\n")
            .into_bytes()
    });
    let dir = tmp("late");
    let tally = scrape_for(
        dir.path(),
        vec![endpoint("app", &server.url)],
        Duration::from_millis(600),
        Duration::from_millis(3000),
    );
    assert_eq!(tally.failed, 0);
    let obs = read_observations(dir.path(), &|_| true).unwrap();
    let cpu = obs
        .named("app", "process_cpu_seconds_total")
        .next()
        .unwrap();
    assert!(cpu.is_monotonic());
    assert!(cpu.points.len() >= 5, "{:?}", cpu.points);
    for w in cpu.points.windows(2) {
        let rate = (w[1].1 - w[0].1) / (w[1].0 - w[0].0);
        assert!(
            rate <= 1.08,
            "{rate:.3} cores between {:?} and {:?} of a counter rising 1.0/s: {:?}",
            w[0],
            w[1],
            cpu.points
        );
    }
    let (first, last) = (cpu.points[0], *cpu.points.last().unwrap());
    let mean = (last.1 - first.1) / (last.0 - first.0);
    assert!((mean - 1.0).abs() < 0.03, "mean rate {mean:.4}");
}

/// Each body as the scrape records it: pages without samples are good scrapes;
/// compressed bytes and a byte-order mark are failed ones that say why.
#[test]
fn bodies_without_samples_succeed_and_unreadable_ones_say_why() {
    let empty = Planted::start(|_| Vec::new());
    let eof = Planted::start(|_| b"# EOF\n".to_vec());
    let gzip = Planted::start(|_| {
        vec![
            0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xab, 0x50, 0x30, 0xe4,
            0x02, 0x00,
        ]
    });
    let bom = Planted::start(|_| "\u{feff}# TYPE jobs counter\njobs_total 1\n".into());
    let dir = tmp("bodies");
    scrape_for(
        dir.path(),
        vec![
            endpoint("empty", &empty.url),
            endpoint("eof", &eof.url),
            endpoint("gzip", &gzip.url),
            endpoint("bom", &bom.url),
        ],
        Duration::from_millis(100),
        Duration::from_millis(250),
    );
    let obs = read_observations(dir.path(), &|_| true).unwrap();
    let log = |n: &str| obs.endpoints.iter().find(|e| e.name == n).unwrap().clone();
    for name in ["empty", "eof"] {
        let e = log(name);
        assert!(e.scrapes >= 2, "{e:?}");
        assert_eq!(e.failed, 0, "{e:?}");
        assert_eq!(e.samples, 0, "{e:?}");
    }
    for (name, says) in [("gzip", "gzip-compressed"), ("bom", "byte-order mark")] {
        let e = log(name);
        assert!(e.scrapes >= 2, "{e:?}");
        assert_eq!(e.failed, e.scrapes, "{e:?}");
        assert_eq!(e.errors.keys().collect::<Vec<_>>(), ["parse"], "{e:?}");
        let detail = e.first_error.unwrap();
        assert!(detail.contains(says), "{name}: {detail}");
    }
}
