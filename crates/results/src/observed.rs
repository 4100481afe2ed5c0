//! The target's own metrics, as scraped during a run: `observe.jsonl` in the result
//! directory. Written while the run goes on (so an interrupted run keeps what was
//! scraped) and read back by the analysis and the reports, which never talk to the
//! target themselves.
//!
//! The file is JSON lines of four kinds (`"k"`):
//!
//! * `endpoint`: a scraped endpoint (name, URL without credentials, interval);
//! * `series`: the first sighting of a series, which gets a small integer id;
//! * `scrape`: one scrape: time since the run's second 0, duration, success, and
//!   the values that **changed** since that endpoint's previous scrape as
//!   `[id, value]` pairs, plus the ids of series that disappeared (`gone`).
//!   Exporters repeat thousands of constant series every scrape (sizes, info
//!   metrics, idle CPUs); storing changes only keeps a long run's file small;
//! * a failed scrape has `ok: false`, an error category and a detail, and no
//!   values: failures are recorded, never fatal.
//!
//! Values that JSON cannot hold (`NaN`, `±Inf`) are written as strings.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use pado_metrics::scrape::{MetricType, ScrapeOutcome, ScrapeSink};

use crate::result_dir::ResultError;

/// File name inside the result directory.
pub const OBSERVE_FILE: &str = "observe.jsonl";

/// Most distinct series kept per endpoint: an exporter with unbounded label values
/// must not turn into an unbounded file. Further series are counted, not stored.
pub const MAX_SERIES_PER_ENDPOINT: usize = 20_000;

/// A scrape value: finite numbers as JSON numbers, the rest as strings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Value(pub f64);

impl Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if v.is_finite() {
            s.serialize_f64(v)
        } else if v.is_nan() {
            s.serialize_str("NaN")
        } else if v > 0.0 {
            s.serialize_str("+Inf")
        } else {
            s.serialize_str("-Inf")
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(f64),
            S(String),
        }
        Ok(Value(match Raw::deserialize(d)? {
            Raw::N(v) => v,
            Raw::S(s) => match s.as_str() {
                "+Inf" | "Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                _ => f64::NAN,
            },
        }))
    }
}

/// One line of `observe.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "lowercase")]
pub enum ObserveLine {
    /// An endpoint, written before its first scrape.
    Endpoint {
        /// Short name used in reports (`app`, `node`, ...).
        endpoint: String,
        /// URL without credentials.
        url: String,
        /// Seconds between scrapes.
        interval_s: f64,
    },
    /// A series' first sighting.
    Series {
        /// Id used by scrape lines.
        id: u32,
        /// Endpoint name.
        endpoint: String,
        /// Sample name (`hikaricp_connections_active`, `node_cpu_seconds_total`).
        name: String,
        /// Labels, sorted by name.
        #[serde(default)]
        labels: BTreeMap<String, String>,
        /// Type of its family.
        #[serde(rename = "type", default)]
        kind: MetricType,
    },
    /// One scrape of one endpoint.
    Scrape {
        /// Endpoint name.
        endpoint: String,
        /// When the scrape's request was sent, seconds since the run's second 0
        /// (negative before it). Its values are placed at `t + ms / 1000`, when
        /// the answer arrived ([`answered_at`]).
        t: f64,
        /// How long it took, from sending the request to the whole answer, ms.
        ms: f64,
        /// Whether it produced samples.
        ok: bool,
        /// Error category when not ok (`connect_refused`, `timeout`, `http_503`,
        /// `parse`, `too_large`, ...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Human-readable detail of the error.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// Samples in the scrape.
        #[serde(default)]
        samples: u32,
        /// Lines that could not be parsed (the rest of the scrape is kept).
        #[serde(default, skip_serializing_if = "is_zero")]
        bad_lines: u32,
        /// Series beyond [`MAX_SERIES_PER_ENDPOINT`], not stored.
        #[serde(default, skip_serializing_if = "is_zero")]
        dropped: u32,
        /// Changed values: `[id, value]`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        v: Vec<(u32, Value)>,
        /// Series present in the previous scrape and absent from this one.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        gone: Vec<u32>,
    },
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Default)]
struct EndpointState {
    ids: HashMap<(String, Vec<(String, String)>), u32>,
    last: HashMap<u32, f64>,
    present: HashSet<u32>,
    series: usize,
}

