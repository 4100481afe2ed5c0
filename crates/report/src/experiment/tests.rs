use super::*;

fn usl(x: f64) -> f64 {
    // Planted: λ = 100, σ = 0.05, κ = 0.01; the peak is at √(0.95 / 0.01) = 9.747.
    100.0 * x / (1.0 + 0.05 * (x - 1.0) + 0.01 * x * (x - 1.0))
}

fn row(value: f64, label: &str, measured: Option<f64>, verdict: &str, run: &str) -> ExperimentRow {
    ExperimentRow {
        value,
        label: label.to_string(),
        measured,
        verdict: verdict.to_string(),
        run_id: Some(run.to_string()),
        error: None,
    }
}

fn pods() -> ExperimentTable {
    ExperimentTable {
        knob: "replicas".into(),
        unit: Some("pods".into()),
        metric: CAPACITY_METRIC.into(),
        points: [1.0, 2.0, 4.0, 6.0, 8.0]
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                row(
                    x,
                    &format!("{x} {}", if x == 1.0 { "pod" } else { "pods" }),
                    Some(usl(x)),
                    if x < 6.0 {
                        "ingress CPU: 1.9 of 2 cores"
                    } else {
                        "DB pool: 10/10 connections in use, 42 waiting"
                    },
                    &format!("{}", 40 + i),
                )
            })
            .collect(),
        cost_per_unit: None,
    }
}

#[test]
fn the_analysis_fits_checks_and_predicts_the_next_step() {
    let t = pods();
    let a = analyse(&t);
    let f = a.fit.unwrap();
    assert!(
        (f.sigma - 0.05).abs() < 1e-6 && (f.kappa - 0.01).abs() < 1e-7,
        "{f:?}"
    );
    // Checks for 4, 6 and 8 pods; from three points on the law is exact.
    assert_eq!(
        a.predictions.iter().map(|c| c.x).collect::<Vec<_>>(),
        vec![4.0, 6.0, 8.0]
    );
    assert!(a.predictions[1].error_pct.abs() < 1e-6 && a.predictions[2].error_pct.abs() < 1e-6);
    // The first from two points (Amdahl through 1 and 2 pods: N/C linear in N).
    let slope = 2.0 / usl(2.0) - 1.0 / usl(1.0);
    let at4 = 4.0 / (1.0 / usl(1.0) + slope * 3.0);
    let want = (at4 - usl(4.0)) / usl(4.0) * 100.0;
    assert!((a.predictions[0].error_pct - want).abs() < 1e-6, "{a:?}");
    // The last step was 2 pods: the next point is 10 pods, predicted by the law.
    assert_eq!(a.step, Some(2.0));
    let n = a.next.unwrap();
    assert_eq!(n.value, 10.0);
    assert!((n.predicted - usl(10.0)).abs() < 1e-6, "{n:?}");
    assert!((n.gain_pct - (usl(10.0) / usl(8.0) - 1.0) * 100.0).abs() < 1e-6);
    assert!(a.fit_note.is_none());
}

#[test]
fn text_shows_the_table_the_checks_and_the_limit() {
    let t = pods();
    let out = text(&t);
    assert!(
        out.contains("Experiment: capacity (req/s) against replicas (pods)"),
        "{out}"
    );
    for r in &t.points {
        assert!(out.contains(r.run_id.as_deref().unwrap()), "{out}");
    }
    assert!(
        out.contains("DB pool: 10/10 connections in use, 42 waiting"),
        "{out}"
    );
    assert!(out.contains("ingress CPU: 1.9 of 2 cores"), "{out}");
    let c = analyse(&t).predictions[0];
    let line = format!(
        "predicted {} req/s at 4 pods, measured {}: error {:+.1}%",
        pado_base::units::rate(c.predicted),
        pado_base::units::rate(usl(4.0)),
        c.error_pct
    );
    assert!(out.contains(&line), "{out}\nwant {line}");
    let at8 = pado_base::units::rate(usl(8.0));
    let exact = format!("predicted {at8} req/s at 8 pods, measured {at8}: error +0.0%");
    assert!(out.contains(&exact), "{out}");
    assert!(out.contains("Capacity peaks at 9.75 pods"), "{out}");
    assert!(
        out.contains("Next step: at 10 pods the fit predicts"),
        "{out}"
    );
    assert!(!out.contains("per cost"), "{out}");
}

