//! `pado merge`: one result directory from the result directories of the segments of
//! one split test (`pado run --segment i/N`).
//!
//! The seconds of every generator are aligned ([`align`]: by `t` when they share an
//! agreed start, else by wall-clock start) and added: counters summed, HDR histograms
//! added, so the percentiles of the merged run are those of every request of the
//! test, not an average of percentiles. The generators' own per-second figures (CPU,
//! run-queue wait, event-loop lag) are not summed (one generator's CPU share added to
//! another's means nothing): they go to `generators.json` with each generator's own
//! requests, latency and start skew. The timelines are read in step, one second of
//! each alive at a time, so memory is bounded by series × generators, not by the
//! length of the run.
//!
//! [`plan`] reads and validates (each directory one segment of the same test, each
//! segment once) and names what is missing or cut short; [`MergePlan::write`] writes
//! the merged directory.

mod align;
mod bound;
mod error;
mod generators;
pub mod live;
#[cfg(test)]
mod tests;
mod validate;

use std::fs;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;

pub use error::MergeError;
pub use generators::{GeneratorFigures, GeneratorSecondFigures, GeneratorsFile, GENERATORS_FILE};

use crate::result_dir::{
    EncodedSecond, GeneratorMeta, ResultDir, ResultError, RunMeta, ScenarioMeta, SegmentMeta,
};
use crate::{StageMark, FORMAT_VERSION, OBSERVE_FILE};
use generators::Tally;
use pado_metrics::failure::keep_bounded;
use pado_metrics::latency::HistogramDecoder;
use pado_metrics::SecondRecord;

/// One directory to merge, read and checked.
pub(crate) struct Source {
    /// As given on the command line.
    path: PathBuf,
    dir: ResultDir,
    meta: RunMeta,
    segment: SegmentMeta,
    /// Whether pado finished writing it (a real length in run.json, a summary.json).
    finished: bool,
    /// Seconds its timeline holds.
    seconds: u32,
    /// Its last second had no VU: a segment given none of the test's load.
    idle: bool,
}

/// Read the sources of one group in step: for every second of the merged timeline,
/// their seconds that fall on it added into the second the group before sent (a new
/// one for the first group), sent on in order (an error is sent in place of a second,
/// and ends the chain). Returns the group's tallies with their index.
fn read_group(
    sources: &[Source],
    offsets: &[u32],
    mut own: Vec<(usize, Tally)>,
    end: u32,
    from: Option<crossbeam_channel::Receiver<Result<SecondRecord, MergeError>>>,
    tx: crossbeam_channel::Sender<Result<SecondRecord, MergeError>>,
) -> Vec<(usize, Tally)> {
    if let Err(e) = send_group(sources, offsets, &mut own, end, from, &tx) {
        let _ = tx.send(Err(e));
    }
    own
}

fn send_group(
    sources: &[Source],
    offsets: &[u32],
    own: &mut [(usize, Tally)],
    end: u32,
    from: Option<crossbeam_channel::Receiver<Result<SecondRecord, MergeError>>>,
    tx: &crossbeam_channel::Sender<Result<SecondRecord, MergeError>>,
) -> Result<(), MergeError> {
    let mut readers = Vec::with_capacity(own.len());
    let mut pending: Vec<Option<EncodedSecond>> = Vec::with_capacity(own.len());
    for (i, _) in own.iter() {
        let mut r = sources[*i].dir.timeline_reader()?;
        pending.push(r.next_encoded()?);
        readers.push(r);
    }
    let mut dec = HistogramDecoder::default();
    for t in 0..end {
        let mut rec = match &from {
            None => SecondRecord::new(t),
            Some(rx) => match rx.recv() {
                Ok(rec) => rec?,
                // The group before stopped early: its error is in its result.
                Err(_) => return Ok(()),
            },
        };
        for (k, (i, tally)) in own.iter_mut().enumerate() {
            let mut wrote = false;
            while let Some(p) = pending[k].as_ref() {
                if p.t().saturating_add(offsets[*i]) > t {
                    break;
                }
                let p = pending[k].take().expect("checked above");
                let line = p.line();
                tally
                    .add(t, &mut rec, p, &mut dec)
                    .map_err(|message| ResultError::Format {
                        path: sources[*i]
                            .dir
                            .path()
                            .join(crate::result_dir::TIMELINE_FILE),
                        line,
                        message,
                    })?;
                pending[k] = readers[k].next_encoded()?;
                wrote = true;
            }
            // A gap in its timeline with seconds still to come: its run went on.
            if !wrote && pending[k].is_some() {
                tally.carry_vus(&mut rec);
            }
        }
        if tx.send(Ok(rec)).is_err() {
            // The writer stopped (its own error): nothing more to do.
            return Ok(());
        }
    }
    // The group before may have ended with an error after its last second.
    if let Some(rx) = &from {
        if let Ok(Err(e)) = rx.recv() {
            return Err(e);
        }
    }
    // A second left unread lies past the merged end (a line far ahead of the ones
    // after it, which the reader would refuse as out of order): say so rather than
    // drop what follows it.
    for (k, (i, _)) in own.iter().enumerate() {
        if let Some(p) = &pending[k] {
            return Err(MergeError::Result(ResultError::Format {
                path: sources[*i]
                    .dir
                    .path()
                    .join(crate::result_dir::TIMELINE_FILE),
                line: p.line(),
                message: format!(
                    "field `t`: second {} is past the end of the merged timeline ({end} s); its seconds are not in order",
                    p.t()
                ),
            }));
        }
    }
    Ok(())
}

