//! Generator self-check: was pado itself the bottleneck? Two different findings,
//! told apart because they call for different conclusions:
//!
//! - **Capped** ([`GeneratorCheck::saturated`]): the load was not delivered because
//!   of pado. Only evidence of that counts: a worker busy ≥ 90% of its CPU (it could
//!   do no more), arrivals of an open model behind schedule or dropped while pado
//!   was short of CPU, or closed-model VUs waiting on pado's late wake-ups for a
//!   large share of the latency they measured. Then throughput is capped by pado,
//!   the saturation analysis would find pado's knee, and the report says so loudly.
//! - **Delayed** ([`GeneratorCheck::delayed`]): pado waited for a CPU or its event
//!   loop woke up late (the normal case on a laptop or a CI runner with other
//!   work), but the load went out. The timings may then carry up to the lag's p99
//!   of scheduling delay; the report says that, with the figure, and keeps the
//!   target's analysis.
//!
//! Pure functions over per-second figures, so the same result directory always gives
//! the same answer.

use serde::{Deserialize, Serialize};

/// A worker counts as saturated in a second when it was on a CPU at least this share
/// of it: a single-threaded event loop at 90% has no headroom left for bursts, so its
/// VUs queue behind each other.
pub const BUSY_THRESHOLD: f64 = 0.90;
/// Run-queue wait (runnable, but another process had the CPU) at or above this share
/// of wall time means pado was starved: a response that arrived sat unread for that
/// share of the time on average.
pub const WAIT_THRESHOLD: f64 = 0.25;
/// Event-loop lag p99 above this (ms) means timers and reads fire late often enough
/// to show in latency percentiles. Far above tokio's ~1 ms timer granularity, so an
/// idle loop (0–2 ms) never reaches it.
pub const LAG_P99_THRESHOLD_MS: f64 = 10.0;
/// A second whose worst wake-up was later than this (ms) had a stall that shows in
/// any latency percentile.
pub const LAG_MAX_THRESHOLD_MS: f64 = 50.0;
/// Open model: late starts (more than 10 ms behind schedule) at or above this share of
/// started iterations are told (the timings carry the delay).
pub const LATE_SHARE_THRESHOLD: f64 = 0.01;
/// ... and at least this many of them (a handful is noise on a busy machine).
pub const LATE_MIN: u64 = 10;
/// Open model: arrivals behind schedule (late, or dropped while pado was short of
/// CPU) at or above this share of the planned ones mean the load was not delivered:
/// a tenth of the arrivals behind is a backlog, not the jitter of a busy machine.
pub const BEHIND_SHARE_THRESHOLD: f64 = 0.10;
/// Closed model: VUs wait on pado when its wake-up lag p99 is at least this share of
/// the median latency measured: each iteration then spends a material part of its
/// time waiting for pado rather than for the target. 12.5 ms against 274 ms (5%) is
/// not; 20 ms against 2 ms is.
pub const LAG_OF_LATENCY: f64 = 0.5;
/// Seconds whose figures cover less wall time than this (s) are left out of the
/// per-second rules: the last, partial flush of a run covers a few milliseconds, in
/// which a single scheduler tick decides the busy share.
pub const MIN_SPAN_S: f64 = 0.5;

/// How many affected seconds make a per-second rule fire out of `n` measured: 20% of
/// them (at least one), but never more than 5, so a long run that was saturated for a
/// sustained 5 s is told too.
pub fn seconds_needed(n: u32) -> u32 {
    ((n as f64 * 0.2).ceil() as u32).clamp(1, 5)
}

/// The generator's figures for one second of the run (merged over workers).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GenSecond {
    /// Second of the run.
    pub t: u32,
    /// Wall time one worker's figures cover (s), about 1.
    pub span_s: f64,
    /// CPU used by all workers, in cores.
    pub cores: f64,
    /// Busiest worker's CPU share of the span (0..=1).
    pub busy_max: f64,
    /// Run-queue wait over all workers' spans (0..=1), if known.
    pub wait_share: Option<f64>,
    /// Worker that waited most: its wait share, if known.
    pub wait_max: Option<f64>,
    /// Worst worker's event-loop lag p99 (ms).
    pub lag_p99_ms: f64,
    /// Worst wake-up of any worker (ms).
    pub lag_max_ms: f64,
    /// pado's own resident memory at the end of the second (bytes), if known.
    pub rss_bytes: Option<u64>,
}

