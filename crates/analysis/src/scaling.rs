//! How capacity scales with a knob (pods, threads, a pool's size) across the points
//! of an experiment: the Universal Scalability Law,
//! C(N) = λN / (1 + σ(N−1) + κN(N−1)), fitted by least squares to (knob value,
//! capacity) points, what it predicts for the next value, where more of the knob
//! stops paying, and how well each point was predicted from the points before it.
//!
//! σ (contention: the serial fraction, Amdahl's law) and κ (crosstalk: the cost of
//! keeping the parts coherent, which makes capacity fall past a peak) say *why* the
//! gain shrank: σ alone flattens the curve towards λ/σ, κ bends it down past
//! √((1−σ)/κ). Both are held to their physical range (0 ≤ σ ≤ 1, κ ≥ 0): a fit that
//! wanted a negative σ would promise superlinear scaling forever.
//!
//! The fit is exact least squares on the measured scale (what R's `usl` package
//! calls its non-linear method), not a grid: for fixed σ and κ the model is linear
//! in λ, so λ is solved in closed form inside a Levenberg–Marquardt search over the
//! three parameters, started from the linearised form N/C = 1/λ + (σ/λ)(N−1) +
//! (κ/λ)N(N−1) (exact on noise-free data) and repeated on each face of the bounds
//! (κ = 0, σ = 0, both), keeping the best; the simpler model wins a tie, so a
//! linear system reads σ = κ = 0 and no peak.
//!
//! With two distinct knob values only σ is fitted (κ = 0, [`UslFit::kappa_fitted`]
//! says so): two points cannot tell contention from crosstalk. With one there is no
//! fit.

use serde::Serialize;

/// One measured point of an experiment: the knob's value and the capacity (or
/// throughput) measured at it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ScalingPoint {
    /// The knob's value (pods, threads, pool size); the USL's N. Must be > 0.
    pub x: f64,
    /// Capacity or throughput measured at `x` (req/s). Must be > 0.
    pub throughput: f64,
}

/// A fitted Universal Scalability Law: C(N) = λN / (1 + σ(N−1) + κN(N−1)).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct UslFit {
    /// Capacity of one unit of the knob (C(1)), in the throughput's unit.
    pub lambda: f64,
    /// Contention: the serial fraction (0 = none, 1 = no gain from more at all).
    pub sigma: f64,
    /// Crosstalk (coherency) cost; > 0 means capacity peaks and then falls.
    pub kappa: f64,
    /// Coefficient of determination on the measured scale (1 = the curve passes
    /// through every point).
    pub r2: f64,
    /// Number of points the fit used.
    pub points: usize,
    /// Knob value where the fitted capacity peaks, √((1−σ)/κ); `None` when κ = 0
    /// (capacity only flattens, towards λ/σ).
    pub peak_x: Option<f64>,
}

/// Why no fit could be made; the experiment reports it instead of a curve.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScalingError {
    /// Fewer than two distinct knob values: a single point says nothing about
    /// scaling.
    #[error("a scaling fit needs at least 2 distinct knob values, got {got}")]
    TooFewPoints {
        /// Distinct knob values given.
        got: usize,
    },
    /// A knob value or a throughput that is zero or negative (the law is defined for
    /// N > 0, and a point with no capacity is a failed point, not a measurement).
    #[error(
        "a scaling point needs a knob value and a throughput above 0, got {x} and {throughput}"
    )]
    NonPositive {
        /// The point's knob value.
        x: f64,
        /// The point's throughput.
        throughput: f64,
    },
    /// A knob value or throughput that is NaN or infinite, or a fit that came out so.
    #[error("a scaling point or its fit is not a finite number")]
    NotFinite,
}

/// Upper bound of σ: a serial fraction of 1 already means no gain from more.
const SIGMA_MAX: f64 = 1.0;

/// Iterations of one Levenberg–Marquardt search (it converges in a few dozen on
/// every shape tried; the bound only keeps a pathological input finite in time).
const MAX_ITERATIONS: usize = 500;

/// Fits the USL to `points` by least squares (σ in [0, 1], κ ≥ 0).
///
/// Two distinct knob values fit λ and σ with κ = 0; one gives
/// [`ScalingError::TooFewPoints`]. The order of the points does not matter.
pub fn fit_usl(points: &[ScalingPoint]) -> Result<UslFit, ScalingError> {
    for p in points {
        if !p.x.is_finite() || !p.throughput.is_finite() {
            return Err(ScalingError::NotFinite);
        }
        if p.x <= 0.0 || p.throughput <= 0.0 {
            return Err(ScalingError::NonPositive {
                x: p.x,
                throughput: p.throughput,
            });
        }
    }
    let pts: Vec<(f64, f64)> = points.iter().map(|p| (p.x, p.throughput)).collect();
    fit_pairs(&pts)
}