/// Appends to `observe.jsonl`, assigning series ids and dropping unchanged values.
pub struct ObserveWriter {
    path: PathBuf,
    out: BufWriter<File>,
    endpoints: HashMap<String, EndpointState>,
    next_id: u32,
}

impl ObserveWriter {
    /// Create (truncate) `observe.jsonl` in `dir`.
    pub fn create(dir: &Path) -> Result<Self, ResultError> {
        let path = dir.join(OBSERVE_FILE);
        let f = File::create(&path).map_err(|source| ResultError::Io {
            path: path.clone(),
            source,
        })?;
        Ok(ObserveWriter {
            path,
            out: BufWriter::new(f),
            endpoints: HashMap::new(),
            next_id: 0,
        })
    }

    fn line(&mut self, l: &ObserveLine) -> Result<(), ResultError> {
        serde_json::to_writer(&mut self.out, l).map_err(|e| ResultError::Format {
            path: self.path.clone(),
            line: 0,
            message: e.to_string(),
        })?;
        self.out.write_all(b"\n").map_err(|source| ResultError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Declare an endpoint (once, before its scrapes).
    pub fn endpoint(&mut self, name: &str, url: &str, interval_s: f64) -> Result<(), ResultError> {
        self.endpoints.entry(name.to_string()).or_default();
        self.line(&ObserveLine::Endpoint {
            endpoint: name.to_string(),
            url: url.to_string(),
            interval_s,
        })
    }

    /// Record one scrape of `endpoint`; flushed at once so a crash loses nothing.
    pub fn scrape(&mut self, endpoint: &str, s: ScrapeOutcome) -> Result<(), ResultError> {
        if let Some((error, detail)) = s.error {
            self.line(&ObserveLine::Scrape {
                endpoint: endpoint.to_string(),
                t: s.t,
                ms: s.ms,
                ok: false,
                error: Some(error),
                detail: Some(detail),
                samples: 0,
                bad_lines: s.bad_lines,
                dropped: 0,
                v: Vec::new(),
                gone: Vec::new(),
            })?;
            return self.flush();
        }
        let mut new_series = Vec::new();
        let mut v = Vec::new();
        let mut dropped = 0u32;
        let samples = s.samples.len() as u32;
        let mut next_id = self.next_id;
        let st = self.endpoints.entry(endpoint.to_string()).or_default();
        let mut present = HashSet::with_capacity(st.present.len());
        for mut x in s.samples {
            x.labels.sort();
            let key = (x.name, x.labels);
            let id = match st.ids.get(&key) {
                Some(id) => *id,
                None => {
                    if st.series >= MAX_SERIES_PER_ENDPOINT {
                        dropped += 1;
                        continue;
                    }
                    let id = next_id;
                    next_id += 1;
                    st.series += 1;
                    new_series.push(ObserveLine::Series {
                        id,
                        endpoint: endpoint.to_string(),
                        name: key.0.clone(),
                        labels: key.1.iter().cloned().collect(),
                        kind: x.kind,
                    });
                    st.ids.insert(key, id);
                    id
                }
            };
            if !present.insert(id) {
                continue; // duplicate sample in one scrape: the first wins
            }
            let changed = match st.last.get(&id) {
                Some(old) => old.to_bits() != x.value.to_bits() || !st.present.contains(&id),
                None => true,
            };
            if changed {
                st.last.insert(id, x.value);
                v.push((id, Value(x.value)));
            }
        }
        let mut gone: Vec<u32> = st.present.difference(&present).copied().collect();
        gone.sort_unstable();
        st.present = present;
        self.next_id = next_id;
        for l in &new_series {
            self.line(l)?;
        }
        self.line(&ObserveLine::Scrape {
            endpoint: endpoint.to_string(),
            t: s.t,
            ms: s.ms,
            ok: true,
            error: None,
            detail: None,
            samples,
            bad_lines: s.bad_lines,
            dropped,
            v,
            gone,
        })?;
        self.flush()
    }

    /// Flush to disk.
    pub fn flush(&mut self) -> Result<(), ResultError> {
        self.out.flush().map_err(|source| ResultError::Io {
            path: self.path.clone(),
            source,
        })
    }
}

impl ScrapeSink for ObserveWriter {
    type Error = ResultError;

    fn endpoint(&mut self, name: &str, url: &str, interval_s: f64) -> Result<(), ResultError> {
        ObserveWriter::endpoint(self, name, url, interval_s)
    }

    fn scrape(&mut self, endpoint: &str, s: ScrapeOutcome) -> Result<(), ResultError> {
        ObserveWriter::scrape(self, endpoint, s)
    }

    fn flush(&mut self) -> Result<(), ResultError> {
        ObserveWriter::flush(self)
    }
}

/// What happened to one endpoint over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointLog {
    /// Name.
    pub name: String,
    /// URL (without credentials).
    pub url: String,
    /// Seconds between scrapes.
    pub interval_s: f64,
    /// Scrapes attempted.
    pub scrapes: u64,
    /// Scrapes that failed.
    pub failed: u64,
    /// Failures by category.
    pub errors: BTreeMap<String, u64>,
    /// The first failure's detail.
    pub first_error: Option<String>,
    /// When scrapes failed (seconds since second 0, when the failure was
    /// known: [`answered_at`]), for the charts' gaps.
    pub failed_at: Vec<f64>,
    /// Mean scrape duration, ms.
    pub mean_ms: f64,
    /// Longest scrape, ms.
    pub max_ms: f64,
    /// Samples in the last good scrape.
    pub samples: u32,
    /// Unparseable lines over all scrapes.
    pub bad_lines: u64,
    /// Most series dropped by the per-endpoint cap in one scrape.
    pub dropped: u32,
}

/// One stored series with every value it had, one point per successful scrape
/// in which it was present.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObservedSeries {
    /// Endpoint name.
    pub endpoint: String,
    /// Sample name.
    pub name: String,
    /// Labels, sorted by name.
    pub labels: BTreeMap<String, String>,
    /// Family type.
    pub kind: MetricType,
    /// `(t, value)`, t in seconds since second 0 when the scrape's answer
    /// arrived ([`answered_at`]), ascending.
    pub points: Vec<(f64, f64)>,
}

