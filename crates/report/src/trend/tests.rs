use super::*;

fn point(id: i64, value: f64, seconds: Option<Vec<f64>>) -> TrendPoint {
    TrendPoint {
        id,
        started_at: format!("2026-11-{:02}T10:00:00Z", id),
        labels: String::new(),
        value: Some(value),
        dir_gone: seconds.is_none(),
        seconds,
    }
}

/// Deterministic noisy seconds around `level` (±5%).
fn seconds(level: f64, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    (0..20)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (x >> 33) as f64 / (1u64 << 31) as f64;
            level * (0.95 + 0.1 * u)
        })
        .collect()
}

#[test]
fn a_planted_regression_is_flagged_and_an_aa_pair_is_not() {
    let base: Vec<TrendPoint> = (1..=4)
        .map(|i| point(i, 100.0, Some(seconds(100.0, i as u64))))
        .collect();
    let mut planted = base.clone();
    planted.push(point(5, 120.0, Some(seconds(120.0, 5))));
    let t = trend("검색", TrendMetric::P95, None, planted, 5, 5.0);
    assert_eq!(t.verdict, TrendVerdict::Regression, "{}", render_trend(&t));
    assert_eq!(t.baseline_ids, [1, 2, 3, 4]);
    assert!((t.change_pct.unwrap() - 20.0).abs() < 1e-9);
    assert!(t.p_value.unwrap() < 0.05);
    let mut aa = base.clone();
    aa.push(point(5, 100.0, Some(seconds(100.0, 99))));
    let t = trend("검색", TrendMetric::P95, None, aa, 5, 5.0);
    assert_eq!(t.verdict, TrendVerdict::WithinNoise, "{}", render_trend(&t));
    // Throughput down 20% is the regression for rps.
    let mut rps = base;
    rps.push(point(5, 80.0, Some(seconds(80.0, 5))));
    let t = trend("x", TrendMetric::Rps, None, rps, 5, 5.0);
    assert_eq!(t.verdict, TrendVerdict::Regression);
}

#[test]
fn without_directories_the_recorded_figures_decide_and_say_so() {
    let mut pts: Vec<TrendPoint> = [100.0, 102.0, 99.0, 101.0]
        .iter()
        .enumerate()
        .map(|(i, v)| point(i as i64 + 1, *v, None))
        .collect();
    pts.push(point(5, 120.0, None));
    let t = trend("x", TrendMetric::P95, None, pts.clone(), 5, 5.0);
    assert_eq!(t.verdict, TrendVerdict::Regression);
    assert!(t.basis.contains("recorded figures"), "{}", t.basis);
    pts[4].value = Some(103.0);
    assert_eq!(
        trend("x", TrendMetric::P95, None, pts.clone(), 5, 5.0).verdict,
        TrendVerdict::WithinNoise
    );
    // Two baseline runs are too few.
    let t = trend("x", TrendMetric::P95, None, pts[2..].to_vec(), 5, 5.0);
    assert_eq!(t.verdict, TrendVerdict::NotJudged);
}

#[test]
fn one_run_is_not_judged_and_the_page_escapes_names() {
    let t = trend(
        "<b>&",
        TrendMetric::P95,
        None,
        vec![point(1, 5.0, None)],
        5,
        5.0,
    );
    assert_eq!(t.verdict, TrendVerdict::NotJudged);
    let page = render_trend_html(&t);
    assert!(page.contains("&lt;b&gt;&amp;") && !page.contains("<b>&"));
    assert!(page.contains("trend-chart"));
}

/// Twenty seconds around `level` with per-second noise of ±0.5%: so steady that
/// the rank test finds any offset between runs significant.
fn steady(level: f64, seed: u64) -> Vec<f64> {
    seconds(level, seed)
        .into_iter()
        .map(|v| level + (v - level) / 10.0)
        .collect()
}

#[test]
fn a_drift_between_identical_runs_is_no_regression_and_ten_percent_is() {
    // Five identical runs of one build, each 0–3% off the others as a whole (the
    // noise between runs); the latest 3% above: its seconds sit wholly above the
    // baseline's, which the rank test alone called a regression (exit 99).
    let levels = [100.0, 101.5, 100.5, 102.0, 101.0];
    let base: Vec<TrendPoint> = levels
        .iter()
        .enumerate()
        .map(|(i, l)| point(i as i64 + 1, *l, Some(steady(*l, i as u64))))
        .collect();
    let mut aa = base.clone();
    aa.push(point(6, 104.0, Some(steady(104.0, 6))));
    let t = trend("검색", TrendMetric::P95, None, aa.clone(), 5, 5.0);
    assert!(t.p_value.unwrap() < 0.05, "the seconds alone differ: {t:?}");
    assert_eq!(t.verdict, TrendVerdict::WithinNoise, "{}", render_trend(&t));
    let text = render_trend(&t);
    assert!(
        text.contains("noise between runs: changes under 5% are treated as noise (--min-change)"),
        "{text}"
    );
    // The baseline runs agree within ±2%: the floor stays --min-change's.
    assert!(!t.floor.from_earlier_runs() && t.floor.earlier_runs.is_some());
    // --min-change 0: the rank test alone, as before.
    let t0 = trend("검색", TrendMetric::P95, None, aa, 5, 0.0);
    assert_eq!(t0.verdict, TrendVerdict::Regression);
    // A server 10% slower is a regression.
    let mut slow = base.clone();
    slow.push(point(6, 111.0, Some(steady(111.0, 6))));
    let t = trend("검색", TrendMetric::P95, None, slow, 5, 5.0);
    assert_eq!(t.verdict, TrendVerdict::Regression, "{}", render_trend(&t));
    // So is a tenth less throughput.
    let mut rps = base;
    rps.push(point(6, 90.0, Some(steady(90.0, 6))));
    let t = trend("x", TrendMetric::Rps, None, rps, 5, 5.0);
    assert_eq!(t.verdict, TrendVerdict::Regression);
}

#[test]
fn baseline_runs_that_wander_widely_set_a_wider_floor_and_say_so() {
    // Earlier runs of this test wandered ±10% as wholes: a 12% change is one
    // they show themselves.
    let levels = [100.0, 112.0, 95.0, 108.0, 98.0];
    let mut pts: Vec<TrendPoint> = levels
        .iter()
        .enumerate()
        .map(|(i, l)| point(i as i64 + 1, *l, Some(steady(*l, i as u64))))
        .collect();
    pts.push(point(6, 112.0, Some(steady(112.0, 6))));
    let t = trend("x", TrendMetric::P95, None, pts.clone(), 5, 5.0);
    assert!(
        t.floor.from_earlier_runs() && t.floor.pct > 12.0,
        "{:?}",
        t.floor
    );
    assert_eq!(t.verdict, TrendVerdict::WithinNoise, "{}", render_trend(&t));
    assert!(
        t.noise_between_runs
            .contains("the spread between the 5 earlier runs of this test"),
        "{}",
        t.noise_between_runs
    );
    let json: serde_json::Value = serde_json::from_str(&render_trend_json(&t)).unwrap();
    assert_eq!(json["floor"]["earlier_runs"]["runs"], 5);
    assert!(render_trend_html(&t).contains("trend-noise-between-runs"));
    // Far beyond that spread: a regression.
    pts[5] = point(6, 160.0, Some(steady(160.0, 6)));
    let t = trend("x", TrendMetric::P95, None, pts, 5, 5.0);
    assert_eq!(t.verdict, TrendVerdict::Regression);
}