/// The fit on checked (knob, throughput) pairs; zero throughputs are allowed here
/// (the saturation analysis fits levels that measured nothing).
pub(crate) fn fit_pairs(pts: &[(f64, f64)]) -> Result<UslFit, ScalingError> {
    let distinct = distinct_xs(pts);
    if distinct < 2 {
        return Err(ScalingError::TooFewPoints { got: distinct });
    }
    // Faces of the bounds, simplest first: a richer model must do measurably better.
    let faces: &[Free] = if distinct == 2 {
        &[Free::NONE, Free::SIGMA]
    } else {
        &[Free::NONE, Free::SIGMA, Free::KAPPA, Free::BOTH]
    };
    let sst = total_sum_of_squares(pts);
    let tie = 1e-9 * sst.max(f64::MIN_POSITIVE);
    let start = linearised(pts);
    let mut best: Option<Params> = None;
    for &free in faces {
        for s in starts(start, free) {
            let p = levenberg_marquardt(pts, s, free);
            if !p.sse.is_finite() {
                continue;
            }
            if best.is_none_or(|b| p.sse < b.sse - tie) {
                best = Some(p);
            }
        }
    }
    let best = best.ok_or(ScalingError::NotFinite)?;
    let r2 = if sst > 0.0 {
        1.0 - best.sse / sst
    } else if best.sse <= tie {
        1.0
    } else {
        0.0
    };
    let fit = UslFit {
        lambda: best.lambda,
        sigma: best.sigma,
        kappa: best.kappa,
        r2,
        points: pts.len(),
        peak_x: (best.kappa > 0.0).then(|| ((1.0 - best.sigma) / best.kappa).sqrt()),
    };
    if [fit.lambda, fit.sigma, fit.kappa, fit.r2]
        .iter()
        .all(|v| v.is_finite())
    {
        Ok(fit)
    } else {
        Err(ScalingError::NotFinite)
    }
}

impl UslFit {
    /// Fitted capacity at knob value `x`; 0 where the law is not defined (x ≤ 0, or
    /// not finite), never NaN.
    pub fn predict(&self, x: f64) -> f64 {
        let c = usl(self.lambda, self.sigma, self.kappa, x);
        if c.is_finite() && c > 0.0 {
            c
        } else {
            0.0
        }
    }

    /// Whether κ was fitted: with two distinct knob values it is held at 0 and the
    /// fit can show no peak, only a flattening.
    pub fn kappa_fitted(&self) -> bool {
        self.points >= 3
    }

    /// The value beyond which more of the knob buys less than `min_gain` (e.g. 0.05 =
    /// 5%) per step of `step`: the smallest x ≥ `step` at which C(x + step) <
    /// C(x)·(1 + min_gain). This is where adding more stops paying, whether because
    /// the curve flattens (σ), turns down (κ), or only because each step is a smaller
    /// share of a larger x (a linear system still reaches it, at x = step/min_gain).
    /// `None` for a step or gain that is not positive and finite, or when the gain
    /// never falls that low.
    pub fn diminishing_from(&self, step: f64, min_gain: f64) -> Option<f64> {
        if !(step.is_finite() && step > 0.0 && min_gain.is_finite() && min_gain > 0.0) {
            return None;
        }
        let pays = |x: f64| {
            let here = self.predict(x);
            here > 0.0 && self.predict(x + step) >= here * (1.0 + min_gain)
        };
        if !pays(step) {
            return Some(step);
        }
        // Walk out geometrically to the first value that no longer pays, then bisect
        // back to where the gain crosses `min_gain`.
        let mut lo = step;
        let mut hi = step * 1.25;
        while pays(hi) {
            lo = hi;
            hi *= 1.25;
            if hi > 1e15 {
                return None;
            }
        }
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if pays(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
            if hi - lo <= 1e-9 * hi {
                break;
            }
        }
        Some(hi)
    }
}

/// The fit's prediction for one point, made from the points before it only, beside
/// what that point then measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PredictionCheck {
    /// The point's knob value.
    pub x: f64,
    /// Capacity the fit on the earlier points predicted at `x`.
    pub predicted: f64,
    /// Capacity measured at `x`.
    pub measured: f64,
    /// (predicted − measured) / measured × 100: positive when the fit promised more
    /// than the point delivered.
    pub error_pct: f64,
}