/// Segments of one test, read and checked, ready to be written as one.
pub struct MergePlan {
    sources: Vec<Source>,
    problems: Vec<String>,
    alignment: align::Alignment,
}

/// What a merge wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeOutcome {
    /// Generators merged.
    pub generators: usize,
    /// Seconds of the merged timeline.
    pub seconds: u32,
    /// Why the merge is partial (empty when it is the whole test).
    pub partial: Vec<String>,
}

/// Read the directories and check that they are segments of one test, each once.
/// Missing and cut-short segments are not an error here: they are in
/// [`MergePlan::problems`], for the caller to refuse ([`MergePlan::require_complete`])
/// or accept.
pub fn plan(dirs: &[PathBuf]) -> Result<MergePlan, MergeError> {
    if dirs.is_empty() {
        return Err(MergeError::Incomplete(vec![
            "no result directory to merge".into()
        ]));
    }
    let sources = validate::open_sources(dirs)?;
    let problems = validate::problems(&sources);
    let alignment = align::align(&sources)?;
    bound::check(&sources, &alignment)?;
    Ok(MergePlan {
        sources,
        problems,
        alignment,
    })
}

impl MergePlan {
    /// Missing segments and segments that ended early, one sentence each.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// An error naming every missing or cut-short segment, if there is one.
    pub fn require_complete(&self) -> Result<(), MergeError> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(MergeError::Incomplete(self.problems.clone()))
        }
    }

    /// Write the merged result into `out` (a directory claimed for it): run.json,
    /// timeline.jsonl, failures.jsonl, observe.jsonl (from one generator) and
    /// generators.json. summary.json and the report are the report side's.
    pub fn write(self, out: &ResultDir) -> Result<MergeOutcome, MergeError> {
        self.write_each(out, |_| {})
    }

    /// [`MergePlan::write`], handing each merged second to `each` once it is written,
    /// in order: a report folds them as they come instead of reading the merged
    /// timeline back (the same seconds, the same result, without decoding them
    /// again).
    pub fn write_each(
        self,
        out: &ResultDir,
        mut each: impl FnMut(SecondRecord),
    ) -> Result<MergeOutcome, MergeError> {
        let n = self.sources.len();
        let offsets = &self.alignment.offsets;
        let end = self.end();
        let mut meta = self.merged_meta(end);
        // run.json first with length 0, as a run does: a merge killed midway reads
        // as unfinished, not as a short complete run.
        let real_length = meta.duration_s;
        meta.duration_s = 0.0;
        out.write_meta(&meta)?;

        let tallies: Vec<Tally> = self
            .sources
            .iter()
            .enumerate()
            .map(|(i, s)| Tally::new(self.figures_of(i, s)))
            .collect();
        // The sources are read by up to two threads in a chain: the first adds its
        // share of the generators into a new second and hands it to the second,
        // which adds its share into the same second (no partial seconds to add
        // together) and hands it to this thread, which writes it. Bounded channels
        // keep each thread a few seconds ahead at most, so memory stays bounded
        // whatever the length of the run.
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 2)
            .min(n);
        // The second link adds into seconds the first one filled (on another core):
        // it costs more per generator, so the first takes three fifths of them.
        let first = if threads == 1 { n } else { (n * 3).div_ceil(5) };
        let groups: Vec<Vec<usize>> = [(0..first).collect(), (first..n).collect()]
            .into_iter()
            .filter(|g: &Vec<usize>| !g.is_empty())
            .collect();
        let mut slots: Vec<Option<Tally>> = tallies.into_iter().map(Some).collect();
        let sources = &self.sources;
        let tallies = std::thread::scope(|scope| -> Result<Vec<Tally>, MergeError> {
            let mut from = None;
            let mut handles = Vec::new();
            for g in groups {
                let (tx, rx) = crossbeam_channel::bounded::<Result<SecondRecord, MergeError>>(4);
                let own: Vec<(usize, Tally)> = g
                    .iter()
                    .map(|&i| (i, slots[i].take().expect("each source in one group")))
                    .collect();
                let before = from.replace(rx);
                handles
                    .push(scope.spawn(move || read_group(sources, offsets, own, end, before, tx)));
            }
            let last = from.expect("at least one group");
            let mut w = out.timeline_writer()?;
            for t in 0..end {
                let mut rec = match last.recv() {
                    Ok(rec) => rec?,
                    // A reader stopped early: its error is in its result.
                    Err(_) => SecondRecord::new(t),
                };
                rec.t = t;
                w.write(&rec)?;
                each(rec);
            }
            // A reader may end with an error after the last second (a second past
            // the end): wait for its word before calling the merge good.
            if let Ok(Err(e)) = last.recv() {
                return Err(e);
            }
            drop(last);
            let mut all: Vec<(usize, Tally)> = Vec::new();
            for h in handles {
                all.extend(h.join().expect("a merge reader panicked"));
            }
            all.sort_by_key(|(i, _)| *i);
            Ok(all.into_iter().map(|(_, t)| t).collect())
        })?;

        self.merge_failures(out)?;
        self.copy_observations(out)?;
        let events = self.events()?;
        if !events.is_empty() {
            let mut w = crate::events::EventsWriter::create(out.path())?;
            for e in &events {
                w.write(e)?;
            }
        }
        let generators = GeneratorsFile {
            generators: tallies.into_iter().map(Tally::finish).collect(),
            partial: self.problems.clone(),
        };
        out.write_generators(&generators)?;
        meta.duration_s = real_length;
        out.write_meta(&meta)?;
        Ok(MergeOutcome {
            generators: n,
            seconds: end,
            partial: self.problems,
        })
    }

    /// Seconds of the merged timeline: up to the last second of the generator that
    /// ended last.
    fn end(&self) -> u32 {
        self.sources
            .iter()
            .zip(&self.alignment.offsets)
            .map(|(s, o)| s.seconds.saturating_add(*o))
            .max()
            .unwrap_or(0)
    }

    /// The merged run.json as [`MergePlan::write`] writes it when it ends (what a
    /// fold of the merged seconds needs before they come).
    pub fn meta(&self) -> RunMeta {
        self.merged_meta(self.end())
    }

    /// A source's length in seconds: its run.json's, or its timeline's when pado was
    /// killed before writing it.
    fn length_of(s: &Source) -> f64 {
        if s.meta.duration_s > 0.0 {
            s.meta.duration_s
        } else {
            f64::from(s.seconds)
        }
    }

    fn figures_of(&self, i: usize, s: &Source) -> GeneratorFigures {
        let seg = &s.segment;
        GeneratorFigures {
            index: seg.index,
            count: seg.count,
            share: generators::share(seg.index, seg.count, &seg.weights),
            source: s.path.display().to_string(),
            offset_s: self.alignment.offsets[i],
            start_skew_ms: self.alignment.skews_ms[i],
            duration_s: Self::length_of(s),
            ended_early: !s.finished
                || s.meta.interrupted
                || self
                    .problems
                    .iter()
                    .any(|p| p.starts_with(&format!("segment {}/{} ", seg.index, seg.count))),
            workers: s.meta.workers,
            cores_allowed: s.meta.cores_allowed,
            open_model: s.meta.scenarios.iter().any(|sc| sc.open_model),
            ..Default::default()
        }
    }

    /// The first segment's scenarios with each open-model one's VU ceiling summed
    /// over the generators (each recorded its own share of `max_vus`); the ceiling
    /// stays unknown when a generator did not record it.
    fn merged_scenarios(&self) -> Vec<ScenarioMeta> {
        let mut out = self.sources[0].meta.scenarios.clone();
        for (i, sc) in out.iter_mut().enumerate() {
            // Labelled as the whole test, not as segment 0's share of it.
            sc.description = whole_test_description(&sc.description).to_string();
            sc.max_vus = self
                .sources
                .iter()
                .map(|s| s.meta.scenarios.get(i).and_then(|o| o.max_vus))
                .try_fold(0u32, |a, n| n.map(|n| a.saturating_add(n)));
        }
        out
    }

    /// The merged run.json: the first segment's test, the generators' sums, every
    /// generator's warnings under its segment, the skew note, and `merged_from`.
    fn merged_meta(&self, end: u32) -> RunMeta {
        let first = &self.sources[0];
        let count = first.segment.count;
        let duration_s = self
            .sources
            .iter()
            .zip(&self.alignment.offsets)
            .map(|(s, o)| f64::from(*o) + Self::length_of(s))
            .fold(0.0f64, f64::max)
            .max(if end > 0 { 1e-3 } else { 0.0 });
        let mut notes = first.meta.notes.clone();
        notes.push(self.alignment.note.clone());
        let mut warnings: Vec<String> = self
            .problems
            .iter()
            .map(|p| format!("PARTIAL RESULT: {p}"))
            .collect();
        for s in &self.sources {
            for w in &s.meta.warnings {
                warnings.push(format!("segment {}/{count}: {w}", s.segment.index));
            }
        }
        RunMeta {
            format: "pado-result".into(),
            version: FORMAT_VERSION,
            name: first.meta.name.clone(),
            pado_version: env!("CARGO_PKG_VERSION").into(),
            started_at: self.alignment.started_at.clone(),
            duration_s,
            interrupted: self
                .sources
                .iter()
                .any(|s| s.meta.interrupted || !s.finished),
            workers: self.sources.iter().map(|s| s.meta.workers).sum(),
            cores_allowed: self.sources.iter().map(|s| s.meta.cores_allowed).sum(),
            scenarios: self.merged_scenarios(),
            stages: self.merged_stages(),
            thresholds: first.meta.thresholds.clone(),
            steps: first.meta.steps.clone(),
            notes,
            warnings,
            max_body: first.meta.max_body,
            segment: None,
            merged_from: self
                .sources
                .iter()
                .zip(&self.alignment.skews_ms)
                .map(|(s, skew)| GeneratorMeta {
                    segment: SegmentMeta {
                        start_skew_ms: s.segment.start_skew_ms.or(*skew),
                        ..s.segment.clone()
                    },
                    source: s.path.display().to_string(),
                    started_at: s.meta.started_at.clone(),
                    duration_s: Self::length_of(s),
                    interrupted: s.meta.interrupted || !s.finished,
                    workers: s.meta.workers,
                    cores_allowed: s.meta.cores_allowed,
                    warnings: s.meta.warnings.clone(),
                })
                .collect(),
            outputs: Vec::new(),
            // Each generator's raw file stays in its own directory: not merged.
            raw_output: None,
            soak: first.meta.soak,
            planned_s: first.meta.planned_s,
        }
    }

    /// The stages of the whole plan: the first segment's windows (moved by its
    /// offset), with each stage's target and starting level summed over the
    /// segments (each segment records its own share of them).
    fn merged_stages(&self) -> Vec<StageMark> {
        let first = &self.sources[0];
        let off = f64::from(self.alignment.offsets[0]);
        first
            .meta
            .stages
            .iter()
            .map(|m| {
                let same = |o: &&StageMark| o.scenario == m.scenario && o.index == m.index;
                let mut target = 0.0;
                let mut from: Option<f64> = None;
                for s in &self.sources {
                    if let Some(o) = s.meta.stages.iter().find(same) {
                        target += o.target;
                        if let Some(f) = o.from {
                            from = Some(from.unwrap_or(0.0) + f);
                        }
                    }
                }
                if !m.is_executor_stage() {
                    return StageMark {
                        start_s: m.start_s + off,
                        end_s: m.end_s + off,
                        ..m.clone()
                    };
                }
                StageMark {
                    start_s: m.start_s + off,
                    end_s: m.end_s + off,
                    label: whole_test_label(&m.label, from, target),
                    target,
                    from,
                    ..m.clone()
                }
            })
            .collect()
    }

    /// Every generator's failure samples, moved to the merged seconds, kept within
    /// the usual bound per (step, category), in segment order.
    fn merge_failures(&self, out: &ResultDir) -> Result<(), MergeError> {
        let mut kept = Vec::new();
        for (s, off) in self.sources.iter().zip(&self.alignment.offsets) {
            for mut f in s.dir.read_failures()? {
                f.second = f.second.saturating_add(*off);
                keep_bounded(&mut kept, f);
            }
        }
        if !kept.is_empty() {
            out.write_failures(&kept)?;
        }
        Ok(())
    }

    /// The events of the test (`events.jsonl`, run by segment 0 only), their times
    /// moved by that generator's offset on the merged timeline.
    pub fn events(&self) -> Result<Vec<crate::events::EventRecord>, MergeError> {
        let Some((s, off)) = self
            .sources
            .iter()
            .zip(&self.alignment.offsets)
            .find(|(s, _)| s.dir.path().join(crate::events::EVENTS_FILE).is_file())
        else {
            return Ok(Vec::new());
        };
        let mut events = crate::events::read_events(s.dir.path())?;
        let d = u64::from(*off) * 1000;
        for e in &mut events {
            e.planned_ms += d;
            e.started_ms = e.started_ms.map(|v| v + d);
            e.window_end_ms = e.window_end_ms.map(|v| v + d);
            for a in [&mut e.action, &mut e.undo].into_iter().flatten() {
                a.started_ms += d;
                a.ended_ms += d;
            }
        }
        Ok(events)
    }

    /// The target's metrics from one generator (segment 0 when it is there): every
    /// generator scraped the same target, so more would be duplicates. Scrape times
    /// are moved by that generator's offset.
    fn copy_observations(&self, out: &ResultDir) -> Result<(), MergeError> {
        let Some((s, off)) = self
            .sources
            .iter()
            .zip(&self.alignment.offsets)
            .find(|(s, _)| s.dir.path().join(OBSERVE_FILE).is_file())
        else {
            return Ok(());
        };
        let from = s.dir.path().join(OBSERVE_FILE);
        let to = out.path().join(OBSERVE_FILE);
        let io = |p: &PathBuf| {
            let p = p.clone();
            move |e: std::io::Error| ResultError::Io { path: p, source: e }
        };
        if *off == 0 {
            fs::copy(&from, &to).map_err(io(&to))?;
            return Ok(());
        }
        let rd = BufReader::new(fs::File::open(&from).map_err(io(&from))?);
        let mut w = BufWriter::new(fs::File::create(&to).map_err(io(&to))?);
        for (no, line) in rd.lines().enumerate() {
            let line = line.map_err(io(&from))?;
            let shifted = match serde_json::from_str::<serde_json::Value>(&line) {
                Ok(mut v) => {
                    if let Some(t) = v.get("t").and_then(|t| t.as_f64()) {
                        v["t"] = serde_json::json!(t + f64::from(*off));
                    }
                    v.to_string()
                }
                // A torn last line stays as it was; the reader knows what to do.
                Err(e) if e.is_eof() => line,
                Err(e) => {
                    return Err(ResultError::Format {
                        path: from.clone(),
                        line: no + 1,
                        message: e.to_string(),
                    }
                    .into())
                }
            };
            writeln!(w, "{shifted}").map_err(io(&to))?;
        }
        w.flush().map_err(io(&to))?;
        Ok(())
    }
}