impl GenSecond {
    /// Some worker was at least [`BUSY_THRESHOLD`] busy.
    pub fn busy(&self) -> bool {
        self.busy_max.min(1.0) >= BUSY_THRESHOLD
    }

    /// Some worker waited for a CPU at least [`WAIT_THRESHOLD`] of the time.
    pub fn starved(&self) -> bool {
        self.wait_max.is_some_and(|w| w >= WAIT_THRESHOLD)
    }

    /// Some wake-up came more than [`LAG_MAX_THRESHOLD_MS`] late.
    pub fn late(&self) -> bool {
        self.lag_max_ms > LAG_MAX_THRESHOLD_MS
    }

    /// A whole second, not a partial flush (the per-second rules read only these).
    pub fn is_full(&self) -> bool {
        self.span_s >= MIN_SPAN_S
    }
}

/// Everything the self-check reads besides the seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunFigures {
    /// Cores pado was allowed (0: unknown, then the worker count stands in).
    pub cores_allowed: usize,
    /// Worker threads.
    pub workers: usize,
    /// Event-loop lag p99 over every wake-up of the run (ms).
    pub lag_p99_ms: f64,
    /// Latest wake-up of the run (ms).
    pub lag_max_ms: f64,
    /// Median request latency of the run (ms), what pado's lag is judged against;
    /// `None` when nothing completed.
    pub latency_p50_ms: Option<f64>,
    /// Whether any scenario is open-model (arrival rate): only there are late starts
    /// and dropped iterations counted.
    pub open_model: bool,
    /// Iterations that started (completed or interrupted).
    pub iterations_started: u64,
    /// Open model: iterations that started more than 10 ms after their schedule.
    pub late_iterations: u64,
    /// Open model: iterations that could not start (VU pool exhausted).
    pub dropped_iterations: u64,
}

/// A rule of the self-check that held: a sign of pado under pressure. Which of them
/// mean the load was not delivered is [`Cap`]'s business.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// A worker was ≥ 90% busy in enough seconds.
    Cpu,
    /// pado waited on a run queue ≥ 25% of the time (overall, or one worker in enough
    /// seconds).
    RunQueue,
    /// Event-loop lag p99 above 10 ms, or wake-ups later than 50 ms in enough seconds.
    Lag,
    /// Open model: ≥ 1% (and ≥ 10) of iterations started late.
    LateStarts,
}

/// Evidence that the load was not delivered because of pado: what makes the
/// self-check say "capped by pado".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cap {
    /// pado's CPU was busy: a worker ≥ 90% busy in enough seconds could do no more.
    Cpu,
    /// Open model: ≥ 10% of the planned arrivals started late or were dropped while
    /// pado was short of CPU.
    ArrivalsBehind,
    /// Closed model: pado's wake-up lag (p99) was at least half the median latency
    /// measured, while it waited for a CPU or its loop ran late: VUs waited on pado.
    VusWaited,
}

/// The self-check's answer: `summary.json`'s `generator`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorCheck {
    /// Whether the load was not delivered because of pado (see [`Cap`]): throughput is
    /// then capped by pado and the results describe pado at least as much as the
    /// target.
    pub saturated: bool,
    /// The evidence that pado capped the load (empty unless `saturated`).
    #[serde(default)]
    pub capped_by: Vec<Cap>,
    /// pado was under pressure (a [`Rule`] held) but the load went out: the timings
    /// may carry up to [`GeneratorCheck::scheduling_delay_ms`] of scheduling delay,
    /// and the target's analysis stands.
    #[serde(default)]
    pub delayed: bool,
    /// The scheduling delay the timings may carry (ms): the event-loop lag p99.
    #[serde(default)]
    pub scheduling_delay_ms: f64,
    /// Median request latency the lag was judged against (ms).
    #[serde(default)]
    pub latency_p50_ms: Option<f64>,
    /// Which rules held.
    pub rules: Vec<Rule>,
    /// The finding in one plain sentence (the loud one when saturated).
    pub message: String,
    /// Seconds with generator figures (partial seconds left out).
    pub seconds: u32,
    /// Seconds in which any per-second condition held (busy, waiting, or lag).
    pub seconds_affected: u32,
    /// Worker threads.
    pub workers: usize,
    /// Cores pado was allowed to use.
    pub cores_allowed: usize,
    /// Mean CPU used, in cores.
    pub cpu_cores_mean: f64,
    /// Highest CPU used in a second, in cores.
    pub cpu_cores_peak: f64,
    /// Mean CPU as a share of the allowed cores (0..=1).
    pub cpu_share_mean: f64,
    /// Peak CPU as a share of the allowed cores (0..=1).
    pub cpu_share_peak: f64,
    /// Busiest worker's CPU share, mean over seconds (0..=1).
    pub busiest_worker_mean: f64,
    /// Busiest worker's CPU share in its busiest second (0..=1).
    pub busiest_worker_peak: f64,
    /// Seconds in which some worker was ≥ 90% busy.
    pub busy_seconds: u32,
    /// Run-queue wait over all workers' wall time (0..=1); `None` where the kernel
    /// does not report it.
    pub run_queue_wait_share: Option<f64>,
    /// Highest one worker waited in a second (0..=1).
    pub run_queue_wait_peak: Option<f64>,
    /// Seconds in which some worker waited ≥ 25% of the time.
    pub wait_seconds: u32,
    /// Event-loop lag p99 over the run (ms).
    pub lag_p99_ms: f64,
    /// Latest event-loop wake-up (ms).
    pub lag_max_ms: f64,
    /// Seconds with a wake-up later than 50 ms.
    pub lag_seconds: u32,
    /// Open model: iterations started late.
    pub late_iterations: u64,
    /// Open model: late share of the planned arrivals (started or dropped, 0..=1).
    pub late_share: f64,
    /// Open model: iterations dropped (VU pool exhausted; often the target's doing,
    /// told here for context).
    pub dropped_iterations: u64,
}