#[test]
fn capacity_per_cost_is_capacity_over_the_knobs_cost() {
    let mut t = pods();
    t.cost_per_unit = Some(2.5);
    let a = analyse(&t);
    assert_eq!(a.per_cost.len(), 5);
    for c in &a.per_cost {
        assert!(
            (c.per_cost - usl(c.value) / (c.value * 2.5)).abs() < 1e-9,
            "{c:?}"
        );
    }
    let out = text(&t);
    assert!(out.contains("per cost"), "{out}");
    // 1 pod: 100 req/s for 2.5.
    assert!(out.contains("40.00"), "{out}");
    let j = json(&t);
    assert!((j["per_cost"][0]["per_cost"].as_f64().unwrap() - 40.0).abs() < 1e-9);
}

#[test]
fn a_failed_point_is_shown_and_left_out_of_the_fit() {
    let mut t = pods();
    t.points[2].measured = Some(1.0);
    t.points[2].error = Some("ready: never held within 30s (GET /healthz answered 503)".into());
    let a = analyse(&t);
    assert_eq!(a.fit.unwrap().points, 4);
    assert!((a.fit.unwrap().kappa - 0.01).abs() < 1e-7);
    assert!(!a.predictions.iter().any(|c| c.x == 4.0));
    let out = text(&t);
    assert!(
        out.contains("failed: ready: never held within 30s"),
        "{out}"
    );
    let page = html(&t);
    assert!(page.contains("failed: ready: never held"), "{page}");
}

#[test]
fn two_points_say_crosstalk_was_not_fitted_and_one_point_says_why_no_fit() {
    let mut t = pods();
    t.points.truncate(2);
    let a = analyse(&t);
    assert_eq!(a.fit.unwrap().kappa, 0.0);
    assert!(a
        .fit_note
        .as_deref()
        .unwrap()
        .contains("Two points fit contention only"));
    t.points.truncate(1);
    let a = analyse(&t);
    assert!(a.fit.is_none());
    assert!(
        a.fit_note
            .as_deref()
            .unwrap()
            .contains("at least 2 distinct knob values"),
        "{a:?}"
    );
    assert!(text(&t).contains("No scaling fit"));
}

#[test]
fn latency_at_a_fixed_load_is_tabled_and_charted_but_not_fitted() {
    let mut t = pods();
    t.metric = P95_METRIC.into();
    let a = analyse(&t);
    assert!(a.fit.is_none() && a.predictions.is_empty() && a.next.is_none());
    assert!(a.fit_note.as_deref().unwrap().contains("No scaling fit"));
    let page = html(&t);
    assert_eq!(page.matches("class=\"measured\"").count(), 5);
    assert!(!page.contains("experiment-fit\""));
    assert!(!page.contains("class=\"predicted\""));
}

#[test]
fn the_page_draws_every_point_the_fit_and_the_next_step() {
    let t = pods();
    let page = html(&t);
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert_eq!(page.matches("class=\"measured\"").count(), 5);
    assert!(page.contains("id=\"experiment-fit\""));
    assert_eq!(page.matches("class=\"predicted\"").count(), 1);
    let at8 = pado_base::units::rate(usl(8.0));
    assert!(page.contains(&format!(
        "predicted {at8} req/s at 8 pods, measured {at8}: error +0.0%"
    )));
    assert!(page.contains("Capacity peaks at 9.75 pods"));
}

