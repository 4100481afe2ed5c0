//! Prometheus text exposition (format 0.0.4) with the metric names a Spring
//! Boot service exports through Micrometer, so that what pado learns to read
//! from the demo service carries over to real services.
//!
//! * [`HttpMetrics`] is the `http_server_requests_seconds` histogram. Its
//!   counts are exact: a request is recorded before its response is written,
//!   so a client that has read a response and then scrapes sees it counted.
//! * [`CpuSampler`] turns `/proc` tick counters into usage gauges once a
//!   second (`process_cpu_usage` like Micrometer's: a fraction of all
//!   available cores).
//! * [`ProcessResources`] reads the process's memory and file descriptors
//!   (`process_resident_memory_bytes`, `process_open_fds`, … as Prometheus
//!   client libraries name them) when `/metrics` is scraped.
//! * [`Text`] writes families and samples.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Histogram bucket upper bounds, in seconds.
pub(crate) const BUCKETS: [f64; 15] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Label values of one `http_server_requests_seconds` series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct SeriesKey {
    pub method: &'static str,
    pub uri: &'static str,
    pub status: u16,
}

#[derive(Clone, Debug, Default)]
struct Series {
    /// Non-cumulative counts per bucket; the last slot is `+Inf` only.
    buckets: [u64; BUCKETS.len() + 1],
    count: u64,
    sum: f64,
    max: f64,
}

/// The request timer; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct HttpMetrics {
    series: Mutex<HashMap<SeriesKey, Series>>,
}

impl HttpMetrics {
    /// Records one finished request.
    pub(crate) fn record(&self, key: SeriesKey, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        let slot = BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(BUCKETS.len());
        let mut map = pado_base::lock(&self.series);
        let s = map.entry(key).or_default();
        s.buckets[slot] += 1;
        s.count += 1;
        s.sum += secs;
        if secs > s.max {
            s.max = secs;
        }
    }

    /// Total requests recorded.
    pub(crate) fn total(&self) -> u64 {
        let map = pado_base::lock(&self.series);
        map.values().map(|s| s.count).sum()
    }

    /// Writes the histogram (and its `_max` gauge) families.
    pub(crate) fn render(&self, out: &mut Text) {
        let mut series: Vec<(SeriesKey, Series)> = {
            let map = pado_base::lock(&self.series);
            map.iter().map(|(k, v)| (*k, v.clone())).collect()
        };
        series.sort_by_key(|(k, _)| *k);
        let name = "http_server_requests_seconds";
        out.family(
            name,
            "Duration of HTTP server requests (API routes; management endpoints are not counted)",
            "histogram",
        );
        for (k, s) in &series {
            let status = k.status.to_string();
            let base = [
                ("method", k.method),
                ("uri", k.uri),
                ("status", status.as_str()),
                ("outcome", outcome(k.status)),
            ];
            let mut cumulative = 0;
            for (i, upper) in BUCKETS.iter().enumerate() {
                cumulative += s.buckets[i];
                let le = format_value(*upper);
                let mut labels = base.to_vec();
                labels.push(("le", le.as_str()));
                out.sample(
                    "http_server_requests_seconds_bucket",
                    &labels,
                    cumulative as f64,
                );
            }
            let mut labels = base.to_vec();
            labels.push(("le", "+Inf"));
            out.sample(
                "http_server_requests_seconds_bucket",
                &labels,
                s.count as f64,
            );
            out.sample("http_server_requests_seconds_count", &base, s.count as f64);
            out.sample("http_server_requests_seconds_sum", &base, s.sum);
        }
        out.family(
            "http_server_requests_seconds_max",
            "Longest HTTP server request since start",
            "gauge",
        );
        for (k, s) in &series {
            let status = k.status.to_string();
            out.sample(
                "http_server_requests_seconds_max",
                &[
                    ("method", k.method),
                    ("uri", k.uri),
                    ("status", status.as_str()),
                    ("outcome", outcome(k.status)),
                ],
                s.max,
            );
        }
    }
}

/// Spring's `outcome` tag.
fn outcome(status: u16) -> &'static str {
    match status {
        100..=199 => "INFORMATIONAL",
        200..=299 => "SUCCESS",
        300..=399 => "REDIRECTION",
        400..=499 => "CLIENT_ERROR",
        500..=599 => "SERVER_ERROR",
        _ => "UNKNOWN",
    }
}