impl GeneratorCheck {
    /// One or two words for the generator's state, for tables and the figures line:
    /// `saturated` when its CPU was busy, `starved` when it could not deliver the
    /// load for want of CPU it did not get (so a row reading 0.0 cores is not called
    /// saturated), `delayed` when only the timings carry its scheduling delay, empty
    /// when it had headroom.
    pub fn state_word(&self) -> &'static str {
        if self.capped_by.contains(&Cap::Cpu) {
            "saturated"
        } else if self.saturated {
            "starved"
        } else if self.delayed {
            "delayed"
        } else {
            ""
        }
    }
}

/// A share as a whole percentage, bounded so a glitch never prints a huge number.
fn pct(v: f64) -> String {
    pado_base::units::percent(v.clamp(0.0, 9.99))
}

use pado_base::units::ms_short as ms;

/// A lag or delay in ms to one decimal without a trailing `.0` (`12.5 ms`, `84 ms`):
/// the scheduling delay the note names must not round 12.5 to 12.
pub fn lag_ms(v: f64) -> String {
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    };
    format!("{} ms", s.strip_suffix(".0").unwrap_or(&s))
}

/// Cores used, with enough digits that a light load does not read as 0.0.
pub fn cores_used(x: f64) -> String {
    if x > 0.0 && x < 0.095 {
        format!("{x:.2}")
    } else {
        format!("{x:.1}")
    }
}

/// `used` cores of `allowed` in words (`0.01 of 1 core`, `1.9 of 2 cores`).
pub fn of_cores(used: f64, allowed: usize) -> String {
    let unit = if allowed == 1 { "core" } else { "cores" };
    format!("{} of {allowed} {unit}", cores_used(used))
}

