//! `observe.jsonl` read back one line at a time into the scrapes it was written
//! from, for a reader that gets the file as it grows from somewhere else (a
//! coordinator tailing the scraping generator's file over the network, for a live
//! view of the target's metrics in a distributed run).
//!
//! The file stores each series once (`series`) and each scrape's **changed**
//! values only ([`crate::observed`]); [`ObserveReplay`] keeps every endpoint's
//! current values, so each `scrape` line gives the whole scrape again: every
//! series present in it with its value, as the scraper handed it to the writer.
//!
//! The lines come from elsewhere, so nothing in them is trusted: a line that is
//! not a record, or a scrape of an endpoint never declared, is an error for that
//! line alone (the caller counts it and goes on); a value of a series never
//! declared for its endpoint cannot be named and is left out, as
//! [`crate::read_observations`] leaves it out; and the state a replay keeps is
//! bounded ([`MAX_ENDPOINTS`], [`MAX_SERIES`]) however many lines it is given.

use std::collections::{BTreeMap, HashMap};

use pado_metrics::scrape::{ScrapeOutcome, ScrapedSample};

use crate::observed::{ObserveLine, MAX_SERIES_PER_ENDPOINT};

/// Most endpoints a replay follows: a scenario observes a handful.
pub const MAX_ENDPOINTS: usize = 64;

/// Most series a replay keeps over all endpoints: what the writer stores for
/// a few endpoints at most ([`MAX_SERIES_PER_ENDPOINT`] each).
pub const MAX_SERIES: usize = 4 * MAX_SERIES_PER_ENDPOINT;

/// Why one line could not be replayed (the replay goes on with the next).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// Not one of `observe.jsonl`'s records.
    #[error("not an observe.jsonl record: {0}")]
    NotARecord(String),
    /// A scrape of an endpoint never declared by an `endpoint` line.
    #[error("a scrape of `{0}`, an endpoint never declared")]
    UnknownEndpoint(String),
    /// More endpoints or series than a replay keeps.
    #[error("more {0} than a live view keeps ({1})")]
    TooMany(&'static str, usize),
}

/// One series as declared: its endpoint and its sample without a value.
#[derive(Debug)]
struct Declared {
    endpoint: String,
    sample: ScrapedSample,
}

/// The scrapes of a growing `observe.jsonl`, rebuilt line by line.
#[derive(Debug, Default)]
pub struct ObserveReplay {
    /// Series by id.
    series: HashMap<u32, Declared>,
    /// Each endpoint's series present in its last scrape, by id, with their values.
    current: HashMap<String, BTreeMap<u32, f64>>,
}

impl ObserveReplay {
    /// A replay from the file's first line.
    pub fn new() -> ObserveReplay {
        ObserveReplay::default()
    }

