use super::*;

fn truth(lambda: f64, sigma: f64, kappa: f64, x: f64) -> f64 {
    lambda * x / (1.0 + sigma * (x - 1.0) + kappa * x * (x - 1.0))
}

fn curve(lambda: f64, sigma: f64, kappa: f64, xs: &[f64]) -> Vec<ScalingPoint> {
    xs.iter()
        .map(|&x| ScalingPoint {
            x,
            throughput: truth(lambda, sigma, kappa, x),
        })
        .collect()
}

/// The same curve with each throughput moved by a seeded uniform ±`share`.
fn noisy(points: &[ScalingPoint], share: f64, seed: u64) -> Vec<ScalingPoint> {
    let mut rng = fastrand::Rng::with_seed(seed);
    points
        .iter()
        .map(|p| ScalingPoint {
            x: p.x,
            throughput: p.throughput * (1.0 + share * (2.0 * rng.f64() - 1.0)),
        })
        .collect()
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs().max(1e-12)
}

const XS: [f64; 10] = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0];

#[test]
fn recovers_planted_parameters_from_noise_free_points() {
    let fit = fit_usl(&curve(100.0, 0.05, 0.002, &XS)).unwrap();
    assert!(close(fit.lambda, 100.0, 1e-6), "{fit:?}");
    assert!(close(fit.sigma, 0.05, 1e-5), "{fit:?}");
    assert!(close(fit.kappa, 0.002, 1e-5), "{fit:?}");
    assert!(fit.r2 > 0.999_999, "{fit:?}");
    assert_eq!(fit.points, 10);
    assert!(fit.kappa_fitted());
}

#[test]
fn recovers_planted_parameters_through_two_percent_noise() {
    // Several seeds, so that one lucky draw cannot pass the test.
    for seed in 1..=5 {
        let pts = noisy(&curve(100.0, 0.05, 0.002, &XS), 0.02, seed);
        let fit = fit_usl(&pts).unwrap();
        assert!(close(fit.lambda, 100.0, 0.05), "seed {seed}: {fit:?}");
        assert!((fit.sigma - 0.05).abs() < 0.02, "seed {seed}: {fit:?}");
        assert!((fit.kappa - 0.002).abs() < 0.0008, "seed {seed}: {fit:?}");
        for x in [5.0, 14.0, 24.0] {
            let want = truth(100.0, 0.05, 0.002, x);
            assert!(
                close(fit.predict(x), want, 0.04),
                "seed {seed} x {x}: {fit:?}"
            );
        }
    }
}

#[test]
fn a_linear_system_has_no_contention_no_crosstalk_and_no_peak() {
    let pts: Vec<ScalingPoint> = XS
        .iter()
        .map(|&x| ScalingPoint {
            x,
            throughput: 50.0 * x,
        })
        .collect();
    let fit = fit_usl(&pts).unwrap();
    assert_eq!(
        (fit.sigma, fit.kappa, fit.peak_x),
        (0.0, 0.0, None),
        "{fit:?}"
    );
    assert!(close(fit.lambda, 50.0, 1e-9), "{fit:?}");
    assert!(close(fit.predict(40.0), 2000.0, 1e-9));
    assert!(fit.r2 > 0.999_999);
}

#[test]
fn a_planted_peak_is_found_within_five_percent() {
    // σ = 0.02, κ = 0.01: the peak is at √(0.98 / 0.01) = 9.899.
    let want = (0.98f64 / 0.01).sqrt();
    let xs = [1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 20.0];
    let exact = fit_usl(&curve(200.0, 0.02, 0.01, &xs)).unwrap();
    assert!(close(exact.peak_x.unwrap(), want, 1e-4), "{exact:?}");
    for seed in 1..=5 {
        let fit = fit_usl(&noisy(&curve(200.0, 0.02, 0.01, &xs), 0.02, seed)).unwrap();
        assert!(
            close(fit.peak_x.unwrap(), want, 0.05),
            "seed {seed}: {fit:?}"
        );
    }
}

#[test]
fn two_points_fit_contention_only_and_say_so() {
    // Amdahl (κ = 0), λ = 80, σ = 0.25: two points determine it exactly.
    let pts = curve(80.0, 0.25, 0.0, &[2.0, 4.0]);
    let fit = fit_usl(&pts).unwrap();
    assert_eq!(fit.kappa, 0.0);
    assert!(!fit.kappa_fitted());
    assert_eq!(fit.peak_x, None);
    assert!(close(fit.sigma, 0.25, 1e-6), "{fit:?}");
    assert!(close(fit.lambda, 80.0, 1e-6), "{fit:?}");
    assert!(close(fit.predict(8.0), truth(80.0, 0.25, 0.0, 8.0), 1e-6));
    // Superlinear points would need σ < 0: held at 0, λ by least squares.
    let superlinear = [
        ScalingPoint {
            x: 1.0,
            throughput: 10.0,
        },
        ScalingPoint {
            x: 2.0,
            throughput: 25.0,
        },
    ];
    let s = fit_usl(&superlinear).unwrap();
    assert_eq!((s.sigma, s.kappa), (0.0, 0.0), "{s:?}");
    // Least squares of y = λx: λ = Σxy / Σx² = 60 / 5.
    assert!(close(s.lambda, 12.0, 1e-9), "{s:?}");
}