#[test]
fn hangul_round_trips_and_markup_is_escaped() {
    let mut t = pods();
    t.knob = "풀 크기".into();
    t.unit = Some("개".into());
    t.points[0].label = "풀 1개".into();
    t.points[1].label = "풀 2개".into();
    t.points[1].verdict = "DB 풀: 2/2 연결 사용 중, 대기 7".into();
    t.points[2].verdict = "<script>alert(1)</script>".into();
    let j = json(&t);
    let back: serde_json::Value = serde_json::from_str(&j.to_string()).unwrap();
    assert_eq!(back["knob"], "풀 크기");
    assert_eq!(back["points"][0]["label"], "풀 1개");
    assert_eq!(
        back["points"][1]["verdict"],
        "DB 풀: 2/2 연결 사용 중, 대기 7"
    );
    let page = html(&t);
    // The whole table reads back from its JSON, Hangul intact (the figures to the
    // last digit serde_json's parser keeps).
    let mut table: ExperimentTable = serde_json::from_value(back).unwrap();
    for (got, want) in table.points.iter_mut().zip(&t.points) {
        let (g, w) = (got.measured.unwrap(), want.measured.unwrap());
        assert!((g - w).abs() <= 1e-12 * w, "{g} vs {w}");
        got.measured = want.measured;
    }
    assert_eq!(table, t);
    assert!(page.contains("풀 크기") && page.contains("DB 풀: 2/2 연결 사용 중, 대기 7"));
    assert!(!page.contains("<script>alert"), "{page}");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // Text: the run column starts at the same terminal column on every row, Hangul
    // taking two.
    let out = text(&t);
    let cols: Vec<usize> = out
        .lines()
        .skip(2)
        .take(5)
        .enumerate()
        .filter_map(|(i, l)| {
            let run = l.find(&format!(" {} ", 40 + i))?;
            Some(pado_base::text::columns(&l[..run]))
        })
        .collect();
    assert_eq!(cols.len(), 5, "{out}");
    assert!(cols.windows(2).all(|w| w[0] == w[1]), "{cols:?}\n{out}");
    assert!(out.contains("풀 1개"), "{out}");
}

fn curve_table(f: impl Fn(f64) -> f64, xs: &[f64]) -> ExperimentTable {
    ExperimentTable {
        knob: "threads".into(),
        unit: None,
        metric: CAPACITY_METRIC.into(),
        points: xs
            .iter()
            .map(|&x| row(x, "", Some(f(x)), "no limit found", "1"))
            .collect(),
        cost_per_unit: None,
    }
}

#[test]
fn a_ceiling_or_peak_is_stated_only_within_reach_of_the_points() {
    // Amdahl with σ = 0.1: capacity flattens towards λ/σ = 500 (best measured 263).
    let amdahl = curve_table(
        |x| 50.0 * x / (1.0 + 0.1 * (x - 1.0)),
        &[1.0, 2.0, 4.0, 8.0],
    );
    let lines = limit_lines(&amdahl, &analyse(&amdahl)).join("\n");
    assert!(
        lines.contains("Capacity flattens towards 500 req/s"),
        "{lines}"
    );
    // σ = 0.001: the ceiling of 50,000 is far beyond the 396 measured: not stated.
    let nearly = curve_table(
        |x| 50.0 * x / (1.0 + 0.001 * (x - 1.0)),
        &[1.0, 2.0, 4.0, 8.0],
    );
    let lines = limit_lines(&nearly, &analyse(&nearly)).join("\n");
    assert!(!lines.contains("flattens"), "{lines}");
    assert!(lines.contains("no limit in sight"), "{lines}");
    // κ = 1e-5: a peak near 316, forty times the largest value measured.
    let far = curve_table(
        |x| 50.0 * x / (1.0 + 1e-5 * x * (x - 1.0)),
        &[1.0, 2.0, 4.0, 8.0],
    );
    let a = analyse(&far);
    assert!(a.fit.unwrap().peak_x.unwrap() > 100.0, "{a:?}");
    let lines = limit_lines(&far, &a).join("\n");
    assert!(!lines.contains("Capacity peaks"), "{lines}");
    assert!(lines.contains("too far out to trust"), "{lines}");
}
