//! Where each generator's second 0 falls on the merged timeline. Segments started at
//! one agreed instant (`--start-at`) share their second 0, so their seconds align by
//! `t`; otherwise each is placed by its wall-clock start, rounded to whole seconds
//! after the earliest one.

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::{MergeError, Source};

/// How the seconds were aligned, in words for the run's notes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Alignment {
    /// `started_at` of the merged run (second 0 of the merged timeline).
    pub started_at: String,
    /// Per source (in the order given): offset of its second 0, whole seconds.
    pub offsets: Vec<u32>,
    /// Per source: how far its start was from the agreed or the earliest start, ms.
    pub skews_ms: Vec<Option<f64>>,
    /// The note for run.json.
    pub note: String,
}

fn parse(s: &Source) -> Result<OffsetDateTime, MergeError> {
    OffsetDateTime::parse(&s.meta.started_at, &Rfc3339).map_err(|_| MergeError::BadStart {
        dir: s.path.clone(),
        value: s.meta.started_at.clone(),
    })
}

/// Spread of the known skews, ms (largest minus smallest), 0 when none is known.
fn spread(skews: &[Option<f64>]) -> f64 {
    let known: Vec<f64> = skews.iter().flatten().copied().collect();
    let max = known.iter().copied().fold(f64::MIN, f64::max);
    let min = known.iter().copied().fold(f64::MAX, f64::min);
    if known.is_empty() {
        0.0
    } else {
        max - min
    }
}

/// Align `sources` (already validated as segments of one test).
pub(crate) fn align(sources: &[Source]) -> Result<Alignment, MergeError> {
    let agreed = sources[0].segment.start_at.clone();
    let shared = agreed.is_some()
        && sources
            .iter()
            .all(|s| s.segment.start_at.as_deref() == agreed.as_deref());
    if let (true, Some(at)) = (shared, agreed) {
        let skews: Vec<Option<f64>> = sources
            .iter()
            .map(|s| Some(s.segment.start_skew_ms.unwrap_or(0.0)))
            .collect();
        let worst = skews.iter().flatten().fold(0.0f64, |m, s| m.max(s.abs()));
        let note = format!(
            "merged from {} generators started together at {at} (--start-at), seconds aligned by t; generators started within {} ms of each other (worst skew {} ms from the agreed start)",
            sources.len(),
            ms(spread(&skews)),
            ms(worst)
        );
        return Ok(Alignment {
            started_at: at,
            offsets: vec![0; sources.len()],
            skews_ms: skews,
            note,
        });
    }
    let starts: Vec<OffsetDateTime> = sources.iter().map(parse).collect::<Result<_, _>>()?;
    let (first_i, earliest) = starts
        .iter()
        .enumerate()
        .min_by_key(|(_, t)| **t)
        .map(|(i, t)| (i, *t))
        .expect("at least one source");
    let skews: Vec<Option<f64>> = starts
        .iter()
        .map(|t| Some((*t - earliest).as_seconds_f64() * 1000.0))
        .collect();
    let offsets = skews
        .iter()
        .map(|s| (s.unwrap_or(0.0) / 1000.0).round() as u32)
        .collect();
    let note = format!(
        "merged from {} generators without an agreed start (--start-at): seconds aligned by each generator's wall-clock start, rounded to whole seconds; generators started within {} ms of each other",
        sources.len(),
        ms(spread(&skews))
    );
    Ok(Alignment {
        started_at: sources[first_i].meta.started_at.clone(),
        offsets,
        skews_ms: skews,
        note,
    })
}

fn ms(v: f64) -> String {
    format!("{}", v.round() as i64)
}