#[test]
fn too_few_points_and_bad_values_are_typed_errors() {
    assert_eq!(fit_usl(&[]), Err(ScalingError::TooFewPoints { got: 0 }));
    let one = ScalingPoint {
        x: 2.0,
        throughput: 100.0,
    };
    assert_eq!(fit_usl(&[one]), Err(ScalingError::TooFewPoints { got: 1 }));
    // The same knob value twice is still one point of the curve.
    assert_eq!(
        fit_usl(&[one, one]),
        Err(ScalingError::TooFewPoints { got: 1 })
    );
    let zero = ScalingPoint {
        x: 0.0,
        throughput: 5.0,
    };
    assert_eq!(
        fit_usl(&[one, zero]),
        Err(ScalingError::NonPositive {
            x: 0.0,
            throughput: 5.0
        })
    );
    let failed = ScalingPoint {
        x: 3.0,
        throughput: -1.0,
    };
    assert!(matches!(
        fit_usl(&[one, failed]),
        Err(ScalingError::NonPositive { .. })
    ));
    for bad in [f64::NAN, f64::INFINITY] {
        let p = ScalingPoint {
            x: bad,
            throughput: 1.0,
        };
        assert_eq!(fit_usl(&[one, p]), Err(ScalingError::NotFinite));
        let q = ScalingPoint {
            x: 3.0,
            throughput: bad,
        };
        assert_eq!(fit_usl(&[one, q]), Err(ScalingError::NotFinite));
    }
    let msg = ScalingError::TooFewPoints { got: 1 }.to_string();
    assert!(msg.contains("at least 2"), "{msg}");
}

#[test]
fn predictions_outside_the_law_are_zero_never_nan() {
    let fit = fit_usl(&curve(100.0, 0.05, 0.002, &XS)).unwrap();
    for x in [0.0, -3.0, f64::NAN, f64::INFINITY] {
        assert_eq!(fit.predict(x), 0.0, "x {x}");
    }
}

/// R's `usl` package, `tests/coef.R`: Gunther's synthetic data for σ = κ = 0.02
/// (rounded to 5 digits), whose saved output is σ = 0.02, κ = 0.02, λ = 1.00 to 3
/// significant digits.
#[test]
fn agrees_with_the_r_usl_package_on_its_coefficient_test() {
    let xs = [1.0, 2.0, 4.0, 6.0, 8.0, 10.0];
    let ys = [1.0, 1.8868, 3.0769, 3.5294, 3.5398, 3.3557];
    let pts: Vec<ScalingPoint> = xs
        .iter()
        .zip(ys)
        .map(|(&x, throughput)| ScalingPoint { x, throughput })
        .collect();
    let fit = fit_usl(&pts).unwrap();
    assert!(close(fit.sigma, 0.02, 0.005), "{fit:?}");
    assert!(close(fit.kappa, 0.02, 0.005), "{fit:?}");
    assert!(close(fit.lambda, 1.0, 0.005), "{fit:?}");
}

/// R's `usl` package, `tests/confint.R` on its `raytracer` data set (Gunther,
/// *Guerrilla Capacity Planning*, 2007: ray-geometry intersections per second on an
/// SGI Origin 2000): saved coefficients σ = 0.0578, κ = 0.0000, λ = 21.8488.
#[test]
fn agrees_with_the_r_usl_package_on_the_raytracer_data() {
    let xs = [
        1.0, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0, 28.0, 32.0, 48.0, 64.0,
    ];
    let ys = [
        20.0, 78.0, 130.0, 170.0, 190.0, 200.0, 210.0, 230.0, 260.0, 280.0, 310.0,
    ];
    let pts: Vec<ScalingPoint> = xs
        .iter()
        .zip(ys)
        .map(|(&x, throughput)| ScalingPoint { x, throughput })
        .collect();
    let fit = fit_usl(&pts).unwrap();
    assert!((fit.sigma - 0.0578).abs() < 0.0005, "{fit:?}");
    assert!(fit.kappa < 1e-6, "{fit:?}");
    assert!((fit.lambda - 21.8488).abs() < 0.01, "{fit:?}");
}