impl ObservedSeries {
    /// A label's value, or "".
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).map(String::as_str).unwrap_or("")
    }

    /// Whether this sample only grows (read its rate).
    pub fn is_monotonic(&self) -> bool {
        self.kind.is_monotonic_sample(&self.name)
    }
}

/// Everything scraped during a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observations {
    /// Endpoints in declaration order.
    pub endpoints: Vec<EndpointLog>,
    /// Series, in first-sighting order.
    pub series: Vec<ObservedSeries>,
}

impl Observations {
    /// Whether nothing was observed.
    pub fn is_empty(&self) -> bool {
        self.endpoints.is_empty()
    }

    /// Series of `endpoint` named `name`.
    pub fn named<'a>(
        &'a self,
        endpoint: &'a str,
        name: &'a str,
    ) -> impl Iterator<Item = &'a ObservedSeries> + 'a {
        self.series
            .iter()
            .filter(move |s| s.endpoint == endpoint && s.name == name)
    }
}

/// When a scrape's values were read: when its answer arrived, `ms` after its
/// request went out at `t`, in seconds since second 0.
///
/// Why not the request's time: a target that answers late (a busy JVM, a slow
/// exporter) reads its counters late too, so a counter's rise between two scrapes
/// belongs to the time between their answers. Stamped at the requests, a slow
/// answer followed by a quick one makes a CPU-seconds counter climb faster than the
/// cores can (115% of one core on a busy machine). Every file ever written holds
/// `t` as the request's time and `ms` as the wait for the answer, so older result
/// directories are read the same way.
pub fn answered_at(t: f64, ms: f64) -> f64 {
    if ms.is_finite() && ms > 0.0 {
        t + ms / 1000.0
    } else {
        t
    }
}

