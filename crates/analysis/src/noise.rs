//! Telling change from noise between two runs: a Mann-Whitney U test on per-second
//! samples (throughput, latency percentiles, error rate of each second). It assumes
//! no distribution, which per-second latencies rarely follow, and is robust to the
//! outlier seconds every load test has.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// The verdict on one metric between a baseline and a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Shift {
    /// Two-sided p-value of the rank test (1.0 when the samples cannot be judged).
    pub p_value: f64,
    /// Whether the difference is significant at `alpha` (never when not `judged`).
    pub significant: bool,
    /// Finite samples on each side (NaN and infinities are left out before ranking).
    pub n: (usize, usize),
    /// What those samples are worth as independent ones, after the runs of similar
    /// seconds (lag-1 autocorrelation of their ranks, pooled over both sides).
    pub effective_n: (f64, f64),
    /// Probability that a candidate sample exceeds a baseline one (ties count half):
    /// 0.5 is no shift, above 0.5 the candidate's values are higher. The direction of
    /// the shift, from the very samples the p-value is computed on.
    pub superiority: f64,
    /// Whether the samples could show a significant difference at all: even a
    /// complete separation of too few (effective) samples is not significant, and
    /// "within noise" would then be a claim the test cannot make.
    pub judged: bool,
}

impl Shift {
    /// Whether the candidate's values are higher than the baseline's (`Some(true)`),
    /// lower (`Some(false)`) or neither.
    pub fn candidate_higher(&self) -> Option<bool> {
        if self.superiority > 0.5 {
            Some(true)
        } else if self.superiority < 0.5 {
            Some(false)
        } else {
            None
        }
    }
}

/// The method's name, printed with every comparison.
pub const METHOD: &str = "Mann-Whitney U test on per-second values, two-sided, α = 0.05, \
variance widened for runs of similar seconds (effective sample size from the lag-1 \
autocorrelation of their ranks); when too few effective seconds for ranks to decide, \
Welch's t-test on the means at the same effective sizes; direction from the same seconds";

/// Significance level.
pub const ALPHA: f64 = 0.05;

/// Standard normal CDF.
pub(crate) fn normal_cdf(z: f64) -> f64 {
    Normal::standard().cdf(z)
}

/// Two-sided p-value of Student's t statistic `t` with `df` degrees of freedom
/// (fractional ones too, as Welch–Satterthwaite gives); 1.0 when `df` is not
/// positive.
pub(crate) fn t_two_sided(t: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) if df.is_finite() => (2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0),
        _ => 1.0,
    }
}

/// Lag-1 autocorrelation of a series (0 for fewer than 3 values or a flat series).
///
/// Per-second figures of a load test are not independent: a slow second is usually
/// followed by another (a GC pause, a queue draining). Tests that treat them as
/// independent samples come out far too sure of themselves.
pub fn lag1_autocorrelation(values: &[f64]) -> f64 {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let n = v.len();
    if n < 3 {
        return 0.0;
    }
    let m = v.iter().sum::<f64>() / n as f64;
    let var: f64 = v.iter().map(|x| (x - m).powi(2)).sum();
    if var <= 0.0 {
        return 0.0;
    }
    let cov: f64 = v.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum();
    (cov / var).clamp(-1.0, 1.0)
}

/// How many independent samples a series of `n` autocorrelated values is worth:
/// `n · (1 − r₁) / (1 + r₁)` for an AR(1) process with lag-1 autocorrelation `r₁`
/// (negative `r₁` is taken as 0, so the answer is never above `n`). Used by the rank
/// test and the drift regression so that their p-values account for runs of similar
/// seconds.
pub fn effective_sample_size(values: &[f64]) -> f64 {
    let n = values.iter().filter(|x| x.is_finite()).count() as f64;
    worth(n, unbiased_lag1(lag1_autocorrelation(values), n))
}

/// The lag-1 autocorrelation `r` estimated from series of about `n` values, with
/// its small-sample bias taken back: the estimate falls short of the true `φ` by
/// about `(1 + 4φ) / n` (Marriott and Pope, 1954), so ten seconds of a strongly
/// correlated run look far more independent than they are, and a test on them far
/// too sure of itself.
fn unbiased_lag1(r: f64, n: f64) -> f64 {
    if n < 3.0 {
        return r;
    }
    r + (1.0 + 4.0 * r.max(0.0)) / n
}