/// Prediction for the next point from the points before it, checked once it is
/// measured: for each i ≥ 2, fit `points[..i]` and predict `points[i]` (leave the
/// future out, as the experiment ran). Points whose earlier points give no fit (bad
/// or repeated values) are left out, so the list may be shorter than `points`.
pub fn check_predictions(points: &[ScalingPoint]) -> Vec<PredictionCheck> {
    (2..points.len())
        .filter_map(|i| {
            let fit = fit_usl(&points[..i]).ok()?;
            let next = points[i];
            if !(next.x.is_finite() && next.throughput.is_finite() && next.throughput > 0.0) {
                return None;
            }
            let predicted = fit.predict(next.x);
            Some(PredictionCheck {
                x: next.x,
                predicted,
                measured: next.throughput,
                error_pct: (predicted - next.throughput) / next.throughput * 100.0,
            })
        })
        .collect()
}

/// The law itself.
fn usl(lambda: f64, sigma: f64, kappa: f64, x: f64) -> f64 {
    lambda * x / (1.0 + sigma * (x - 1.0) + kappa * x * (x - 1.0))
}

fn distinct_xs(pts: &[(f64, f64)]) -> usize {
    let mut xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs.len()
}

fn total_sum_of_squares(pts: &[(f64, f64)]) -> f64 {
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    pts.iter().map(|p| (p.1 - mean).powi(2)).sum()
}

/// Which of σ and κ a search may move (λ always moves).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Free {
    sigma: bool,
    kappa: bool,
}

impl Free {
    const NONE: Free = Free {
        sigma: false,
        kappa: false,
    };
    const SIGMA: Free = Free {
        sigma: true,
        kappa: false,
    };
    const KAPPA: Free = Free {
        sigma: false,
        kappa: true,
    };
    const BOTH: Free = Free {
        sigma: true,
        kappa: true,
    };
}

/// A candidate fit and its sum of squared residuals.
#[derive(Clone, Copy, Debug)]
struct Params {
    lambda: f64,
    sigma: f64,
    kappa: f64,
    sse: f64,
}

/// σ and κ from the linearised law N/C = a + b(N−1) + cN(N−1) (λ = 1/a, σ = b/a,
/// κ = c/a), by ordinary least squares; exact when the points lie on a USL curve.
/// `None` when the system is singular or a ≤ 0.
fn linearised(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    let rows: Vec<([f64; 3], f64)> = pts
        .iter()
        .filter(|p| p.1 > 0.0)
        .map(|&(x, y)| ([1.0, x - 1.0, x * (x - 1.0)], x / y))
        .collect();
    let mut ata = [[0.0; 3]; 3];
    let mut atb = [0.0; 3];
    for (row, z) in &rows {
        for i in 0..3 {
            atb[i] += row[i] * z;
            for j in 0..3 {
                ata[i][j] += row[i] * row[j];
            }
        }
    }
    let [a, b, c] = solve3(ata, atb)?;
    (a > 0.0).then_some((b / a, c / a))
}

/// The starting (σ, κ) of the searches on one face: the linearised estimate held to
/// the face and the bounds, and the plain corners.
fn starts(linear: Option<(f64, f64)>, free: Free) -> Vec<(f64, f64)> {
    let mut v = vec![(0.0, 0.0), (0.1, 0.0), (0.01, 1e-4)];
    if let Some((s, k)) = linear {
        v.insert(0, (s, k));
    }
    v.into_iter()
        .map(|(s, k)| {
            (
                if free.sigma {
                    s.clamp(0.0, SIGMA_MAX)
                } else {
                    0.0
                },
                if free.kappa { k.max(0.0) } else { 0.0 },
            )
        })
        .collect()
}

/// Least-squares λ for fixed σ and κ (the model is linear in λ) and the residual
/// sum of squares; infinite where the denominator is not positive.
fn best_lambda(pts: &[(f64, f64)], sigma: f64, kappa: f64) -> Params {
    let (mut num, mut den) = (0.0, 0.0);
    for &(x, y) in pts {
        let d = 1.0 + sigma * (x - 1.0) + kappa * x * (x - 1.0);
        if d.is_nan() || d <= 0.0 {
            return Params {
                lambda: 0.0,
                sigma,
                kappa,
                sse: f64::INFINITY,
            };
        }
        let g = x / d;
        num += g * y;
        den += g * g;
    }
    let lambda = if den > 0.0 { num / den } else { 0.0 };
    Params {
        lambda,
        sigma,
        kappa,
        sse: sse(pts, lambda, sigma, kappa),
    }
}