/// Decide from per-second figures whether the generator was saturated or behind.
/// `None` when no second has generator figures (a result directory written before
/// pado measured itself).
pub fn check(seconds: &[GenSecond], run: &RunFigures) -> Option<GeneratorCheck> {
    let full: Vec<&GenSecond> = seconds.iter().filter(|s| s.is_full()).collect();
    // A run shorter than half a second still gets its one partial second.
    let used: Vec<&GenSecond> = if full.is_empty() {
        seconds.iter().filter(|s| s.span_s > 0.0).collect()
    } else {
        full
    };
    if used.is_empty() {
        return None;
    }
    let n = used.len() as u32;
    let need = seconds_needed(n);
    let cores_allowed = if run.cores_allowed > 0 {
        run.cores_allowed
    } else {
        run.workers.max(1)
    };
    let busy = |s: &GenSecond| s.busy_max.min(1.0);
    let busy_seconds = used.iter().filter(|s| s.busy()).count() as u32;
    let wait_seconds = used.iter().filter(|s| s.starved()).count() as u32;
    let lag_seconds = used.iter().filter(|s| s.late()).count() as u32;
    let seconds_affected = used
        .iter()
        .filter(|s| s.busy() || s.starved() || s.late() || s.lag_p99_ms > LAG_P99_THRESHOLD_MS)
        .count() as u32;
    let mean = |f: &dyn Fn(&GenSecond) -> f64| used.iter().map(|s| f(s)).sum::<f64>() / n as f64;
    let peak = |f: &dyn Fn(&GenSecond) -> f64| used.iter().map(|s| f(s)).fold(0.0, f64::max);
    let cpu_cores_mean = mean(&|s| s.cores);
    let cpu_cores_peak = peak(&|s| s.cores);
    // Wait: weighted by each second's span, over the seconds that know it.
    let known: Vec<&&GenSecond> = used.iter().filter(|s| s.wait_share.is_some()).collect();
    let run_queue_wait_share = (!known.is_empty()).then(|| {
        let span: f64 = known.iter().map(|s| s.span_s).sum();
        known
            .iter()
            .map(|s| s.wait_share.unwrap_or(0.0) * s.span_s)
            .sum::<f64>()
            / span.max(1e-9)
    });
    let run_queue_wait_peak = used
        .iter()
        .filter_map(|s| s.wait_max)
        .fold(None, |m: Option<f64>, w| Some(m.map_or(w, |m| m.max(w))));
    // Of the planned arrivals (started or dropped): a late arrival that then found
    // no free VU is counted late and dropped, so a share of those started alone can
    // pass 100%.
    let planned = run.iterations_started + run.dropped_iterations;
    let late_share = pado_base::units::share(run.late_iterations, planned).min(1.0);

    let mut rules = Vec::new();
    if busy_seconds >= need {
        rules.push(Rule::Cpu);
    }
    if run_queue_wait_share.is_some_and(|w| w >= WAIT_THRESHOLD) || wait_seconds >= need {
        rules.push(Rule::RunQueue);
    }
    if run.lag_p99_ms > LAG_P99_THRESHOLD_MS || lag_seconds >= need {
        rules.push(Rule::Lag);
    }
    if run.open_model && run.late_iterations >= LATE_MIN && late_share >= LATE_SHARE_THRESHOLD {
        rules.push(Rule::LateStarts);
    }
    let capped_by = caps(&rules, run);
    let saturated = !capped_by.is_empty();
    let mut c = GeneratorCheck {
        saturated,
        delayed: !saturated && !rules.is_empty(),
        capped_by,
        scheduling_delay_ms: run.lag_p99_ms,
        latency_p50_ms: run.latency_p50_ms,
        rules,
        message: String::new(),
        seconds: n,
        seconds_affected,
        workers: run.workers,
        cores_allowed,
        cpu_cores_mean,
        cpu_cores_peak,
        cpu_share_mean: cpu_cores_mean / cores_allowed as f64,
        cpu_share_peak: cpu_cores_peak / cores_allowed as f64,
        busiest_worker_mean: mean(&busy),
        busiest_worker_peak: peak(&busy),
        busy_seconds,
        run_queue_wait_share,
        run_queue_wait_peak,
        wait_seconds,
        lag_p99_ms: run.lag_p99_ms,
        lag_max_ms: run.lag_max_ms,
        lag_seconds,
        late_iterations: run.late_iterations,
        late_share,
        dropped_iterations: run.dropped_iterations,
    };
    c.message = message(&c);
    Some(c)
}

/// The evidence, among the rules that held, that the load was not delivered because
/// of pado. Waiting for a CPU or a late loop alone is not: the load may still have
/// gone out, only later by the lag (the timings say so instead).
fn caps(rules: &[Rule], run: &RunFigures) -> Vec<Cap> {
    let mut out = Vec::new();
    let busy = rules.contains(&Rule::Cpu);
    if busy {
        out.push(Cap::Cpu);
    }
    let pressed = rules.contains(&Rule::RunQueue) || rules.contains(&Rule::Lag);
    // pado's late wake-ups against what the target took: a material share of each
    // request's time spent waiting for pado.
    let lag_material = pressed
        && run
            .latency_p50_ms
            .is_some_and(|l| run.lag_p99_ms >= LAG_OF_LATENCY * l);
    if run.open_model {
        // Late starts are always the scheduler's (pado's) delay; dropped arrivals are
        // pado's only when it was short of CPU, else the target held the VUs.
        let dropped_by_pado = if busy || lag_material {
            run.dropped_iterations
        } else {
            0
        };
        let planned = (run.iterations_started + run.dropped_iterations).max(1);
        let behind = (run.late_iterations + dropped_by_pado).min(planned);
        if behind >= LATE_MIN && behind as f64 / planned as f64 >= BEHIND_SHARE_THRESHOLD {
            out.push(Cap::ArrivalsBehind);
        }
    } else if lag_material {
        out.push(Cap::VusWaited);
    }
    out
}