/// Formats a sample value: integers without a fraction, `+Inf`/`-Inf`/`NaN`.
pub(crate) fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// An exposition being written.
#[derive(Debug, Default)]
pub(crate) struct Text {
    pub out: String,
}

impl Text {
    /// `# HELP` and `# TYPE` lines of a family.
    pub(crate) fn family(&mut self, name: &str, help: &str, kind: &str) {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// One sample line.
    pub(crate) fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(k);
                self.out.push_str("=\"");
                for c in v.chars() {
                    match c {
                        '\\' => self.out.push_str("\\\\"),
                        '"' => self.out.push_str("\\\""),
                        '\n' => self.out.push_str("\\n"),
                        c => self.out.push(c),
                    }
                }
                self.out.push('"');
            }
            self.out.push('}');
        }
        self.out.push(' ');
        self.out.push_str(&format_value(value));
        self.out.push('\n');
    }

    /// A family with a single unlabelled sample.
    pub(crate) fn single(&mut self, name: &str, help: &str, kind: &str, value: f64) {
        self.family(name, help, kind);
        self.sample(name, &[], value);
    }
}

/// The latest CPU usage figures.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CpuUsage {
    /// Whole process, fraction of all available cores (0..=1).
    pub process: f64,
    /// Whole machine, fraction (0..=1); `None` without `/proc/stat`.
    pub system: Option<f64>,
    /// Only the service's own threads (when it runs its own runtime).
    pub own_threads: Option<f64>,
    /// Process CPU seconds since start of the process.
    pub process_seconds: f64,
}

#[derive(Debug)]
struct SamplerState {
    at: Instant,
    process_ticks: Option<u64>,
    system: Option<(u64, u64)>,
    threads: HashMap<u32, u64>,
    usage: CpuUsage,
}

/// Samples `/proc` once a second; see the module docs.
#[derive(Debug)]
pub(crate) struct CpuSampler {
    state: Mutex<SamplerState>,
    thread_prefix: Option<&'static str>,
    ticks_per_second: f64,
    cpus: f64,
}

impl CpuSampler {
    /// A sampler; `thread_prefix` names the service's own threads (their
    /// `comm` starts with it) when it runs on its own runtime.
    pub(crate) fn new(thread_prefix: Option<&'static str>) -> CpuSampler {
        let ticks = clock_ticks();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let sampler = CpuSampler {
            state: Mutex::new(SamplerState {
                at: Instant::now(),
                process_ticks: None,
                system: None,
                threads: HashMap::new(),
                usage: CpuUsage {
                    own_threads: thread_prefix.map(|_| 0.0),
                    ..CpuUsage::default()
                },
            }),
            thread_prefix,
            ticks_per_second: ticks,
            cpus,
        };
        sampler.sample();
        sampler
    }

    /// Number of cores usage is relative to.
    pub(crate) fn cpus(&self) -> f64 {
        self.cpus
    }

    /// Takes a sample and updates the usage figures from the deltas since
    /// the previous one.
    pub(crate) fn sample(&self) {
        let now = Instant::now();
        let proc_ticks = read_process_ticks();
        let system = read_system_ticks();
        let threads = self.thread_prefix.map(read_thread_ticks);
        let mut st = pado_base::lock(&self.state);
        let wall = now.duration_since(st.at).as_secs_f64();
        if wall < 0.05 && st.process_ticks.is_some() {
            // Too short to measure: keep the older baseline.
            return;
        }
        {
            let capacity = wall * self.cpus * self.ticks_per_second;
            if let (Some(prev), Some(cur), true) = (st.process_ticks, proc_ticks, wall > 0.0) {
                st.usage.process = (cur.saturating_sub(prev) as f64 / capacity).clamp(0.0, 1.0);
            }
            if let (Some((pb, pt)), Some((cb, ct))) = (st.system, system) {
                let total = ct.saturating_sub(pt);
                if total > 0 {
                    st.usage.system =
                        Some((cb.saturating_sub(pb) as f64 / total as f64).clamp(0.0, 1.0));
                }
            }
            if let Some(threads) = &threads {
                let used: u64 = threads
                    .iter()
                    .map(|(tid, t)| t.saturating_sub(st.threads.get(tid).copied().unwrap_or(0)))
                    .sum();
                if wall > 0.0 && !st.threads.is_empty() {
                    st.usage.own_threads = Some((used as f64 / capacity).clamp(0.0, 1.0));
                }
            }
        }
        if let Some(t) = proc_ticks {
            st.usage.process_seconds = t as f64 / self.ticks_per_second;
        }
        st.at = now;
        st.process_ticks = proc_ticks;
        st.system = system;
        if let Some(threads) = threads {
            st.threads = threads;
        }
    }