fn sse(pts: &[(f64, f64)], lambda: f64, sigma: f64, kappa: f64) -> f64 {
    let mut total = 0.0;
    for &(x, y) in pts {
        let d = 1.0 + sigma * (x - 1.0) + kappa * x * (x - 1.0);
        if d.is_nan() || d <= 0.0 {
            return f64::INFINITY;
        }
        total += (lambda * x / d - y).powi(2);
    }
    total
}

/// Levenberg–Marquardt over (λ, σ, κ) with Marquardt's scaling (the parameters
/// differ by orders of magnitude), the fixed ones held at 0 and every step projected
/// back into the bounds.
fn levenberg_marquardt(pts: &[(f64, f64)], start: (f64, f64), free: Free) -> Params {
    let mut cur = best_lambda(pts, start.0, start.1);
    if !cur.sse.is_finite() {
        cur = best_lambda(pts, 0.0, 0.0);
    }
    let mask = [true, free.sigma, free.kappa];
    let mut mu = 1e-3;
    for _ in 0..MAX_ITERATIONS {
        let (jtj, jtr) = normal_equations(pts, &cur, mask);
        let mut improved = false;
        while mu < 1e16 {
            let mut a = jtj;
            for (i, row) in a.iter_mut().enumerate() {
                row[i] += mu * jtj[i][i].max(1e-300);
            }
            let Some(delta) = solve3(a, jtr) else {
                mu *= 10.0;
                continue;
            };
            let lambda = (cur.lambda + delta[0]).max(f64::MIN_POSITIVE);
            let sigma = (cur.sigma + delta[1]).clamp(0.0, SIGMA_MAX);
            let kappa = (cur.kappa + delta[2]).max(0.0);
            let next = Params {
                lambda,
                sigma,
                kappa,
                sse: sse(pts, lambda, sigma, kappa),
            };
            if next.sse < cur.sse {
                let gain = cur.sse - next.sse;
                cur = next;
                mu = (mu / 3.0).max(1e-12);
                improved = gain > 1e-15 * cur.sse.max(f64::MIN_POSITIVE);
                break;
            }
            mu *= 10.0;
        }
        if !improved {
            break;
        }
    }
    cur
}

/// JᵀJ and Jᵀr of the residuals r = y − C(x) at `p`; rows and columns of fixed
/// parameters are the identity and zero, so their step is 0.
fn normal_equations(pts: &[(f64, f64)], p: &Params, mask: [bool; 3]) -> ([[f64; 3]; 3], [f64; 3]) {
    let mut jtj = [[0.0; 3]; 3];
    let mut jtr = [0.0; 3];
    for &(x, y) in pts {
        let d = 1.0 + p.sigma * (x - 1.0) + p.kappa * x * (x - 1.0);
        let c = p.lambda * x / d;
        let j = [
            x / d,
            -p.lambda * x * (x - 1.0) / (d * d),
            -p.lambda * x * x * (x - 1.0) / (d * d),
        ];
        let r = y - c;
        for i in 0..3 {
            if !mask[i] {
                continue;
            }
            jtr[i] += j[i] * r;
            for k in 0..3 {
                if mask[k] {
                    jtj[i][k] += j[i] * j[k];
                }
            }
        }
    }
    for i in 0..3 {
        if !mask[i] {
            jtj[i][i] = 1.0;
        }
    }
    (jtj, jtr)
}

/// Solves a 3×3 system by Gaussian elimination with partial pivoting after scaling
/// each column to unit size (the linearised columns span many orders of magnitude);
/// `None` when it is singular.
fn solve3(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
    let mut scale = [1.0; 3];
    for (j, s) in scale.iter_mut().enumerate() {
        let m = (0..3).map(|i| a[i][j].abs()).fold(0.0, f64::max);
        if m > 0.0 {
            *s = m;
            for row in a.iter_mut() {
                row[j] /= m;
            }
        }
    }
    for col in 0..3 {
        let pivot = (col..3).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-13 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        for row in col + 1..3 {
            let f = a[row][col] / a[col][col];
            let pivot_row = a[col];
            for (v, p) in a[row].iter_mut().zip(pivot_row).skip(col) {
                *v -= f * p;
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = [0.0; 3];
    for row in (0..3).rev() {
        let s: f64 = (row + 1..3).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - s) / a[row][row];
    }
    for (v, s) in x.iter_mut().zip(scale) {
        *v /= s;
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests;
