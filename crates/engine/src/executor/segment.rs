//! Execution segments: one share of a test for one of N load generators
//! (`pado run --segment i/N --segment-weights w0,w1,...`).
//!
//! Everything that is split (closed-model VUs, open-model arrivals, the open model's VU
//! ids, `sequential` feed rows) is split by one rule, the [`Stripe`]: a deterministic
//! sequence that gives each position 0, 1, 2, ... to a segment, so that every prefix is
//! shared as evenly as the weights allow. Splitting is done on the pure schedules
//! ([`split`]), never in the runtime's hot path: a segment runs exactly its VUs with
//! their whole-test windows, or exactly its arrivals at their whole-test times, so the
//! segments add up to the whole at every instant and their union is the single
//! schedule.

use std::sync::Arc;
use std::time::Duration;

use pado_scenario::ExecutorKind;

use super::{ClosedSchedule, Executor, IterationPool, OpenSchedule, Schedule, StageWindow};

/// Most segments a test may be split into.
pub const MAX_SEGMENTS: u32 = 10_000;
/// Largest sum of weights, after dividing them by their greatest common divisor (the
/// stripe's period is held in memory and built in sum × segments steps).
pub const MAX_WEIGHT_SUM: u64 = 1_000_000;
/// Most steps building a stripe may take (sum of weights × segments).
const MAX_STRIPE_WORK: u64 = 100_000_000;

/// A bad `--segment` or `--segment-weights`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SegmentError {
    /// Not `i/N` with integers.
    #[error("`{0}` is not a segment: write `i/N`, e.g. `0/3` for the first of three")]
    Syntax(String),
    /// N = 0.
    #[error("a test cannot be split into 0 segments: N in `i/N` must be at least 1")]
    ZeroCount,
    /// i ≥ N.
    #[error("segment {index}/{count} does not exist: segments are numbered 0 to {last}", last = count - 1)]
    IndexTooLarge {
        /// i.
        index: u32,
        /// N.
        count: u32,
    },
    /// Too many segments.
    #[error("{0} segments are too many: at most {MAX_SEGMENTS}")]
    TooMany(u32),
    /// Weight list not of N positive integers.
    #[error(
        "`{0}` is not a list of weights: write positive integers separated by commas, e.g. `2,1,1`"
    )]
    WeightSyntax(String),
    /// Weights count ≠ N.
    #[error("{given} weights for {count} segments: give exactly one weight per segment")]
    WeightCount {
        /// Weights given.
        given: usize,
        /// N.
        count: u32,
    },
    /// A weight of 0.
    #[error("weight {index} is 0: every segment needs a weight of at least 1 (leave a generator out instead)")]
    ZeroWeight {
        /// Which weight.
        index: usize,
    },
    /// Weights too fine to stripe (their sum, reduced, past [`MAX_WEIGHT_SUM`], or
    /// times the segments past a hundred million).
    #[error("the weights sum to {0} (divided by their common factor): too fine a split; use smaller weights (at most {MAX_WEIGHT_SUM} in all, and sum × segments at most 100000000)")]
    WeightSum(u64),
}

/// Parse `--segment i/N` into (i, N).
pub fn parse_segment(s: &str) -> Result<(u32, u32), SegmentError> {
    let bad = || SegmentError::Syntax(s.to_string());
    let (i, n) = s.trim().split_once('/').ok_or_else(bad)?;
    let i: u32 = i.trim().parse().map_err(|_| bad())?;
    let n: u32 = n.trim().parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(SegmentError::ZeroCount);
    }
    if n > MAX_SEGMENTS {
        return Err(SegmentError::TooMany(n));
    }
    if i >= n {
        return Err(SegmentError::IndexTooLarge { index: i, count: n });
    }
    Ok((i, n))
}

/// Parse `--segment-weights 2,1,1` (zeros are kept, for [`Stripe::new`] to name).
pub fn parse_weights(s: &str) -> Result<Vec<u32>, SegmentError> {
    s.split(',')
        .map(|w| w.trim().parse::<u32>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| SegmentError::WeightSyntax(s.to_string()))
}