    /// The latest figures.
    pub(crate) fn usage(&self) -> CpuUsage {
        pado_base::lock(&self.state).usage
    }
}

fn clock_ticks() -> f64 {
    #[cfg(unix)]
    {
        // SAFETY: sysconf has no memory-safety preconditions.
        let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if t > 0 {
            return t as f64;
        }
    }
    100.0
}

/// utime + stime from a `/proc/.../stat` line (fields 14 and 15; the
/// command name in parentheses may contain spaces, so count after `)`).
fn stat_ticks(stat: &str) -> Option<(String, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let mut fields = stat.get(close + 1..)?.split_whitespace();
    // After ")": state is field 3, so utime (14) is the 12th and stime the 13th.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((comm, utime + stime))
}

fn read_process_ticks() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    stat_ticks(&s).map(|(_, t)| t)
}

/// (busy, total) jiffies of the whole machine from `/proc/stat`.
fn read_system_ticks() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 4 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest is inside user).
    let total: u64 = v.iter().take(8).sum();
    let idle = v[3] + v.get(4).copied().unwrap_or(0);
    Some((total.saturating_sub(idle), total))
}

fn read_thread_ticks(prefix: &'static str) -> HashMap<u32, u64> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(tid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(s) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some((comm, ticks)) = stat_ticks(&s) {
            if comm.starts_with(prefix) {
                out.insert(tid, ticks);
            }
        }
    }
    out
}

/// The process's memory and file descriptors, read from `/proc/self` and
/// `getrlimit`; a figure that cannot be read is `None` (and not exported).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ProcessResources {
    /// Resident memory, bytes (`/proc/self/statm`'s second field × page size).
    pub resident_bytes: Option<u64>,
    /// Virtual memory, bytes (`/proc/self/statm`'s first field × page size).
    pub virtual_bytes: Option<u64>,
    /// Open file descriptors (entries of `/proc/self/fd`).
    pub open_fds: Option<u64>,
    /// The soft limit on open file descriptors (`RLIMIT_NOFILE`).
    pub max_fds: Option<u64>,
}

impl ProcessResources {
    /// Reads them now.
    pub(crate) fn read() -> ProcessResources {
        let (virtual_bytes, resident_bytes) = match std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| statm_pages(&s))
        {
            Some((v, r)) => {
                let page = page_size();
                (Some(v * page), Some(r * page))
            }
            None => (None, None),
        };
        let open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as u64);
        ProcessResources {
            resident_bytes,
            virtual_bytes,
            open_fds,
            max_fds: max_fds(),
        }
    }
}

/// (size, resident) in pages from a `/proc/self/statm` line.
fn statm_pages(statm: &str) -> Option<(u64, u64)> {
    let mut f = statm.split_whitespace();
    let size = f.next()?.parse().ok()?;
    let resident = f.next()?.parse().ok()?;
    Some((size, resident))
}

fn page_size() -> u64 {
    #[cfg(unix)]
    {
        // SAFETY: sysconf has no memory-safety preconditions.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p > 0 {
            return p as u64;
        }
    }
    4096
}

