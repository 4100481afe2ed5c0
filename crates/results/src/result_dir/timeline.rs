//! `timeline.jsonl`, a second at a time: the writer that appends closed seconds,
//! the reader that pulls them, and a second whose histograms stay encoded (what a
//! merge adds).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;

use super::wire::{WireGenerator, WireScenario, WireSecond};
use super::*;
use pado_metrics::series::Phase;
use pado_metrics::{GeneratorSecond, LatencyHistogram, ScenarioStats, SecondRecord, SeriesStats};

/// What a read of `timeline.jsonl` ([`ResultDir::for_each_second`]) found besides the
/// seconds themselves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimelineRead {
    /// Seconds read (lines handed on).
    pub seconds: usize,
    /// `t` of the last second read.
    pub last_t: Option<u32>,
    /// 1-based line number of a half-written last line that was left out (the writer
    /// was killed while writing it).
    pub torn_line: Option<usize>,
}

/// Whether nothing but whitespace is left in `rd`.
fn only_blank_left(rd: &mut impl BufRead) -> std::io::Result<bool> {
    loop {
        let buf = rd.fill_buf()?;
        if buf.is_empty() {
            return Ok(true);
        }
        if !buf.iter().all(u8::is_ascii_whitespace) {
            return Ok(false);
        }
        let n = buf.len();
        rd.consume(n);
    }
}

/// Appends closed seconds to `timeline.jsonl`.
pub struct TimelineWriter {
    pub(super) path: PathBuf,
    pub(super) out: BufWriter<File>,
}

/// Pulls seconds from `timeline.jsonl` one at a time ([`ResultDir::timeline_reader`]):
/// one line of text and one decoded second alive at a time.
///
/// A timeline holds each second once, in order of `t` (pado writes a second when it
/// closes, never twice): a line whose `t` repeats or goes back (a file edited,
/// concatenated or corrupted) is refused with its line, rather than counted twice
/// or into the wrong second.
pub struct TimelineReader {
    pub(super) rd: BufReader<File>,
    pub(super) path: PathBuf,
    pub(super) line: String,
    pub(super) no: usize,
    pub(super) read: TimelineRead,
    /// `t` of the last second handed on.
    pub(super) prev_t: Option<u32>,
}

impl TimelineReader {
    /// The next second, `None` at the end of the file (or at a torn last line, then
    /// recorded in [`TimelineReader::read`]).
    pub fn next_second(&mut self) -> Result<Option<SecondRecord>, ResultError> {
        match self.next_encoded()? {
            None => Ok(None),
            Some(e) => e
                .wire
                .into_record()
                .map(Some)
                .map_err(|m| self.error_here(m)),
        }
    }

    /// The next second with its histograms still encoded ([`EncodedSecond`]), `None`
    /// at the end (or at a torn last line, as [`TimelineReader::next_second`]).
    pub fn next_encoded(&mut self) -> Result<Option<EncodedSecond>, ResultError> {
        loop {
            self.line.clear();
            let p = &self.path;
            if self.rd.read_line(&mut self.line).map_err(io_err(p))? == 0 {
                return Ok(None);
            }
            self.no += 1;
            if self.line.trim().is_empty() {
                continue;
            }
            // Without the line end: a line torn inside a string must read as ending
            // early, not as a string holding a newline.
            return match serde_json::from_str::<WireSecond>(self.line.trim_end()) {
                Ok(wire) => {
                    if let Some(prev) = self.prev_t.filter(|p| wire.t <= *p) {
                        let what = if wire.t == prev {
                            "repeats"
                        } else {
                            "goes back from"
                        };
                        return Err(self.error_here(format!(
                            "field `t`: second {} {what} second {prev} of the line before; a timeline holds each second once, in order (was the file edited or joined with another?)",
                            wire.t
                        )));
                    }
                    self.prev_t = Some(wire.t);
                    Ok(Some(EncodedSecond {
                        wire,
                        line: self.no,
                    }))
                }
                Err(e) if e.is_eof() && only_blank_left(&mut self.rd).map_err(io_err(p))? => {
                    self.read.torn_line = Some(self.no);
                    Ok(None)
                }
                Err(e) => Err(self.error_here(e.to_string())),
            };
        }
    }

    /// A format error on the line read last.
    pub fn error_here(&self, message: String) -> ResultError {
        ResultError::Format {
            path: self.path.clone(),
            line: self.no,
            message,
        }
    }

    /// What the read found so far besides the seconds (the torn last line; `seconds`
    /// and `last_t` are counted by [`ResultDir::for_each_second`] only).
    pub fn read(&self) -> TimelineRead {
        self.read
    }
}

/// One second of a timeline as read, its histograms still encoded: what a merge adds
/// into the merged second, decoding each histogram straight into the sum instead of
/// into a histogram of its own first.
pub struct EncodedSecond {
    wire: WireSecond,
    line: usize,
}