/// A segment's scenario description is `segment i/N (share of the load): its own
/// part; whole test: the plan` (as the engine's segmented executor writes it); the
/// merged result is the whole test, so it is described by the part after
/// `whole test: `. Other descriptions are kept as they are.
fn whole_test_description(segment_description: &str) -> &str {
    segment_description
        .split_once("; whole test: ")
        .map_or(segment_description, |(_, whole)| whole)
}

/// A stage's label for the whole test, from the levels summed over the segments:
/// `hold 6 VUs`, `ramp 0→100 it/s`, in the words and unit the segment's label used
/// (`hold 3 VUs` in segment 0 of two). A label of another shape is kept.
fn whole_test_label(label: &str, from: Option<f64>, target: f64) -> String {
    let unit = match label.rsplit_once(' ') {
        Some((_, "VU" | "VUs")) => "VUs",
        Some((_, u)) if label.starts_with("hold ") || label.starts_with("ramp ") => u,
        _ => return label.to_string(),
    };
    let level = |v: f64| {
        if v.fract() == 0.0 {
            format!("{}", v as i64)
        } else {
            format!("{v:.2}")
        }
    };
    let from = from.unwrap_or(target);
    if (from - target).abs() < 1e-9 {
        let unit = if unit == "VUs" && target == 1.0 {
            "VU"
        } else {
            unit
        };
        format!("hold {} {unit}", level(target))
    } else {
        format!("ramp {}→{} {unit}", level(from), level(target))
    }
}