/// The striping of positions 0, 1, 2, ... over weighted segments.
///
/// The rule (the "quota method", earliest deadline first): with weights `w` summing to
/// `W`, position `n` (0-based) goes to the segment `i` that may still take one
/// (`c_i · W < (n+1) · w_i`, where `c_i` is how many positions `i` already has) and
/// whose next position is due soonest (smallest `⌈(c_i+1) · W / w_i⌉`), the lower
/// index on a tie. Every prefix of length `n` then gives segment `i` between
/// `⌊n·w_i/W⌋` and `⌈n·w_i/W⌉` positions (within 1 of its share), and after `W`
/// positions each segment has exactly its weight, so the sequence repeats with period
/// `W`. Weights 1,1 give 0,1,0,1,...; 2,1,1 give 0,1,0,2,...; 1,1,1 give 0,1,2,...
#[derive(Debug, PartialEq, Eq)]
pub struct Stripe {
    weights: Vec<u32>,
    /// The segment of each position of one period.
    period: Vec<u32>,
    /// Per segment, its positions within one period, in order.
    offsets: Vec<Vec<u32>>,
}

impl Stripe {
    /// The stripe for these weights (one per segment, each ≥ 1).
    pub fn new(weights: &[u32]) -> Result<Stripe, SegmentError> {
        if weights.is_empty() {
            return Err(SegmentError::ZeroCount);
        }
        if weights.len() > MAX_SEGMENTS as usize {
            return Err(SegmentError::TooMany(weights.len() as u32));
        }
        if let Some(index) = weights.iter().position(|&w| w == 0) {
            return Err(SegmentError::ZeroWeight { index });
        }
        // The stripe depends only on the weights' ratios: 2,2,4 stripes as 1,1,2.
        let g = weights.iter().fold(0u64, |g, &w| gcd(w as u64, g));
        let reduced: Vec<u64> = weights.iter().map(|&w| w as u64 / g).collect();
        let total: u64 = reduced.iter().sum();
        if total > MAX_WEIGHT_SUM || total * reduced.len() as u64 > MAX_STRIPE_WORK {
            return Err(SegmentError::WeightSum(total));
        }
        let mut counts = vec![0u64; weights.len()];
        let mut period = Vec::with_capacity(total as usize);
        let mut offsets = vec![Vec::new(); weights.len()];
        for n in 0..total {
            let mut best: Option<(u64, usize)> = None;
            for (i, &w) in reduced.iter().enumerate() {
                if counts[i] * total >= (n + 1) * w {
                    continue;
                }
                let due = ((counts[i] + 1) * total).div_ceil(w);
                if best.is_none_or(|(d, _)| due < d) {
                    best = Some((due, i));
                }
            }
            // Some segment is always eligible: the shares sum to n + 1 > the counts' n.
            let i = best.map_or(0, |(_, i)| i);
            counts[i] += 1;
            period.push(i as u32);
            offsets[i].push(n as u32);
        }
        Ok(Stripe {
            weights: weights.to_vec(),
            period,
            offsets,
        })
    }

    /// Number of segments.
    pub fn count(&self) -> u32 {
        self.weights.len() as u32
    }

    /// The weights.
    pub fn weights(&self) -> &[u32] {
        &self.weights
    }

    fn total(&self) -> u64 {
        self.period.len() as u64
    }

    /// The segment position `pos` belongs to.
    pub fn segment_of(&self, pos: u64) -> u32 {
        self.period[(pos % self.total()) as usize]
    }

    /// How many of positions `0..n` belong to segment `seg`.
    pub fn count_before(&self, seg: u32, n: u64) -> u64 {
        // The segment's positions per period (its weight, reduced).
        let w = self.offsets[seg as usize].len() as u64;
        let rem = (n % self.total()) as u32;
        let in_rem = self.offsets[seg as usize].partition_point(|&o| o < rem) as u64;
        n / self.total() * w + in_rem
    }

    /// The `m`-th (0-based) position of segment `seg`.
    pub fn position(&self, seg: u32, m: u64) -> u64 {
        let offs = &self.offsets[seg as usize];
        let w = offs.len() as u64;
        m / w * self.total() + offs[(m % w) as usize] as u64
    }
}

/// One segment of a test: which one, and the stripe it takes its positions from.
/// Cheap to clone (the stripe is shared).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    stripe: Arc<Stripe>,
    index: u32,
}

impl Segment {
    /// Segment `index` of the stripe over `weights` (all 1 when `None`, with `count`
    /// segments). Validates everything the flags can get wrong.
    pub fn new(index: u32, count: u32, weights: Option<&[u32]>) -> Result<Segment, SegmentError> {
        if count == 0 {
            return Err(SegmentError::ZeroCount);
        }
        if index >= count {
            return Err(SegmentError::IndexTooLarge { index, count });
        }
        let ones;
        let weights = match weights {
            Some(w) => {
                if w.len() != count as usize {
                    return Err(SegmentError::WeightCount {
                        given: w.len(),
                        count,
                    });
                }
                w
            }
            None => {
                ones = vec![1u32; count as usize];
                &ones
            }
        };
        Ok(Segment {
            stripe: Arc::new(Stripe::new(weights)?),
            index,
        })
    }