/// Read `observe.jsonl` from `dir`, keeping only series whose name `keep` accepts
/// (the reports need a few dozen families of an exporter's thousands). A missing
/// file is an empty result: runs without `observe:` have none.
pub fn read_observations(
    dir: &Path,
    keep: &dyn Fn(&str) -> bool,
) -> Result<Observations, ResultError> {
    let path = dir.join(OBSERVE_FILE);
    let f = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Observations::default()),
        Err(source) => return Err(ResultError::Io { path, source }),
    };
    let mut fold = ObserveFold::default();
    for (n, line) in BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|source| ResultError::Io {
            path: path.clone(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(&line) {
            Ok(l) => fold.add(l, keep),
            // A torn last line (the run was killed mid-write) is not an error.
            Err(_) if line.ends_with('}') => {
                return Err(ResultError::Format {
                    path: path.clone(),
                    line: n + 1,
                    message: "not an observe record".into(),
                })
            }
            Err(_) => continue,
        }
    }
    Ok(fold.finish())
}

/// `observe.jsonl` read a line at a time into [`Observations`].
#[derive(Default)]
struct ObserveFold {
    obs: Observations,
    /// id -> index in obs.series (None: filtered out).
    index: HashMap<u32, Option<usize>>,
    /// Per endpoint: current values of present, kept series.
    current: HashMap<String, BTreeMap<usize, f64>>,
    ms_sum: HashMap<String, f64>,
}

impl ObserveFold {
    fn add(&mut self, line: ObserveLine, keep: &dyn Fn(&str) -> bool) {
        let obs = &mut self.obs;
        match line {
            ObserveLine::Endpoint {
                endpoint,
                url,
                interval_s,
            } => {
                if !obs.endpoints.iter().any(|e| e.name == endpoint) {
                    obs.endpoints.push(EndpointLog {
                        name: endpoint,
                        url,
                        interval_s,
                        ..Default::default()
                    });
                }
            }
            ObserveLine::Series {
                id,
                endpoint,
                name,
                labels,
                kind,
            } => {
                if keep(&name) {
                    self.index.insert(id, Some(obs.series.len()));
                    obs.series.push(ObservedSeries {
                        endpoint,
                        name,
                        labels,
                        kind,
                        points: Vec::new(),
                    });
                } else {
                    self.index.insert(id, None);
                }
            }
            scrape @ ObserveLine::Scrape { .. } => self.scrape(scrape),
        }
    }

    /// One scrape: its endpoint's tallies, and on success every kept series' value
    /// at the moment its answer arrived.
    fn scrape(&mut self, line: ObserveLine) {
        let ObserveLine::Scrape {
            endpoint,
            t,
            ms,
            ok,
            error,
            detail,
            samples,
            bad_lines,
            dropped,
            v,
            gone,
        } = line
        else {
            return;
        };
        let obs = &mut self.obs;
        let Some(log) = obs.endpoints.iter_mut().find(|e| e.name == endpoint) else {
            return;
        };
        log.scrapes += 1;
        *self.ms_sum.entry(endpoint.clone()).or_default() += ms;
        log.max_ms = log.max_ms.max(ms);
        log.bad_lines += u64::from(bad_lines);
        log.dropped = log.dropped.max(dropped);
        if !ok {
            log.failed += 1;
            *log.errors
                .entry(error.unwrap_or_else(|| "error".into()))
                .or_default() += 1;
            if log.first_error.is_none() {
                log.first_error = detail;
            }
            log.failed_at.push(answered_at(t, ms));
            return;
        }
        log.samples = samples;
        let cur = self.current.entry(endpoint).or_default();
        for id in gone {
            if let Some(Some(i)) = self.index.get(&id) {
                cur.remove(i);
            }
        }
        for (id, val) in v {
            if let Some(Some(i)) = self.index.get(&id) {
                cur.insert(*i, val.0);
            }
        }
        let at = answered_at(t, ms);
        for (i, val) in cur.iter() {
            obs.series[*i].points.push((at, *val));
        }
    }