    /// The next line of the file (without its `\n`): for a `scrape` line, the
    /// endpoint and the whole scrape (a failed one with its error and no samples);
    /// `None` for the lines that declare (endpoints, series) and blank ones.
    pub fn line(&mut self, line: &[u8]) -> Result<Option<(String, ScrapeOutcome)>, ReplayError> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let record: ObserveLine = serde_json::from_slice(line).map_err(|e| {
            let mut why = e.to_string();
            why.truncate(200);
            ReplayError::NotARecord(why)
        })?;
        match record {
            ObserveLine::Endpoint { endpoint, .. } => {
                if !self.current.contains_key(&endpoint) {
                    if self.current.len() >= MAX_ENDPOINTS {
                        return Err(ReplayError::TooMany("endpoints", MAX_ENDPOINTS));
                    }
                    self.current.insert(endpoint, BTreeMap::new());
                }
                Ok(None)
            }
            ObserveLine::Series {
                id,
                endpoint,
                name,
                labels,
                kind,
            } => {
                if !self.series.contains_key(&id) && self.series.len() >= MAX_SERIES {
                    return Err(ReplayError::TooMany("series", MAX_SERIES));
                }
                self.series.insert(
                    id,
                    Declared {
                        endpoint,
                        sample: ScrapedSample {
                            name,
                            labels: labels.into_iter().collect(),
                            value: 0.0,
                            kind,
                        },
                    },
                );
                Ok(None)
            }
            ObserveLine::Scrape {
                endpoint,
                t,
                ms,
                ok,
                error,
                detail,
                bad_lines,
                v,
                gone,
                ..
            } => {
                if !self.current.contains_key(&endpoint) {
                    return Err(ReplayError::UnknownEndpoint(endpoint));
                }
                let mut outcome = ScrapeOutcome {
                    t,
                    ms,
                    bad_lines,
                    ..Default::default()
                };
                if !ok {
                    outcome.error = Some((
                        error.unwrap_or_else(|| "error".into()),
                        detail.unwrap_or_default(),
                    ));
                    return Ok(Some((endpoint, outcome)));
                }
                let current = self.current.entry(endpoint.clone()).or_default();
                for id in gone {
                    current.remove(&id);
                }
                // Only series declared for this endpoint: the rest cannot be named.
                for (id, value) in v {
                    if self.series.get(&id).is_some_and(|d| d.endpoint == endpoint) {
                        current.insert(id, value.0);
                    }
                }
                outcome.samples = current
                    .iter()
                    .filter_map(|(id, value)| {
                        let d = self.series.get(id)?;
                        Some(ScrapedSample {
                            value: *value,
                            ..d.sample.clone()
                        })
                    })
                    .collect();
                Ok(Some((endpoint, outcome)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observed::ObserveWriter;
    use pado_metrics::scrape::{MetricType, ScrapeSink};

    fn sample(name: &str, labels: &[(&str, &str)], value: f64) -> ScrapedSample {
        ScrapedSample {
            name: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value,
            kind: MetricType::Gauge,
        }
    }

    /// A sample as compared: name, labels, value.
    type Seen = (String, Vec<(String, String)>, f64);

    fn values(s: &ScrapeOutcome) -> Vec<Seen> {
        s.samples
            .iter()
            .map(|x| (x.name.clone(), x.labels.clone(), x.value))
            .collect()
    }

    /// The file the writer writes, replayed, gives back each scrape whole: the
    /// unchanged values the file left out, the gone ones removed, a failed scrape
    /// with its error.
    #[test]
    fn every_scrape_comes_back_whole_from_the_changes_the_file_holds() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = ObserveWriter::create(dir.path()).unwrap();
        ScrapeSink::endpoint(&mut w, "app", "http://127.0.0.1:9/metrics", 1.0).unwrap();
        let scrapes = [
            vec![
                sample("hikaricp_connections_active", &[("pool", "주문-풀")], 4.0),
                sample("up", &[], 1.0),
            ],
            // `up` unchanged (not in the file's line), the pool changed, a new series.
            vec![
                sample("hikaricp_connections_active", &[("pool", "주문-풀")], 3.0),
                sample("up", &[], 1.0),
                sample("hikaricp_connections_pending", &[("pool", "주문-풀")], 7.0),
            ],
            // The pending series is gone.
            vec![
                sample("hikaricp_connections_active", &[("pool", "주문-풀")], 3.0),
                sample("up", &[], 1.0),
            ],
        ];
        for (i, s) in scrapes.iter().enumerate() {
            let o = ScrapeOutcome {
                t: i as f64,
                ms: 12.5,
                samples: s.clone(),
                ..Default::default()
            };
            ScrapeSink::scrape(&mut w, "app", o).unwrap();
        }
        let failed = ScrapeOutcome {
            t: 3.0,
            ms: 1000.0,
            error: Some(("timeout".into(), "no answer in 1 s".into())),
            ..Default::default()
        };
        ScrapeSink::scrape(&mut w, "app", failed).unwrap();
        w.flush().unwrap();
        let text = std::fs::read_to_string(dir.path().join(crate::OBSERVE_FILE)).unwrap();
        let mut replay = ObserveReplay::new();
        let got: Vec<(String, ScrapeOutcome)> = text
            .lines()
            .filter_map(|l| replay.line(l.as_bytes()).unwrap())
            .collect();
        assert_eq!(got.len(), 4);
        for ((endpoint, o), (i, want)) in got.iter().zip(scrapes.iter().enumerate()) {
            assert_eq!(endpoint, "app");
            assert_eq!((o.t, o.ms, &o.error), (i as f64, 12.5, &None));
            let mut want = values(&ScrapeOutcome {
                samples: want.clone(),
                ..Default::default()
            });
            let mut have = values(o);
            want.sort_by(|a, b| a.0.cmp(&b.0));
            have.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(have, want, "scrape {i}");
        }
        assert_eq!(
            got[3].1.error,
            Some(("timeout".into(), "no answer in 1 s".into()))
        );
        assert!(got[3].1.samples.is_empty());
    }

    #[test]
    fn a_malformed_line_is_an_error_for_itself_and_an_undeclared_series_is_left_out() {
        let mut r = ObserveReplay::new();
        let ok = |r: &mut ObserveReplay, l: &str| r.line(l.as_bytes()).unwrap();
        assert!(ok(
            &mut r,
            r#"{"k":"endpoint","endpoint":"app","url":"http://x/metrics","interval_s":1}"#
        )
        .is_none());
        assert!(ok(
            &mut r,
            r#"{"k":"series","id":0,"endpoint":"app","name":"up","type":"gauge"}"#
        )
        .is_none());
        // Torn, not JSON, JSON of another shape.
        for bad in [
            r#"{"k":"scrape","endpoint":"app","t":1,"#,
            "\u{FFFD}파도",
            r#"{"k":"second","t":1}"#,
        ] {
            assert!(
                matches!(r.line(bad.as_bytes()), Err(ReplayError::NotARecord(_))),
                "{bad}"
            );
        }
        // A scrape of an endpoint never declared; a value of a series never declared.
        assert_eq!(
            r.line(br#"{"k":"scrape","endpoint":"db","t":1,"ms":1,"ok":true,"v":[[0,1]]}"#)
                .err(),
            Some(ReplayError::UnknownEndpoint("db".into()))
        );
        // A value of a series never declared (9), or declared for another
        // endpoint, cannot be named: left out, the rest of the scrape kept.
        let (_, s) = ok(
            &mut r,
            r#"{"k":"scrape","endpoint":"app","t":1,"ms":1,"ok":true,"v":[[0,5],[9,1]]}"#,
        )
        .unwrap();
        assert_eq!(values(&s), vec![("up".into(), vec![], 5.0)]);
        // The refused lines changed nothing: the next scrape has `up` as it says.
        let (_, s) = ok(
            &mut r,
            r#"{"k":"scrape","endpoint":"app","t":2,"ms":1,"ok":true,"v":[[0,1]]}"#,
        )
        .unwrap();
        assert_eq!(values(&s), vec![("up".into(), vec![], 1.0)]);
        assert!(ok(&mut r, "   ").is_none());
    }

    #[test]
    fn endpoints_and_series_are_bounded() {
        let mut r = ObserveReplay::new();
        for i in 0..MAX_ENDPOINTS {
            let l =
                format!(r#"{{"k":"endpoint","endpoint":"e{i}","url":"http://x","interval_s":1}}"#);
            r.line(l.as_bytes()).unwrap();
        }
        let one_more = r#"{"k":"endpoint","endpoint":"more","url":"http://x","interval_s":1}"#;
        assert_eq!(
            r.line(one_more.as_bytes()).err(),
            Some(ReplayError::TooMany("endpoints", MAX_ENDPOINTS))
        );
        // An endpoint declared again is not one more.
        let again = r#"{"k":"endpoint","endpoint":"e0","url":"http://x","interval_s":1}"#;
        assert!(matches!(r.line(again.as_bytes()), Ok(None)));
        for id in 0..MAX_SERIES {
            let l = format!(r#"{{"k":"series","id":{id},"endpoint":"e0","name":"m"}}"#);
            r.line(l.as_bytes()).unwrap();
        }
        let l = format!(
            r#"{{"k":"series","id":{},"endpoint":"e0","name":"m"}}"#,
            MAX_SERIES
        );
        assert_eq!(
            r.line(l.as_bytes()).err(),
            Some(ReplayError::TooMany("series", MAX_SERIES))
        );
        assert_eq!(r.series.len(), MAX_SERIES);
    }
}