/// What one second of one generator held besides what [`EncodedSecond::add_to`] adds
/// into the merged second: its own counts and figures, for its row in a merge.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OwnFigures {
    /// Requests completed.
    pub requests: u64,
    /// Of them, failed.
    pub failed: u64,
    /// Iterations started (completed or interrupted).
    pub iterations_started: u64,
    /// Open model: late starts.
    pub late: u64,
    /// Open model: dropped iterations.
    pub dropped: u64,
    /// The generator's own figures.
    pub generator: Option<GeneratorSecond>,
    /// Its active and allocated VUs: what a second it did not write carries
    /// forward in a merge.
    pub vus: (u32, u32),
}

impl EncodedSecond {
    /// Second of the run it belongs to.
    pub fn t(&self) -> u32 {
        self.wire.t
    }

    /// 1-based line of the timeline it was read from.
    pub fn line(&self) -> usize {
        self.line
    }

    /// Add this second into `acc` (counters summed, histograms added exactly, VUs
    /// summed; `acc.generator` left alone) and its `http_req_duration` samples into
    /// `own_duration`. Counters are checked as [`ResultDir::for_each_second`] checks
    /// them; an error says what is wrong (the caller names the line).
    pub fn add_to(
        self,
        acc: &mut SecondRecord,
        dec: &mut pado_metrics::latency::HistogramDecoder,
        own_duration: &mut LatencyHistogram,
    ) -> Result<OwnFigures, String> {
        let w = self.wire;
        let mut own = OwnFigures {
            vus: (w.vus, w.vus_max),
            ..Default::default()
        };
        acc.vus = acc.vus.saturating_add(w.vus);
        acc.vus_max = acc.vus_max.saturating_add(w.vus_max);
        // One series' counters at a time, in a reused record whose histograms stay
        // empty (a fresh one allocates seven of them for nothing).
        let mut counters = SeriesStats::default();
        for mut ws in w.series {
            let hist = std::mem::take(&mut ws.hist);
            ws.counters_into(&mut counters)?;
            own.requests = own.requests.saturating_add(counters.requests);
            own.failed = own.failed.saturating_add(counters.failed);
            let i = match acc.series.binary_search_by(|x| x.key.cmp(&counters.key)) {
                Ok(i) => i,
                Err(i) => {
                    acc.series.insert(i, SeriesStats::new(counters.key.clone()));
                    i
                }
            };
            let into = &mut acc.series[i];
            into.merge(&counters);
            for (name, enc) in hist {
                let p = Phase::ALL
                    .into_iter()
                    .find(|p| p.as_str() == name)
                    .ok_or_else(|| format!("unknown histogram `{name}`"))?;
                let also = (p == Phase::Duration).then_some(&mut *own_duration);
                dec.add_encoded_to(&enc, &mut into.hist[p as usize], also)?;
            }
        }
        for sc in &w.scenarios {
            own.iterations_started = own
                .iterations_started
                .saturating_add(sc.iterations.saturating_add(sc.interrupted));
            own.late = own.late.saturating_add(sc.late);
            own.dropped = own.dropped.saturating_add(sc.dropped);
        }
        add_scenarios(w.scenarios, &mut acc.scenarios, dec)?;
        add_scenarios(w.flows, &mut acc.flows, dec)?;
        for (name, c) in w.checks {
            acc.checks.entry(name).or_default().merge(&c);
        }
        if let Some(h) = w.http {
            acc.protocols.merge(&h.into_counts()?);
        }
        for c in super::wire_custom::from_wire(w.custom)? {
            pado_metrics::custom::merge_custom_into(&mut acc.custom, &c);
        }
        own.generator = w.generator.map(WireGenerator::into_second).transpose()?;
        Ok(own)
    }
}

/// Add scenarios (or flows) read from a line into a sorted list, their iteration
/// durations decoded straight into the sums.
fn add_scenarios(
    list: Vec<WireScenario>,
    into: &mut Vec<ScenarioStats>,
    dec: &mut pado_metrics::latency::HistogramDecoder,
) -> Result<(), String> {
    for mut sc in list {
        let enc = std::mem::take(&mut sc.iteration_duration);
        let counts = sc.into_stats()?;
        let i = match into.binary_search_by(|x| x.name.cmp(&counts.name)) {
            Ok(i) => i,
            Err(i) => {
                into.insert(i, ScenarioStats::new(counts.name.clone()));
                i
            }
        };
        into[i].merge(&counts);
        dec.add_encoded(&enc, &mut into[i].iteration_duration)?;
    }
    Ok(())
}

impl TimelineWriter {
    /// Append one second and flush it, so a crash loses at most the open second.
    pub fn write(&mut self, rec: &SecondRecord) -> Result<(), ResultError> {
        let format_err = |message: String| ResultError::Format {
            path: self.path.clone(),
            line: rec.t as usize + 1,
            message,
        };
        let wire = WireSecond::from_record(rec).map_err(format_err)?;
        let line = serde_json::to_string(&wire).map_err(|e| ResultError::Format {
            path: self.path.clone(),
            line: rec.t as usize + 1,
            message: e.to_string(),
        })?;
        let p = self.path.clone();
        self.out.write_all(line.as_bytes()).map_err(io_err(&p))?;
        self.out.write_all(b"\n").map_err(io_err(&p))?;
        self.out.flush().map_err(io_err(&p))
    }
}