    /// This segment's number (0-based).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// How many segments the test has.
    pub fn count(&self) -> u32 {
        self.stripe.count()
    }

    /// The weights of all segments.
    pub fn weights(&self) -> &[u32] {
        self.stripe.weights()
    }

    /// This segment's share of the load (its weight over the sum).
    pub fn share(&self) -> f64 {
        let total: u64 = self.weights().iter().map(|&w| w as u64).sum();
        self.weights()[self.index as usize] as f64 / total as f64
    }

    /// `1/3`, `2/4` (reduced as the weights give it: weight over sum).
    pub fn share_text(&self) -> String {
        let total: u64 = self.weights().iter().map(|&w| w as u64).sum();
        let w = self.weights()[self.index as usize] as u64;
        let g = gcd(w, total);
        format!("{}/{}", w / g, total / g)
    }

    /// `segment 2/3 (1/3 of the load)`, numbered as `--segment` numbers it (from 0).
    pub fn label(&self) -> String {
        format!(
            "segment {}/{} ({} of the load)",
            self.index,
            self.count(),
            self.share_text()
        )
    }

    /// Whether whole-test position `pos` is this segment's.
    pub fn contains(&self, pos: u64) -> bool {
        self.stripe.segment_of(pos) == self.index
    }

    /// How many of whole-test positions `0..n` are this segment's.
    pub fn count_before(&self, n: u64) -> u64 {
        self.stripe.count_before(self.index, n)
    }

    /// The whole-test position of this segment's `m`-th (0-based) position.
    pub fn position(&self, m: u64) -> u64 {
        self.stripe.position(self.index, m)
    }

    /// The VU pool of this segment for a whole-test pool of `n`: its share, rounded
    /// up, at least 1.
    pub fn pool_of(&self, n: u32) -> u32 {
        pool_share(n, self.stripe.weights(), self.index)
    }

    /// The open model's VU id space of the whole test for a pool of `max_vus`: every
    /// segment numbers its `m`-th pool VU with its `m`-th stripe position, so ids are
    /// disjoint across segments; the space is the largest id any segment uses, plus 1
    /// (`max_vus` itself when the shares round evenly).
    pub fn open_id_space(&self, max_vus: u32) -> u64 {
        (0..self.count())
            .map(|j| {
                let local = pool_share(max_vus, self.stripe.weights(), j) as u64;
                self.stripe.position(j, local - 1) + 1
            })
            .max()
            .unwrap_or(1)
            .max(max_vus as u64)
    }
}

fn pool_share(n: u32, weights: &[u32], index: u32) -> u32 {
    let total: u64 = weights.iter().map(|&w| w as u64).sum();
    let w = weights[index as usize] as u64;
    ((n as u64 * w).div_ceil(total) as u32).max(1)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a.max(1)
    } else {
        gcd(b, a % b)
    }
}

/// Where a split schedule sits in the whole test, for VU ids and feed shares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentPart {
    /// The segment.
    pub segment: Segment,
    /// VU ids of this scenario in the whole test run over `0..id_space` (every
    /// segment computes the same value).
    pub id_space: u64,
}

/// This segment's part of a whole-test schedule.
///
/// Closed model: global VU `v` is the segment's when the stripe gives it position `v`;
/// the segment runs exactly those VUs with their whole-test windows (and the same
/// iterations per VU). Open model: the `k`-th arrival of the whole schedule is the
/// segment's when the stripe gives it position `k`; pools are scaled by the share
/// (rounded up, at least 1).
pub fn split(whole: Schedule, seg: &Segment) -> Schedule {
    match whole {
        Schedule::Closed(c) => {
            let id_space = c.vus.len() as u64;
            let vus = c
                .vus
                .into_iter()
                .enumerate()
                .filter(|(v, _)| seg.contains(*v as u64))
                .map(|(_, w)| w)
                .collect();
            Schedule::Closed(ClosedSchedule {
                vus,
                iterations_per_vu: c.iterations_per_vu,
                shared_iterations: c
                    .shared_iterations
                    .map(|p| IterationPool::new(shared_iterations_of(seg, id_space, p.total()))),
                graceful_ramp_down: c.graceful_ramp_down,
                segment: Some(SegmentPart {
                    segment: seg.clone(),
                    id_space,
                }),
            })
        }
        Schedule::Open(o) => {
            let max = seg.pool_of(o.max_vus);
            let pre = seg.pool_of(o.pre_allocated_vus).min(max);
            Schedule::Open(OpenSchedule {
                segments: o.segments,
                pre_allocated_vus: pre,
                max_vus: max,
                segment: Some(SegmentPart {
                    segment: seg.clone(),
                    id_space: seg.open_id_space(o.max_vus),
                }),
            })
        }
    }
}