/// `n · (1 − r) / (1 + r)` with `r` clamped to `[0, 0.99]`.
fn worth(n: f64, r: f64) -> f64 {
    let r = r.clamp(0.0, 0.99);
    (n * (1.0 - r) / (1.0 + r)).min(n)
}

/// Exact two-sided p-value of a complete separation of `⌊e1⌋` and `⌊e2⌋` values:
/// `2 / C(e1 + e2, e1)`, the least any rank test on so few can give.
fn exact_separation_p(e1: f64, e2: f64) -> f64 {
    let (k, m) = (e1.floor().max(1.0), e2.floor().max(1.0));
    // C(k + m, k) as a product, stopping once it is far past what α needs.
    let mut c = 1.0;
    let mut i = 1.0;
    while i <= k && c < 1e12 {
        c = c * (m + i) / i;
        i += 1.0;
    }
    (2.0 / c).min(1.0)
}

/// Standard deviation of the normalised statistic `U / (n1·n2)` under "no
/// difference", for (effective) sizes `e1`, `e2` and the tie factor.
fn auc_sd(e1: f64, e2: f64, tie_factor: f64) -> f64 {
    ((e1 + e2 + 1.0) / (12.0 * e1 * e2) * tie_factor)
        .max(0.0)
        .sqrt()
}

/// Fewest finite seconds a side for the t-test on the means: its spread estimate
/// needs a few values, and normality is a leap on fewer.
pub const MIN_SECONDS_FOR_MEANS: usize = 5;

/// Welch's t-test on the means of `a` and `b`, each mean's variance taken at the
/// effective size (`s² / e`) and the Welch–Satterthwaite degrees of freedom from
/// `e − 1` a side (at least one). Two-sided p-value; `None` when a side has fewer
/// than [`MIN_SECONDS_FOR_MEANS`] values or neither side varies.
fn welch_on_means(a: &[f64], b: &[f64], e1: f64, e2: f64) -> Option<f64> {
    if a.len() < MIN_SECONDS_FOR_MEANS || b.len() < MIN_SECONDS_FOR_MEANS {
        return None;
    }
    let mean_var = |x: &[f64]| {
        let n = x.len() as f64;
        let m = x.iter().sum::<f64>() / n;
        let var = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0);
        (m, var)
    };
    let ((m1, s1), (m2, s2)) = (mean_var(a), mean_var(b));
    let (v1, v2) = (s1 / e1, s2 / e2);
    let v = v1 + v2;
    if !(v > 0.0 && v.is_finite()) {
        return None;
    }
    // Welch–Satterthwaite, never below one degree of freedom: a side worth a single
    // sample still has the spread of its seconds, and at one degree the t
    // distribution (a Cauchy) asks for a gap of 12.7 standard errors.
    let dof = |e: f64| (e - 1.0).max(f64::MIN_POSITIVE);
    let df = (v * v / (v1 * v1 / dof(e1) + v2 * v2 / dof(e2))).max(1.0);
    Some(t_two_sided((m2 - m1) / v.sqrt(), df))
}