/// The plain sentence: by how much the generator was in the way, and what to do; or,
/// when it was not, the figures that show it had headroom.
fn message(c: &GeneratorCheck) -> String {
    if c.rules.is_empty() {
        let wait = match c.run_queue_wait_share {
            Some(w) => format!(", waited for a CPU {} of the time", pct(w)),
            None => String::new(),
        };
        return format!(
            "pado had headroom: CPU {} of {} allowed cores on average (busiest worker {} at peak){wait}, event loop lag p99 {} (max {})",
            cores_used(c.cpu_cores_mean),
            c.cores_allowed,
            pct(c.busiest_worker_peak),
            ms(c.lag_p99_ms),
            ms(c.lag_max_ms)
        );
    }
    let mut what = Vec::new();
    if c.rules.contains(&Rule::Cpu) {
        what.push(format!(
            "pado's busiest worker was ≥ 90% busy for {} of {} s (peak {}, {})",
            c.busy_seconds,
            c.seconds,
            pct(c.busiest_worker_peak),
            of_cores(c.cpu_cores_peak, c.cores_allowed)
        ));
    }
    if c.rules.contains(&Rule::RunQueue) {
        what.push(format!(
            "pado waited for a CPU {} of the time (runnable but not running; {} in its worst second, {} of {} s ≥ 25%): other processes held its cores",
            pct(c.run_queue_wait_share.unwrap_or(0.0)),
            pct(c.run_queue_wait_peak.unwrap_or(0.0)),
            c.wait_seconds,
            c.seconds
        ));
    }
    what.push(format!(
        "its event loop ran up to {} late (p99 {})",
        lag_ms(c.lag_max_ms),
        lag_ms(c.lag_p99_ms)
    ));
    if c.rules.contains(&Rule::LateStarts) || c.capped_by.contains(&Cap::ArrivalsBehind) {
        what.push(format!(
            "{} iterations ({:.1}%) started more than 10 ms behind schedule{}",
            c.late_iterations,
            c.late_share * 100.0,
            if c.dropped_iterations > 0 {
                format!(" and {} were dropped", c.dropped_iterations)
            } else {
                String::new()
            }
        ));
    }
    let against = match c.latency_p50_ms {
        Some(l) => format!(" against a median latency of {}", ms(l)),
        None => String::new(),
    };
    if !c.saturated {
        // The normal case on a shared machine: the load went out, later by the lag.
        return format!(
            "{}: timings may carry up to {} of scheduling delay (pado's event-loop lag p99){against}. The load was delivered (pado used {}), so the target's analysis stands. For cleaner timings, give pado cores of its own.",
            what.join("; "),
            lag_ms(c.scheduling_delay_ms),
            of_cores(c.cpu_cores_mean, c.cores_allowed)
        );
    }
    let mut why = Vec::new();
    for cap in &c.capped_by {
        why.push(match cap {
            Cap::Cpu => "pado's CPU was busy".to_string(),
            Cap::ArrivalsBehind => "arrivals fell behind schedule for want of pado".to_string(),
            Cap::VusWaited => format!(
                "VUs waited on pado: its lag p99 ({}) is at least half the median latency ({})",
                lag_ms(c.lag_p99_ms),
                ms(c.latency_p50_ms.unwrap_or(0.0))
            ),
        });
    }
    let mut advice = Vec::new();
    if c.rules.contains(&Rule::RunQueue) {
        advice.push("give pado cores of its own (stop competing processes, run the target on another machine)");
    }
    if c.rules.iter().any(|r| *r != Rule::RunQueue) {
        advice.push("use more cores or generators, or fewer VUs");
    }
    format!(
        "{}: {}, so throughput is capped by pado, not the target, and latencies include up to that much generator delay. {}.",
        what.join("; "),
        why.join("; "),
        capitalise(&advice.join("; "))
    )
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t: u32, busy: f64, wait: f64, lag_p99: f64, lag_max: f64) -> GenSecond {
        GenSecond {
            t,
            span_s: 1.0,
            cores: busy,
            busy_max: busy,
            wait_share: Some(wait),
            wait_max: Some(wait),
            lag_p99_ms: lag_p99,
            lag_max_ms: lag_max,
            rss_bytes: None,
        }
    }

    fn run(lag_p99: f64, lag_max: f64) -> RunFigures {
        RunFigures {
            cores_allowed: 2,
            workers: 2,
            lag_p99_ms: lag_p99,
            lag_max_ms: lag_max,
            iterations_started: 10_000,
            ..Default::default()
        }
    }

    #[test]
    fn an_idle_generator_is_not_saturated() {
        let secs: Vec<_> = (0..40).map(|t| second(t, 0.2, 0.02, 1.5, 4.0)).collect();
        let c = check(&secs, &run(1.2, 6.0)).unwrap();
        assert!(!c.saturated, "{c:?}");
        assert!(c.rules.is_empty());
        assert_eq!((c.seconds, c.seconds_affected, c.busy_seconds), (40, 0, 0));
        assert!((c.cpu_share_mean - 0.1).abs() < 1e-9);
        assert!(c.message.starts_with("pado had headroom"), "{}", c.message);
    }

    /// The example from the brief: pegged for 38 of 40 s, loop up to 84 ms late.
    #[test]
    fn a_pegged_worker_is_saturated_and_says_by_how_much() {
        let secs: Vec<_> = (0..40)
            .map(|t| {
                if t < 38 {
                    second(t, 1.0, 0.03, 31.0, if t == 7 { 84.0 } else { 40.0 })
                } else {
                    second(t, 0.5, 0.0, 2.0, 3.0)
                }
            })
            .collect();
        let c = check(&secs, &run(31.0, 84.0)).unwrap();
        assert!(c.saturated);
        assert_eq!(c.rules, [Rule::Cpu, Rule::Lag]);
        assert_eq!(c.busy_seconds, 38);
        assert_eq!(c.lag_seconds, 1);
        assert_eq!(c.seconds_affected, 38);
        assert!((c.busiest_worker_peak - 1.0).abs() < 1e-9);
        assert!(
            c.message
                .starts_with("pado's busiest worker was ≥ 90% busy for 38 of 40 s"),
            "{}",
            c.message
        );
        assert!(
            c.message.contains("ran up to 84 ms late (p99 31 ms)"),
            "{}",
            c.message
        );
        assert!(c.message.contains("capped by pado, not the target"));
        assert!(c
            .message
            .ends_with("Use more cores or generators, or fewer VUs."));
    }

    #[test]
    fn busy_seconds_must_be_a_meaningful_share() {
        assert_eq!(seconds_needed(3), 1);
        assert_eq!(seconds_needed(10), 2);
        assert_eq!(seconds_needed(100), 5);
        assert_eq!(seconds_needed(3600), 5);
        // 4 busy seconds of 100: under 5 s and under 20%.
        let mut secs: Vec<_> = (0..100).map(|t| second(t, 0.3, 0.0, 1.0, 2.0)).collect();
        for s in secs.iter_mut().take(4) {
            s.busy_max = 0.95;
        }
        assert!(!check(&secs, &run(1.0, 2.0)).unwrap().saturated);
        // A fifth sustained second is enough in a long run.
        secs[50].busy_max = 0.91;
        let c = check(&secs, &run(1.0, 2.0)).unwrap();
        assert_eq!(c.rules, [Rule::Cpu]);
        // 89% is not saturated.
        for s in secs.iter_mut() {
            s.busy_max = s.busy_max.min(0.89);
        }
        assert!(!check(&secs, &run(1.0, 2.0)).unwrap().saturated);
    }

    #[test]
    fn waiting_for_a_cpu_is_a_delay_not_a_cap_unless_vus_wait_on_pado() {
        // Pinned to one core with two busy loops: a third of the CPU, two thirds
        // waiting, loop a few ms late; the target answers in 100 ms.
        let secs: Vec<_> = (0..4).map(|t| second(t, 0.31, 0.63, 11.0, 12.0)).collect();
        let mut r = run(9.0, 12.0);
        r.latency_p50_ms = Some(100.0);
        let c = check(&secs, &r).unwrap();
        assert!(!c.saturated && c.delayed, "{c:?}");
        assert_eq!(c.rules, [Rule::RunQueue]);
        assert!(c.capped_by.is_empty());
        assert!((c.run_queue_wait_share.unwrap() - 0.63).abs() < 1e-9);
        assert_eq!(c.wait_seconds, 4);
        assert!(
            c.message.contains("waited for a CPU 63% of the time"),
            "{}",
            c.message
        );
        assert!(
            c.message
                .contains("timings may carry up to 9 ms of scheduling delay"),
            "{}",
            c.message
        );
        assert!(c.message.contains("cores of its own"), "{}", c.message);
        assert!(!c.message.contains("capped by pado"), "{}", c.message);
        assert_eq!(c.state_word(), "delayed");
        // The same starved pado against a target answering in 2 ms: its 9 ms lag is
        // most of each request's time, so the VUs waited on pado.
        r.latency_p50_ms = Some(2.0);
        let c = check(&secs, &r).unwrap();
        assert!(c.saturated && !c.delayed, "{c:?}");
        assert_eq!(c.capped_by, [Cap::VusWaited]);
        assert!(c.message.contains("capped by pado"), "{}", c.message);
        assert!(
            c.message.contains("VUs waited on pado: its lag p99 (9 ms)"),
            "{}",
            c.message
        );
        // It used 0.31 cores: starved, not "saturated".
        assert_eq!(c.state_word(), "starved");
        // Just under the line overall and in every second: nothing held.
        let secs: Vec<_> = (0..4).map(|t| second(t, 0.3, 0.24, 2.0, 3.0)).collect();
        let c = check(&secs, &run(2.0, 3.0)).unwrap();
        assert!(!c.saturated && !c.delayed, "{c:?}");
    }

    /// Issue #28: a Spring Boot service on a busy 2-core machine. pado used about 1%
    /// of a core; scheduler delay alone gave an event-loop lag p99 of 12.5 ms against
    /// 274 ms latencies. The load was delivered: a delay note, no cap.
    #[test]
    fn scheduler_delay_on_a_busy_machine_is_a_note_with_its_figure() {
        let secs: Vec<_> = (0..30)
            .map(|t| GenSecond {
                t,
                span_s: 1.0,
                cores: 0.01,
                busy_max: 0.012,
                wait_share: Some(0.05),
                wait_max: Some(0.08),
                lag_p99_ms: 12.5,
                lag_max_ms: 40.0,
                rss_bytes: None,
            })
            .collect();
        for open_model in [false, true] {
            let r = RunFigures {
                cores_allowed: 2,
                workers: 2,
                lag_p99_ms: 12.5,
                lag_max_ms: 40.0,
                latency_p50_ms: Some(274.0),
                open_model,
                iterations_started: 3_000,
                // Open model: the wake-ups past 10 ms left 2% of arrivals late.
                late_iterations: if open_model { 60 } else { 0 },
                // The slow target held the VUs: the pool ran out now and then.
                dropped_iterations: if open_model { 400 } else { 0 },
            };
            let c = check(&secs, &r).unwrap();
            assert!(!c.saturated, "open {open_model}: {c:?}");
            assert!(c.capped_by.is_empty());
            assert!(c.delayed);
            assert!(c.rules.contains(&Rule::Lag));
            assert_eq!(c.scheduling_delay_ms, 12.5);
            assert!(
                c.message
                    .contains("timings may carry up to 12.5 ms of scheduling delay"),
                "{}",
                c.message
            );
            assert!(
                c.message.contains("against a median latency of 274 ms"),
                "{}",
                c.message
            );
            assert!(
                c.message.contains("pado used 0.01 of 2 cores"),
                "{}",
                c.message
            );
            assert!(!c.message.contains("capped by pado"), "{}", c.message);
            assert!(!c.message.contains("0.0 of"), "{}", c.message);
        }
    }

    /// Busy CPU and arrivals behind schedule: the load was not delivered, and the
    /// sentence says why with the figures.
    #[test]
    fn busy_cpu_with_late_and_dropped_arrivals_is_capped_with_evidence() {
        let secs: Vec<_> = (0..10).map(|t| second(t, 0.97, 0.02, 35.0, 80.0)).collect();
        let r = RunFigures {
            open_model: true,
            latency_p50_ms: Some(20.0),
            iterations_started: 8_000,
            late_iterations: 2_400,
            dropped_iterations: 2_000,
            ..run(35.0, 80.0)
        };
        let c = check(&secs, &r).unwrap();
        assert!(c.saturated && !c.delayed, "{c:?}");
        assert_eq!(c.capped_by, [Cap::Cpu, Cap::ArrivalsBehind]);
        assert_eq!(c.state_word(), "saturated");
        for part in [
            "busiest worker was ≥ 90% busy for 10 of 10 s",
            "2400 iterations (24.0%) started more than 10 ms behind schedule and 2000 were dropped",
            "pado's CPU was busy; arrivals fell behind schedule for want of pado",
            "throughput is capped by pado, not the target",
        ] {
            assert!(c.message.contains(part), "{part} in {}", c.message);
        }
        // The same late and dropped arrivals from an idle pado whose loop was on time:
        // 2400 late starts are still a backlog (24%), the drops are not counted.
        let idle: Vec<_> = (0..10).map(|t| second(t, 0.2, 0.0, 1.0, 3.0)).collect();
        let quiet = RunFigures {
            lag_p99_ms: 1.0,
            lag_max_ms: 3.0,
            ..r
        };
        let c = check(&idle, &quiet).unwrap();
        assert_eq!(c.capped_by, [Cap::ArrivalsBehind]);
        // Few late starts and many drops from a target that held the VUs: no cap
        // (the drops are the target's: pado was idle and on time).
        let target_slow = RunFigures {
            late_iterations: 50,
            ..quiet
        };
        let c = check(&idle, &target_slow).unwrap();
        assert!(!c.saturated, "{c:?}");
        assert!(c.capped_by.is_empty());
    }

    #[test]
    fn lag_rules_use_the_run_p99_and_repeated_stalls() {
        let secs: Vec<_> = (0..20).map(|t| second(t, 0.3, 0.0, 2.0, 5.0)).collect();
        assert!(check(&secs, &run(10.0, 5.0)).unwrap().rules.is_empty());
        assert_eq!(check(&secs, &run(10.5, 12.0)).unwrap().rules, [Rule::Lag]);
        // One 60 ms stall in 20 s is not a pattern; four are (20%).
        let mut secs = secs;
        secs[3].lag_max_ms = 60.0;
        assert!(check(&secs, &run(2.0, 60.0)).unwrap().rules.is_empty());
        for t in [5, 9, 12] {
            secs[t].lag_max_ms = 55.0;
        }
        let c = check(&secs, &run(2.0, 60.0)).unwrap();
        assert_eq!(
            (c.rules.as_slice(), c.lag_seconds),
            ([Rule::Lag].as_slice(), 4)
        );
    }

    #[test]
    fn late_starts_count_only_for_open_model_runs() {
        let secs: Vec<_> = (0..10).map(|t| second(t, 0.3, 0.0, 2.0, 5.0)).collect();
        let mut r = run(2.0, 5.0);
        r.late_iterations = 200;
        r.dropped_iterations = 7;
        assert!(check(&secs, &r).unwrap().rules.is_empty(), "closed model");
        r.open_model = true;
        let c = check(&secs, &r).unwrap();
        assert_eq!(c.rules, [Rule::LateStarts]);
        // 2% late is told, but the load went out: a delay, not a cap.
        assert!(c.delayed && !c.saturated, "{c:?}");
        assert!(
            c.message.contains(
                "200 iterations (2.0%) started more than 10 ms behind schedule and 7 were dropped"
            ),
            "{}",
            c.message
        );
        r.late_iterations = 1_100; // 11%: a backlog
        let c = check(&secs, &r).unwrap();
        assert_eq!(c.capped_by, [Cap::ArrivalsBehind]);
        r.late_iterations = 99; // under 1%
        assert!(check(&secs, &r).unwrap().rules.is_empty());
        r.iterations_started = 500;
        r.late_iterations = 9; // 1.8%, but fewer than 10
        assert!(check(&secs, &r).unwrap().rules.is_empty());
    }

    #[test]
    fn partial_and_missing_seconds() {
        assert!(check(&[], &run(0.0, 0.0)).is_none());
        // The run's last flush covers 2 ms at "500%": left out.
        let mut secs: Vec<_> = (0..5).map(|t| second(t, 0.2, 0.0, 1.0, 2.0)).collect();
        secs.push(GenSecond {
            t: 5,
            span_s: 0.002,
            busy_max: 5.0,
            wait_max: Some(0.9),
            wait_share: Some(0.9),
            ..Default::default()
        });
        let c = check(&secs, &run(1.0, 2.0)).unwrap();
        assert!(!c.saturated, "{c:?}");
        assert_eq!(c.seconds, 5);
        // Without run-queue figures (getrusage fallback) the rest still decides.
        for s in &mut secs {
            s.wait_share = None;
            s.wait_max = None;
            s.busy_max = 1.0;
        }
        let c = check(&secs, &run(1.0, 2.0)).unwrap();
        assert_eq!(c.rules, [Rule::Cpu]);
        assert_eq!(c.run_queue_wait_share, None);
        // Unknown allowed cores: the workers stand in.
        let mut r = run(1.0, 2.0);
        r.cores_allowed = 0;
        assert_eq!(check(&secs, &r).unwrap().cores_allowed, 2);
    }
}