/// This segment's share of `total` shared iterations whose scenario has `vus` VUs in
/// the whole test. As k6's execution segments do it, only the segments the stripe
/// gives at least one VU share the iterations (a segment without VUs could not run
/// any), by a stripe over their weights: the shares add up to `total` exactly, each
/// within one of its weight's part. With a VU on every segment this is the segment's
/// count of positions `0..total` on its own stripe.
fn shared_iterations_of(seg: &Segment, vus: u64, total: u64) -> u64 {
    let stripe = &seg.stripe;
    let with_vus: Vec<u32> = (0..stripe.count())
        .filter(|&j| stripe.count_before(j, vus) > 0)
        .collect();
    let Some(mine) = with_vus.iter().position(|&j| j == seg.index) else {
        return 0;
    };
    if with_vus.len() == stripe.count() as usize {
        return seg.count_before(total);
    }
    let weights: Vec<u32> = with_vus
        .iter()
        .map(|&j| stripe.weights()[j as usize])
        .collect();
    // The weights were a valid stripe's; a subset of them is one too.
    Stripe::new(&weights).map_or(0, |s| s.count_before(mine as u32, total))
}

/// An executor's segment: the same load model, with [`split`] applied to its schedule
/// and its description, stages and VU counts those of the segment's own load.
#[derive(Debug)]
pub struct SegmentedExecutor {
    inner: Box<dyn Executor>,
    segment: Segment,
    /// The split schedule, computed once.
    schedule: Schedule,
}

impl SegmentedExecutor {
    /// Segment `segment` of `inner`.
    pub fn new(inner: Box<dyn Executor>, segment: Segment) -> Self {
        let schedule = split(inner.schedule(), &segment);
        SegmentedExecutor {
            inner,
            segment,
            schedule,
        }
    }

    /// Whether this segment has nothing to run (no VUs, or no arrivals).
    pub fn is_empty(&self) -> bool {
        match &self.schedule {
            Schedule::Closed(c) => c.vus.is_empty(),
            Schedule::Open(o) => o.total() == 0,
        }
    }

    /// The segment's level for a whole-test level: VUs as the stripe gives them (ramps
    /// activate VUs in index order), rates scaled by the share.
    fn level(&self, whole: f64) -> f64 {
        if self.inner.kind().is_open_model() {
            whole * self.segment.share()
        } else {
            self.segment.count_before(whole.max(0.0).round() as u64) as f64
        }
    }
}

impl Executor for SegmentedExecutor {
    fn kind(&self) -> ExecutorKind {
        self.inner.kind()
    }
    fn describe(&self) -> String {
        let own = match &self.schedule {
            Schedule::Closed(c) => pado_base::units::vus(c.vus.len() as f64),
            Schedule::Open(o) => format!(
                "{} of {} arrivals (VU pool {}..{})",
                o.total(),
                self.inner_total(),
                o.pre_allocated_vus,
                o.max_vus
            ),
        };
        format!(
            "{}: {own}; whole test: {}",
            self.segment.label(),
            self.inner.describe()
        )
    }
    fn duration(&self) -> Duration {
        self.inner.duration()
    }
    fn max_vus(&self) -> u32 {
        match &self.schedule {
            Schedule::Closed(c) => c.vus.len() as u32,
            Schedule::Open(o) => o.max_vus,
        }
    }
    fn id_space(&self) -> u64 {
        match &self.schedule {
            Schedule::Closed(ClosedSchedule { segment, .. })
            | Schedule::Open(OpenSchedule { segment, .. }) => {
                segment.as_ref().map_or(0, |p| p.id_space)
            }
        }
    }
    fn stages(&self) -> Vec<StageWindow> {
        self.inner
            .stages()
            .into_iter()
            .map(|w| StageWindow {
                from: self.level(w.from),
                to: self.level(w.to),
                ..w
            })
            .collect()
    }
    fn schedule(&self) -> Schedule {
        self.schedule.clone()
    }
    fn steered_start(&self) -> Option<u64> {
        // The whole test's first VUs, as the stripe gives them to this segment.
        self.inner
            .steered_start()
            .map(|v| self.segment.count_before(v))
    }
}

impl SegmentedExecutor {
    fn inner_total(&self) -> u64 {
        match self.inner.schedule() {
            Schedule::Open(o) => o.total(),
            Schedule::Closed(c) => c.vus.len() as u64,
        }
    }
}

#[cfg(test)]
mod tests;
