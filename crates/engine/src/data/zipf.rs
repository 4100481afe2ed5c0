//! Zipf-distributed ranks by rejection-inversion (W. Hörmann, G. Derflinger: "Rejection-
//! inversion to generate variates from monotone discrete distributions", 1996), after
//! the Apache Commons RNG `RejectionInversionZipfSampler`.
//!
//! Why this method: it is exact, takes O(1) memory and O(1) expected time for any
//! number of elements (a CDF table would cost 8 bytes per row — 8 GB for a billion-row
//! range — and a binary search per pick), needs no allocation per sample, and works for
//! every exponent s > 0 including s = 1 and s < 1.

/// P(k) ∝ 1 / k^s for k in 1..=n. Immutable after construction, so one instance is
/// shared by all VUs.
#[derive(Clone, Debug)]
pub(crate) struct Zipf {
    n: u64,
    exponent: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
}

impl Zipf {
    /// A sampler over 1..=n (n ≥ 1) with exponent s (> 0, finite; checked by the caller).
    pub(crate) fn new(n: u64, exponent: f64) -> Zipf {
        debug_assert!(n >= 1 && exponent > 0.0 && exponent.is_finite());
        let mut z = Zipf {
            n,
            exponent,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(n as f64 + 0.5);
        z.s = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// One rank in 1..=n (1 = most popular).
    #[inline]
    pub(crate) fn sample(&self, rng: &mut fastrand::Rng) -> u64 {
        let mut k = 1;
        // The acceptance probability is high (a couple of rounds at most in practice);
        // the cap only guards against a numerical pathology turning into a hang.
        for _ in 0..64 {
            let u = self.h_integral_n + rng.f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            // `as` saturates (and maps NaN to 0), so the clamp keeps k in range.
            k = ((x + 0.5) as u64).clamp(1, self.n);
            let kf = k as f64;
            if kf - x <= self.s || u >= self.h_integral(kf + 0.5) - self.h(kf) {
                return k;
            }
        }
        k
    }

    /// H(x) = ∫ h = (x^(1-s) - 1) / (1 - s), computed stably near s = 1.
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.exponent) * log_x) * log_x
    }

    /// h(x) = x^-s.
    fn h(&self, x: f64) -> f64 {
        (-self.exponent * x.ln()).exp()
    }

    /// H⁻¹.
    fn h_integral_inverse(&self, x: f64) -> f64 {
        let mut t = x * (1.0 - self.exponent);
        if t < -1.0 {
            // Rounding can push t just below -1.
            t = -1.0;
        }
        (helper1(t) * x).exp()
    }
}

/// ln(1 + x) / x, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn harmonic(n: u64, s: f64) -> f64 {
        (1..=n).map(|k| (k as f64).powf(-s)).sum()
    }

    #[test]
    fn follows_power_law_for_first_ranks() {
        for &(n, s) in &[(1000u64, 1.1f64), (50, 1.0), (100_000, 0.7), (10, 2.0)] {
            let z = Zipf::new(n, s);
            let mut rng = fastrand::Rng::with_seed(7);
            let draws = 300_000;
            let mut counts = [0u64; 6];
            for _ in 0..draws {
                let k = z.sample(&mut rng);
                assert!((1..=n).contains(&k));
                if k <= 5 {
                    counts[k as usize] += 1;
                }
            }
            let h = harmonic(n, s);
            for k in 1..=5u64 {
                let expected = (k as f64).powf(-s) / h * draws as f64;
                let got = counts[k as usize] as f64;
                let rel = (got - expected).abs() / expected;
                assert!(
                    rel < 0.08,
                    "n={n} s={s} k={k}: got {got}, expected {expected}"
                );
            }
            assert!(counts[1] > counts[2] && counts[2] > counts[3]);
        }
    }

    #[test]
    fn extreme_exponents_stay_in_range() {
        let mut rng = fastrand::Rng::with_seed(1);
        for &s in &[1e-9, 1e-3, 0.5, 1.0, 1.0 + 1e-12, 3.0, 50.0, 1e6, 1e300] {
            for &n in &[1u64, 2, 3, 1000, u64::MAX] {
                let z = Zipf::new(n, s);
                for _ in 0..2000 {
                    let k = z.sample(&mut rng);
                    assert!(k >= 1 && k <= n, "s={s} n={n} k={k}");
                }
            }
        }
    }
}