fn max_fds() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `lim` is a valid, writable rlimit for the duration of the call.
        let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
        if rc == 0 && lim.rlim_cur != libc::RLIM_INFINITY {
            // `rlim_t` is not `u64` on every platform.
            #[allow(clippy::unnecessary_cast)]
            return Some(lim.rlim_cur as u64);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_resources_are_read() {
        assert_eq!(statm_pages("2500 300 100 1 0 200 0\n"), Some((2500, 300)));
        assert_eq!(statm_pages("x"), None);
        if std::path::Path::new("/proc/self/statm").exists() {
            let before = ProcessResources::read();
            let rss0 = before.resident_bytes.unwrap();
            assert!(rss0 > 0 && before.virtual_bytes.unwrap() >= rss0);
            // 64 MiB written: resident memory grows by about that much.
            let block = std::hint::black_box(vec![1u8; 64 << 20]);
            let rss1 = ProcessResources::read().resident_bytes.unwrap();
            assert!(rss1 >= rss0 + (48 << 20), "{rss0} -> {rss1}");
            drop(block);
            // 50 files opened (other tests may open or close a few meanwhile).
            let fds = ProcessResources::read().open_fds.unwrap();
            let files: Vec<_> = (0..50)
                .map(|_| std::fs::File::open("/proc/self/statm").unwrap())
                .collect();
            let more = ProcessResources::read().open_fds.unwrap() - fds;
            assert!((45..=60).contains(&more), "{more}");
            drop(files);
            assert!(before.max_fds.unwrap_or(u64::MAX) >= fds);
        }
    }

    #[test]
    fn parses_stat_with_spaces_in_comm() {
        let line = "1234 (my (odd) name) S 1 2 3 4 5 6 7 8 9 10 111 222 0 0 20 0 1 0";
        assert_eq!(stat_ticks(line), Some(("my (odd) name".to_string(), 333)));
    }

    #[test]
    fn values_and_labels_are_formatted() {
        assert_eq!(format_value(3.0), "3");
        assert_eq!(format_value(0.25), "0.25");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        let mut t = Text::default();
        t.sample("x", &[("a", "q\"\\\n")], 1.5);
        assert_eq!(t.out, "x{a=\"q\\\"\\\\\\n\"} 1.5\n");
    }

    #[test]
    fn histogram_is_cumulative_and_exact() {
        let m = HttpMetrics::default();
        let key = SeriesKey {
            method: "GET",
            uri: "/api/posts/{id}",
            status: 200,
        };
        m.record(key, Duration::from_micros(500));
        m.record(key, Duration::from_millis(7));
        m.record(key, Duration::from_secs(100));
        assert_eq!(m.total(), 3);
        let mut t = Text::default();
        m.render(&mut t);
        assert!(t.out.contains(
            "http_server_requests_seconds_bucket{method=\"GET\",uri=\"/api/posts/{id}\",status=\"200\",outcome=\"SUCCESS\",le=\"0.001\"} 1\n"
        ));
        assert!(t.out.contains("le=\"0.01\"} 2\n"));
        assert!(t.out.contains("le=\"60\"} 2\n"));
        assert!(t.out.contains("le=\"+Inf\"} 3\n"));
        assert!(t.out.contains("http_server_requests_seconds_count{method=\"GET\",uri=\"/api/posts/{id}\",status=\"200\",outcome=\"SUCCESS\"} 3\n"));
    }

    #[test]
    fn sampler_reads_proc() {
        let s = CpuSampler::new(None);
        // At least a few clock ticks of CPU, so the process has some to report.
        crate::capacity::burn(Duration::from_millis(40), 1.0);
        std::thread::sleep(Duration::from_millis(20));
        s.sample();
        let u = s.usage();
        assert!((0.0..=1.0).contains(&u.process));
        assert_eq!(u.own_threads, None);
        if cfg!(target_os = "linux") {
            assert!(u.process_seconds > 0.0);
        }
        // Our own thread, named: its spinning shows up.
        // The truth is the thread's own CPU clock over the same span, as a share of
        // the machine: on a busy machine the spinning thread gets less than a core,
        // and the sampler must say so, not a fixed figure.
        fn thread_cpu_s() -> f64 {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_gettime writes into the timespec we own.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
        }
        let h = std::thread::Builder::new()
            .name("sampler-test".into())
            .spawn(|| {
                let (w0, c0) = (Instant::now(), thread_cpu_s());
                let s = CpuSampler::new(Some("sampler-test"));
                crate::capacity::burn(Duration::from_millis(200), 1.0);
                s.sample();
                let truth = (thread_cpu_s() - c0) / w0.elapsed().as_secs_f64();
                (s.usage().own_threads, truth)
            })
            .unwrap();
        let (own, truth) = h.join().unwrap();
        let own = own.unwrap();
        if cfg!(target_os = "linux") {
            let truth = truth / s.cpus;
            assert!(own > 0.0, "{own}");
            // Clock ticks are 10 ms: 200 ms of CPU is read to about ±10%.
            assert!(
                (own - truth).abs() <= 0.03 + 0.15 * truth,
                "sampler {own}, truth {truth}"
            );
        }
    }
}