/// Mann-Whitney U test with the normal approximation, tie and continuity
/// correction, on the finite values of `a` (baseline) and `b` (candidate), each in
/// time order.
///
/// Per-second values are not independent, so the variance of the statistic is taken
/// at the effective sample sizes rather than the raw counts: the lag-1
/// autocorrelation of each side's ranks (ranks, so that one outlier second cannot
/// hide a slow drift), pooled over both sides (one estimate from twice the data,
/// far steadier on short runs), turned into `n · (1 − r) / (1 + r)` as in
/// [`effective_sample_size`].
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Shift {
    // (value, side, position in time within its side)
    let mut all: Vec<(f64, u8, usize)> = Vec::with_capacity(a.len() + b.len());
    for (side, xs) in [(0u8, a), (1u8, b)] {
        all.extend(
            xs.iter()
                .copied()
                .filter(|v| v.is_finite())
                .enumerate()
                .map(|(i, v)| (v, side, i)),
        );
    }
    let n1 = all.iter().filter(|x| x.1 == 0).count();
    let n2 = all.len() - n1;
    let not_judged = |superiority: f64, effective_n: (f64, f64)| Shift {
        p_value: 1.0,
        significant: false,
        n: (n1, n2),
        effective_n,
        superiority,
        judged: false,
    };
    if n1 == 0 || n2 == 0 {
        return not_judged(0.5, (n1 as f64, n2 as f64));
    }
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let mut ranks = vec![0.0; n];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for x in ranks.iter_mut().take(j + 1).skip(i) {
            *x = r;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    // Each side's ranks back in time order.
    let mut side_ranks = [vec![0.0; n1], vec![0.0; n2]];
    for ((_, side, pos), r) in all.iter().zip(&ranks) {
        side_ranks[*side as usize][*pos] = *r;
    }
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let r1: f64 = side_ranks[0].iter().sum();
    let u1 = r1 - n1f * (n1f + 1.0) / 2.0;
    let pairs = n1f * n2f;
    let superiority = 1.0 - u1 / pairs;
    // Pooled lag-1 autocorrelation, each side weighted by its number of lags.
    let (w1, w2) = ((n1f - 1.0).max(0.0), (n2f - 1.0).max(0.0));
    let r = if w1 + w2 > 0.0 {
        (lag1_autocorrelation(&side_ranks[0]) * w1 + lag1_autocorrelation(&side_ranks[1]) * w2)
            / (w1 + w2)
    } else {
        0.0
    };
    let r = unbiased_lag1(r, (n1f + n2f) / 2.0);
    let (e1, e2) = (worth(n1f, r).max(1.0), worth(n2f, r).max(1.0));
    let nf = n as f64;
    // Continuity correction: U moves in steps of 1.
    let cc = 0.5 / pairs;
    // The smallest p-value these sizes allow: the exact one of a complete separation
    // (the normal approximation is far too sure of itself on a handful of values).
    let floor_p = exact_separation_p(e1, e2);
    let best_z = (0.5 - cc) / auc_sd(e1, e2, 1.0);
    let best_p = (2.0 * (1.0 - normal_cdf(best_z))).max(floor_p);
    let judged = n1 >= 3 && n2 >= 3 && best_p < ALPHA;
    if !judged {
        // Ranks cannot tell a separation of a few effective seconds from chance,
        // however wide. The means can: a gap many times the runs' own spread is no
        // wander, even at one or two degrees of freedom.
        let side = |k: u8| -> Vec<f64> { all.iter().filter(|x| x.1 == k).map(|x| x.0).collect() };
        if let Some(p) = welch_on_means(&side(0), &side(1), e1, e2) {
            if p < ALPHA {
                return Shift {
                    p_value: p,
                    significant: true,
                    n: (n1, n2),
                    effective_n: (e1, e2),
                    superiority,
                    judged: true,
                };
            }
        }
        return not_judged(superiority, (e1, e2));
    }
    let tie_factor = if n > 1 {
        1.0 - tie_term / (nf * nf * nf - nf)
    } else {
        0.0
    };
    let sd = auc_sd(e1, e2, tie_factor);
    let p = if sd > 0.0 {
        let z = ((superiority - 0.5).abs() - cc).max(0.0) / sd;
        (2.0 * (1.0 - normal_cdf(z))).max(floor_p).clamp(0.0, 1.0)
    } else {
        // Every value tied: no difference at all.
        1.0
    };
    Shift {
        p_value: p,
        significant: p < ALPHA,
        n: (n1, n2),
        effective_n: (e1, e2),
        superiority,
        judged: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noisy(seed: u64, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..n)
            .map(|_| {
                // Sum of 12 uniforms - 6: approximately normal.
                let s: f64 = (0..12).map(|_| rng.f64()).sum();
                mean + (s - 6.0) * sd
            })
            .collect()
    }

    #[test]
    fn same_distribution_is_within_noise() {
        let mut false_alarms = 0;
        for seed in 1..=40u64 {
            let a = noisy(seed, 60, 1000.0, 50.0);
            let b = noisy(seed * 7919 + 3, 60, 1000.0, 50.0);
            if mann_whitney(&a, &b).significant {
                false_alarms += 1;
            }
        }
        // α = 0.05: a few of 40 may come out significant by chance, not many.
        assert!(false_alarms <= 6, "{false_alarms}");
    }

    #[test]
    fn a_ten_percent_shift_is_significant() {
        let a = noisy(11, 60, 1000.0, 50.0);
        let b = noisy(12, 60, 1100.0, 50.0);
        let s = mann_whitney(&a, &b);
        assert!(s.significant, "{s:?}");
        assert!(s.p_value < 1e-6, "{s:?}");
    }

    #[test]
    fn ties_and_tiny_samples() {
        let s = mann_whitney(&[1.0; 12], &[1.0; 12]);
        assert!(s.judged && !s.significant && s.p_value == 1.0, "{s:?}");
        assert_eq!(mann_whitney(&[1.0], &[2.0]).p_value, 1.0);
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-9);
        assert!((normal_cdf(1.96) - 0.975).abs() < 1e-4);
    }

    /// AR(1) series with coefficient `phi` around `mean`, innovations of sd `sd`.
    fn ar1(seed: u64, n: usize, mean: f64, phi: f64, sd: f64) -> Vec<f64> {
        let mut x = 0.0;
        // Start in the stationary state, not at the mean.
        let burn = noisy(seed, 200 + n, 0.0, sd);
        burn.iter()
            .map(|e| {
                x = phi * x + e;
                mean + x
            })
            .skip(200)
            .collect()
    }

    #[test]
    fn nan_and_infinities_are_left_out_of_sizes_and_ranks() {
        let a = noisy(21, 20, 100.0, 10.0);
        let b = noisy(22, 20, 110.0, 10.0);
        let clean = mann_whitney(&a, &b);
        let mut dirty = a.clone();
        dirty.splice(5..5, [f64::NAN, f64::INFINITY, f64::NAN, f64::NEG_INFINITY]);
        let s = mann_whitney(&dirty, &b);
        assert_eq!(s.n, (20, 20), "{s:?}");
        assert_eq!(s.p_value, clean.p_value, "{s:?} vs {clean:?}");
        assert_eq!(s.superiority, clean.superiority);
        // Two finite values among NaNs cannot be judged, however far apart.
        let s = mann_whitney(&[1.0, f64::NAN, 2.0, f64::NAN, f64::NAN], &[50.0; 10]);
        assert_eq!(s.n, (2, 10));
        assert!(!s.judged && !s.significant && s.p_value == 1.0, "{s:?}");
    }

    #[test]
    fn runs_of_similar_seconds_do_not_make_noise_significant() {
        // Two independent AR(1) series (φ = 0.9) of the same level: each run drifts
        // slowly, so 120 seconds are worth ~6. Treated as independent, most pairs
        // would look different.
        let mut false_alarms = 0;
        for seed in 1..=40u64 {
            let a = ar1(seed, 120, 1000.0, 0.9, 10.0);
            let b = ar1(seed * 7919 + 3, 120, 1000.0, 0.9, 10.0);
            let s = mann_whitney(&a, &b);
            assert!(s.effective_n.0 < 30.0, "{s:?}");
            if s.significant {
                false_alarms += 1;
            }
        }
        assert!(false_alarms <= 6, "{false_alarms} of 40");
    }

    #[test]
    fn a_large_shift_of_autocorrelated_seconds_is_still_significant() {
        // Marginal sd of the AR(1) is 10/√(1−0.81) ≈ 23: a shift of 150 is ~6.5 sd.
        for seed in 1..=10u64 {
            let a = ar1(seed, 120, 1000.0, 0.9, 10.0);
            let b = ar1(seed + 100, 120, 1150.0, 0.9, 10.0);
            let s = mann_whitney(&a, &b);
            assert!(s.significant, "{s:?}");
            assert_eq!(s.candidate_higher(), Some(true));
            let s = mann_whitney(&b, &a);
            assert_eq!(s.candidate_higher(), Some(false), "{s:?}");
        }
    }

    #[test]
    fn too_few_seconds_are_not_judged_even_when_fully_separated() {
        // 3 against 3: even complete separation has an exact p of 2/20 = 0.1.
        let s = mann_whitney(&[3.0, 1.0, 2.0], &[13.0, 11.0, 12.0]);
        assert!(!s.judged && !s.significant, "{s:?}");
        assert_eq!(s.superiority, 1.0);
        // 4 against 4: 2/70 ≈ 0.029 at best, and never reported below that.
        let s = mann_whitney(&[3.0, 1.0, 4.0, 2.0], &[13.0, 11.0, 14.0, 12.0]);
        assert!(s.judged && s.significant, "{s:?}");
        assert!(s.p_value >= 2.0 / 70.0 - 1e-12, "{s:?}");
        // 8 against 8 in no particular order: judged, and significant.
        let a = [3.0, 7.0, 1.0, 8.0, 2.0, 6.0, 4.0, 5.0];
        let b: Vec<f64> = a.iter().map(|x| x + 100.0).collect();
        let s = mann_whitney(&a, &b);
        assert!(s.judged && s.significant, "{s:?}");
        // The same 8 as steady climbs, the second run just above the first: ranks
        // perfectly autocorrelated, worth a sample a side, and the means no further
        // apart than the climbs themselves. Not judged.
        let a: Vec<f64> = (1..=8).map(f64::from).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 8.0).collect();
        let s = mann_whitney(&a, &b);
        assert!(!s.judged && !s.significant, "{s:?}");
        assert!(s.effective_n.0 < 2.0, "{s:?}");
    }

    #[test]
    fn a_gap_far_beyond_both_runs_spread_is_judged_on_few_effective_seconds() {
        // Ten seconds a side, each run drifting (a busy machine warming up), so the
        // ranks are worth a few samples and cannot decide; but the slow run sits
        // nine times above the fast one, a gap of a hundred times their spread.
        let mut rng = fastrand::Rng::with_seed(3);
        let fast: Vec<f64> = (0..10)
            .map(|i| 7.0 + 0.05 * i as f64 + rng.f64() * 0.05)
            .collect();
        let slow: Vec<f64> = (0..10)
            .map(|i| 62.0 + 0.08 * i as f64 + rng.f64() * 0.1)
            .collect();
        let s = mann_whitney(&fast, &slow);
        assert!(
            s.effective_n.0 < 4.0,
            "the ranks alone would not judge: {s:?}"
        );
        assert!(s.judged && s.significant && s.p_value < 0.01, "{s:?}");
        assert_eq!(s.candidate_higher(), Some(true));
        let s = mann_whitney(&slow, &fast);
        assert!(
            s.significant && s.candidate_higher() == Some(false),
            "{s:?}"
        );
        // The same climbs 100 apart, worth a single sample a side: still judged.
        let a: Vec<f64> = (1..=8).map(f64::from).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 100.0).collect();
        assert!(mann_whitney(&a, &b).significant);
        // Fewer than five seconds a side: the means are not tried.
        let s = mann_whitney(&[3.0, 1.0, 2.0], &[103.0, 101.0, 102.0]);
        assert!(!s.judged, "{s:?}");
    }

    #[test]
    fn short_correlated_runs_of_one_level_rarely_differ() {
        // Ten seconds a side of an AR(1) with φ = 0.5: the lag-1 estimate from so
        // few seconds falls well short of 0.5, and taken as is, about one pair in
        // seven came out "different". Its bias taken back, and the means tried only
        // when the ranks cannot decide, near α.
        let mut false_alarms = 0;
        let trials = 400;
        for seed in 0..trials {
            let a = ar1(seed, 10, 100.0, 0.5, 1.0);
            let b = ar1(seed + 10_000, 10, 100.0, 0.5, 1.0);
            if mann_whitney(&a, &b).significant {
                false_alarms += 1;
            }
        }
        assert!(
            false_alarms <= trials * 11 / 100,
            "{false_alarms} of {trials}"
        );
    }

    #[test]
    fn autocorrelated_series_are_worth_fewer_samples() {
        // White noise: close to n.
        let white = noisy(5, 400, 100.0, 10.0);
        let ess = effective_sample_size(&white);
        assert!(ess > 300.0 && ess <= 400.0, "{ess}");
        // AR(1) with φ = 0.9: about n·0.1/1.9 ≈ n/19.
        let mut x = 0.0;
        let ar: Vec<f64> = white
            .iter()
            .map(|e| {
                x = 0.9 * x + (e - 100.0);
                x
            })
            .collect();
        let r = lag1_autocorrelation(&ar);
        assert!((r - 0.9).abs() < 0.06, "{r}");
        let ess = effective_sample_size(&ar);
        assert!(ess > 10.0 && ess < 40.0, "{ess}");
        // Flat and tiny series.
        assert_eq!(lag1_autocorrelation(&[3.0; 10]), 0.0);
        assert_eq!(effective_sample_size(&[1.0, 2.0]), 2.0);
    }
}