    fn finish(mut self) -> Observations {
        for e in &mut self.obs.endpoints {
            if e.scrapes > 0 {
                e.mean_ms = self.ms_sum.get(&e.name).copied().unwrap_or(0.0) / e.scrapes as f64;
            }
        }
        self.obs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pado_metrics::ScrapedSample;

    fn sample(name: &str, labels: &[(&str, &str)], value: f64) -> ScrapedSample {
        ScrapedSample {
            name: name.into(),
            labels: labels
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            value,
            kind: MetricType::Gauge,
        }
    }

    /// A fresh directory, removed when the returned guard drops (pass or fail).
    fn tmp(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("pado-observed-{name}-"))
            .tempdir()
            .unwrap()
    }

    #[test]
    fn round_trip_with_changes_only_gone_series_and_failures() {
        let dir = tmp("rt");
        let d = dir.path();
        let mut w = ObserveWriter::create(d).unwrap();
        w.endpoint("app", "http://127.0.0.1:1/metrics", 1.0)
            .unwrap();
        let scrape = |t: f64, samples: Vec<ScrapedSample>| ScrapeOutcome {
            t,
            ms: 2.0,
            samples,
            ..Default::default()
        };
        w.scrape(
            "app",
            scrape(
                0.0,
                vec![
                    sample("busy", &[("pool", "a")], 1.0),
                    sample("busy", &[("pool", "b")], 5.0),
                    sample("const", &[], 7.0),
                    sample("nan", &[], f64::NAN),
                ],
            ),
        )
        .unwrap();
        w.scrape(
            "app",
            ScrapeOutcome {
                t: 1.0,
                ms: 1000.0,
                error: Some(("timeout".into(), "no answer in 1s".into())),
                ..Default::default()
            },
        )
        .unwrap();
        // pool b disappears, pool a changes, const unchanged (not written).
        w.scrape(
            "app",
            scrape(
                2.0,
                vec![
                    sample("busy", &[("pool", "a")], 3.0),
                    sample("const", &[], 7.0),
                    sample("nan", &[], f64::NAN),
                ],
            ),
        )
        .unwrap();
        drop(w);
        let text = std::fs::read_to_string(d.join(OBSERVE_FILE)).unwrap();
        let last = text.lines().last().unwrap();
        assert!(last.contains("\"v\":[[0,3.0]]"), "{last}");
        assert!(last.contains("\"gone\":[1]"), "{last}");
        assert!(text.contains("\"NaN\""));

        let obs = read_observations(d, &|n| n != "nan").unwrap();
        assert_eq!(obs.endpoints.len(), 1);
        let e = &obs.endpoints[0];
        assert_eq!((e.scrapes, e.failed), (3, 1));
        assert_eq!(e.errors.get("timeout"), Some(&1));
        // Stamped when the answer (here the timeout) came: 1.0 s + 1000 ms.
        assert_eq!(e.failed_at, vec![2.0]);
        assert_eq!(e.first_error.as_deref(), Some("no answer in 1s"));
        assert_eq!(obs.series.len(), 3, "the filtered series is not kept");
        let a = obs.series.iter().find(|s| s.label("pool") == "a").unwrap();
        // Values are placed when their answer arrived, 2 ms after each request.
        assert_eq!(a.points, vec![(0.002, 1.0), (2.002, 3.0)]);
        let b = obs.series.iter().find(|s| s.label("pool") == "b").unwrap();
        assert_eq!(b.points, vec![(0.002, 5.0)], "gone series stop");
        let c = obs.named("app", "const").next().unwrap();
        assert_eq!(
            c.points,
            vec![(0.002, 7.0), (2.002, 7.0)],
            "unchanged carried"
        );
    }