#[test]
fn predictions_are_exact_on_noise_free_points() {
    // Amdahl: from two points on, every next point is predicted exactly.
    let amdahl = curve(120.0, 0.1, 0.0, &[1.0, 2.0, 3.0, 4.0, 6.0]);
    let checks = check_predictions(&amdahl);
    assert_eq!(
        checks.iter().map(|c| c.x).collect::<Vec<_>>(),
        vec![3.0, 4.0, 6.0]
    );
    for c in &checks {
        assert!(c.error_pct.abs() < 1e-6, "{c:?}");
        assert!(close(c.predicted, c.measured, 1e-8), "{c:?}");
    }
    // With crosstalk, two points cannot see κ: the first check is off by exactly
    // what the two-point Amdahl line (N/C linear in N) predicts; from three on, exact.
    let pts = curve(100.0, 0.05, 0.01, &[1.0, 2.0, 4.0, 8.0, 12.0]);
    let checks = check_predictions(&pts);
    assert_eq!(checks.len(), 3);
    let (x1, y1, x2, y2) = (pts[0].x, pts[0].throughput, pts[1].x, pts[1].throughput);
    let slope = (x2 / y2 - x1 / y1) / (x2 - x1);
    let at4 = 4.0 / (x1 / y1 + slope * (4.0 - x1));
    let want = (at4 - pts[2].throughput) / pts[2].throughput * 100.0;
    assert!(
        (checks[0].error_pct - want).abs() < 1e-6,
        "{checks:?} want {want}"
    );
    assert!(checks[0].error_pct > 1.0, "{checks:?}");
    for c in &checks[1..] {
        assert!(c.error_pct.abs() < 1e-6, "{c:?}");
    }
}

#[test]
fn diminishing_returns_start_where_a_step_buys_less_than_asked() {
    // Linear: one more unit at x buys 1/x, which is 5% at x = 20.
    let linear = fit_usl(&curve(10.0, 0.0, 0.0, &XS)).unwrap();
    assert!(close(
        linear.diminishing_from(1.0, 0.05).unwrap(),
        20.0,
        1e-6
    ));
    // A curve with a peak: checked against a brute-force scan of the law itself.
    let fit = fit_usl(&curve(100.0, 0.05, 0.002, &XS)).unwrap();
    let got = fit.diminishing_from(1.0, 0.05).unwrap();
    let mut x = 1.0;
    while truth(100.0, 0.05, 0.002, x + 1.0) >= 1.05 * truth(100.0, 0.05, 0.002, x) {
        x += 0.0001;
    }
    assert!((got - x).abs() < 0.001, "got {got}, scan {x}");
    assert!(got < fit.peak_x.unwrap());
    // Where even the first step buys too little, it is the first step.
    let flat = fit_usl(&curve(100.0, 0.9, 0.0, &XS)).unwrap();
    assert_eq!(flat.diminishing_from(1.0, 0.5), Some(1.0));
    // Nonsense asks give no answer.
    assert_eq!(fit.diminishing_from(0.0, 0.05), None);
    assert_eq!(fit.diminishing_from(1.0, f64::NAN), None);
}

/// The experiment's CI truth: a server of N slots each held for 50 ms serves exactly
/// 20·N requests a second. Measured with ±3% noise, every point from the third on is
/// predicted from the ones before it within 10%.
#[test]
fn slots_times_hold_time_predicts_each_next_point_within_ten_percent() {
    let exact: Vec<ScalingPoint> = [1.0, 2.0, 3.0, 4.0, 6.0]
        .iter()
        .map(|&x| ScalingPoint {
            x,
            throughput: x / 0.05,
        })
        .collect();
    for seed in 1..=10 {
        let checks = check_predictions(&noisy(&exact, 0.03, seed));
        assert_eq!(checks.len(), 3, "seed {seed}");
        for c in &checks {
            let truth = c.x / 0.05;
            assert!(close(c.predicted, truth, 0.10), "seed {seed}: {c:?}");
        }
    }
}

/// Where a new limit appears between points, the prediction made before it misses
/// by far more than the noise: the check says the law no longer held.
#[test]
fn a_new_limit_between_points_shows_as_a_large_prediction_error() {
    let pts: Vec<ScalingPoint> = [
        (1.0, 20.0),
        (2.0, 40.0),
        (3.0, 60.0),
        (4.0, 60.0),
        (5.0, 60.0),
    ]
    .iter()
    .map(|&(x, throughput)| ScalingPoint { x, throughput })
    .collect();
    let checks = check_predictions(&pts);
    assert!(checks[0].error_pct.abs() < 1e-6, "{checks:?}");
    // Linear up to 3 predicts 80 at 4; 60 was measured.
    assert!(
        (checks[1].error_pct - 100.0 / 3.0).abs() < 1e-4,
        "{checks:?}"
    );
}