    /// A planted counter of CPU seconds that rises exactly 1.0 per second (one
    /// core, fully busy), read by the target when it answers. Requests go out on
    /// the 1 s grid; every other answer is 800 ms late. Stamped at the requests,
    /// the late pair reads 1.8 cores; stamped at the answers, never more than one.
    #[test]
    fn a_late_answer_does_not_raise_a_counters_rate() {
        let dir = tmp("late");
        let d = dir.path();
        let mut w = ObserveWriter::create(d).unwrap();
        w.endpoint("app", "http://127.0.0.1:1/metrics", 1.0)
            .unwrap();
        for k in 0..8 {
            let sent = f64::from(k);
            let ms = if k % 2 == 1 { 800.0 } else { 3.0 };
            // The counter as the target read it: at the moment it answered.
            let cpu = sent + ms / 1000.0;
            let mut s = sample("process_cpu_seconds_total", &[], cpu);
            s.kind = MetricType::Counter;
            w.scrape(
                "app",
                ScrapeOutcome {
                    t: sent,
                    ms,
                    samples: vec![s],
                    ..Default::default()
                },
            )
            .unwrap();
        }
        drop(w);
        let obs = read_observations(d, &|_| true).unwrap();
        let cpu = obs
            .named("app", "process_cpu_seconds_total")
            .next()
            .unwrap();
        assert_eq!(cpu.points.len(), 8);
        for pair in cpu.points.windows(2) {
            let rate = (pair[1].1 - pair[0].1) / (pair[1].0 - pair[0].0);
            assert!(
                (rate - 1.0).abs() < 1e-9,
                "a CPU-seconds counter rising 1.0/s read as {rate:.3} cores between {:?} and {:?}",
                pair[0],
                pair[1]
            );
        }
    }

    /// Where the scrape took no measurable time (a `config` failure, or files
    /// written by hand) the request's time is the stamp.
    #[test]
    fn answered_at_adds_the_wait_only_when_there_was_one() {
        assert_eq!(answered_at(3.0, 250.0), 3.25);
        assert_eq!(answered_at(3.0, 0.0), 3.0);
        assert_eq!(answered_at(3.0, f64::NAN), 3.0);
        assert_eq!(answered_at(-0.5, 500.0), 0.0);
    }

    #[test]
    fn series_cap_counts_what_it_drops() {
        let dir = tmp("cap");
        let d = dir.path();
        let mut w = ObserveWriter::create(d).unwrap();
        w.endpoint("x", "http://127.0.0.1:1/m", 1.0).unwrap();
        let samples: Vec<_> = (0..MAX_SERIES_PER_ENDPOINT + 5)
            .map(|i| sample("s", &[("i", &i.to_string())], 1.0))
            .collect();
        w.scrape(
            "x",
            ScrapeOutcome {
                samples,
                ..Default::default()
            },
        )
        .unwrap();
        drop(w);
        let obs = read_observations(d, &|_| true).unwrap();
        assert_eq!(obs.series.len(), MAX_SERIES_PER_ENDPOINT);
        assert_eq!(obs.endpoints[0].dropped, 5);
    }

    #[test]
    fn missing_file_is_empty_and_torn_last_line_is_ignored() {
        let dir = tmp("torn");
        let d = dir.path();
        assert!(read_observations(d, &|_| true).unwrap().is_empty());
        std::fs::write(
            d.join(OBSERVE_FILE),
            "{\"k\":\"endpoint\",\"endpoint\":\"a\",\"url\":\"u\",\"interval_s\":1}\n{\"k\":\"scr",
        )
        .unwrap();
        let obs = read_observations(d, &|_| true).unwrap();
        assert_eq!(obs.endpoints.len(), 1);
    }

    #[test]
    fn monotonic_samples_by_family_type() {
        assert!(MetricType::Counter.is_monotonic_sample("x_total"));
        assert!(!MetricType::Counter.is_monotonic_sample("x_created"));
        assert!(MetricType::Summary.is_monotonic_sample("x_seconds_sum"));
        assert!(!MetricType::Summary.is_monotonic_sample("x_seconds"));
        assert!(!MetricType::Gauge.is_monotonic_sample("x_total"));
        assert!(MetricType::Untyped.is_monotonic_sample("x_total"));
    }
}
