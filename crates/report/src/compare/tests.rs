use super::*;
use pado_metrics::{Interval, Phases, RequestSample, SecondRecord, SeriesKey, SeriesStats};
use pado_results::RunMeta;

/// A 60-second run whose per-second request count and latency are drawn around
/// `rps` and `lat_ms` (deterministic noise from `seed`).
fn synthetic(seed: u64, rps: f64, lat_ms: f64) -> LoadedRun {
    shaped(seed, 60, "synthetic", |_| (rps, lat_ms))
}

/// A `secs`-second run named `name` whose second `t` has about `shape(t)` =
/// (requests, latency ms), with ±3% / ±15% deterministic noise from `seed`.
fn shaped(seed: u64, secs: u32, name: &str, shape: impl Fn(u32) -> (f64, f64)) -> LoadedRun {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut noise = move || rng.f64() - 0.5;
    let mut seconds = Vec::new();
    for t in 0..secs {
        let (rps, lat_ms) = shape(t);
        let n = (rps * (1.0 + 0.06 * noise())).round() as u64;
        let mut s = SeriesStats::new(SeriesKey::named("home"));
        for _ in 0..n {
            let us = (lat_ms * 1000.0 * (1.0 + 0.3 * noise())) as u64;
            s.record(&RequestSample {
                status: 200,
                phases: Phases {
                    duration_us: us,
                    waiting_us: us * 9 / 10,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        let mut r = SecondRecord::new(t);
        r.absorb(Interval {
            series: vec![s],
            ..Default::default()
        });
        seconds.push(r);
    }
    let meta = RunMeta {
        format: "pado-result".into(),
        version: 1,
        name: name.into(),
        duration_s: secs as f64,
        ..Default::default()
    };
    LoadedRun::from_seconds(meta, seconds)
}

/// Compare loaded runs (labels a, b, c, ...).
fn cmp(runs: &[&LoadedRun]) -> Comparison {
    let summaries: Vec<Summary> = runs.iter().map(|r| crate::build(r).unwrap()).collect();
    let sides: Vec<Side<'_>> = runs
        .iter()
        .zip(&summaries)
        .enumerate()
        .map(|(i, (run, summary))| Side {
            label: format!("{}", (b'a' + i as u8) as char),
            run,
            summary,
        })
        .collect();
    compare(&sides)
}

fn verdict(c: &Comparison, scope: &str, metric: &str, run: usize) -> Verdict {
    c.rows
        .iter()
        .find(|r| r.scope == scope && r.metric == metric)
        .unwrap_or_else(|| panic!("{scope} {metric}"))
        .verdicts[run]
}

#[test]
fn same_distribution_is_noise_and_a_ten_percent_shift_is_significant() {
    let a = synthetic(1, 1000.0, 20.0);
    let b = synthetic(2, 1000.0, 20.0);
    let c = synthetic(3, 1100.0, 22.0);
    let (sa, sb, sc) = (
        crate::build(&a).unwrap(),
        crate::build(&b).unwrap(),
        crate::build(&c).unwrap(),
    );
    let cmp = compare(&[
        Side {
            label: "a".into(),
            run: &a,
            summary: &sa,
        },
        Side {
            label: "b".into(),
            run: &b,
            summary: &sb,
        },
        Side {
            label: "c".into(),
            run: &c,
            summary: &sc,
        },
    ]);
    assert_eq!(
        verdict(&cmp, "overall", "req/s (mean)", 0),
        Verdict::WithinNoise
    );
    assert_eq!(
        verdict(&cmp, "overall", "latency p95 ms", 0),
        Verdict::WithinNoise
    );
    assert_eq!(verdict(&cmp, "overall", "req/s (mean)", 1), Verdict::Better);
    assert_eq!(
        verdict(&cmp, "overall", "latency p95 ms", 1),
        Verdict::Worse
    );
    assert_eq!(verdict(&cmp, "step home", "req/s", 1), Verdict::Better);
    let row = cmp
        .rows
        .iter()
        .find(|r| r.metric == "req/s (mean)")
        .unwrap();
    let change = row.changes[1].unwrap();
    assert!((change - 10.0).abs() < 2.0, "{change}");
    let text = render_compare(&cmp);
    assert!(
        text.contains("within noise") && text.contains("▲ better"),
        "{text}"
    );
    let html = render_compare_html(&cmp);
    assert!(html.contains("id=\"table-compare\"") && html.contains("class=\"better\""));
    assert!(text.contains("Mann-Whitney"));
}

#[test]
fn the_maximum_is_a_single_value_and_gets_no_mark() {
    // Slower in every second: whatever the two maxima, no mark can be earned
    // from one request each.
    let a = synthetic(1, 1000.0, 20.0);
    let b = synthetic(2, 1000.0, 26.0);
    let c = cmp(&[&a, &b]);
    assert_eq!(
        verdict(&c, "overall", "latency max ms", 0),
        Verdict::NotTested
    );
    assert_eq!(verdict(&c, "overall", "latency p50 ms", 0), Verdict::Worse);
    let row = c
        .rows
        .iter()
        .find(|r| r.metric == "latency max ms")
        .unwrap();
    assert_eq!(row.p_values[0], None);
    let text = render_compare(&c);
    let line = text.lines().find(|l| l.contains("latency max ms")).unwrap();
    assert!(line.trim_end().ends_with('—'), "{line}");
    assert!(text.contains("—: a single value"), "{text}");
}

#[test]
fn a_huge_change_over_three_seconds_is_too_few_to_judge() {
    let a = shaped(1, 3, "t", |_| (100.0, 20.0));
    let b = shaped(2, 3, "t", |_| (100.0, 6000.0));
    let c = cmp(&[&a, &b]);
    assert_eq!(
        verdict(&c, "overall", "latency p95 ms", 0),
        Verdict::TooFewSeconds
    );
    let change = c
        .rows
        .iter()
        .find(|r| r.metric == "latency p95 ms")
        .unwrap()
        .changes[0];
    assert!(change.unwrap() > 10_000.0, "{change:?}");
    let text = render_compare(&c);
    let p95 = text.lines().find(|l| l.contains("latency p95 ms")).unwrap();
    assert!(
        p95.contains("? too few seconds") && !p95.contains("within noise"),
        "{text}"
    );
    // Twenty seconds of the same: judged, and worse.
    let a = shaped(1, 20, "t", |_| (100.0, 20.0));
    let b = shaped(2, 20, "t", |_| (100.0, 6000.0));
    let c = cmp(&[&a, &b]);
    assert_eq!(verdict(&c, "overall", "latency p95 ms", 0), Verdict::Worse);
}

#[test]
fn a_burst_of_slow_seconds_is_not_called_noise() {
    // Five stalled seconds of sixty: the run's p95 explodes, most seconds do not
    // move.
    let a = synthetic(1, 1000.0, 20.0);
    let b = shaped(2, 60, "synthetic", |t| {
        (1000.0, if t % 12 == 5 { 3000.0 } else { 20.0 })
    });
    let c = cmp(&[&a, &b]);
    assert_eq!(
        verdict(&c, "overall", "latency p95 ms", 0),
        Verdict::FewSeconds
    );
    assert!(render_compare(&c).contains("! a few seconds"));
    // Without the burst: within noise (see also the test above).
    let b = synthetic(3, 1000.0, 20.0);
    let c = cmp(&[&a, &b]);
    assert_eq!(
        verdict(&c, "overall", "latency p95 ms", 0),
        Verdict::WithinNoise
    );
}

#[test]
fn direction_and_significance_come_from_the_same_seconds() {
    // Most seconds are 10% faster, but one in six nearly stops: the seconds
    // shifted up while the run's mean went down. Neither better nor worse.
    let a = synthetic(1, 1000.0, 20.0);
    let b = shaped(2, 60, "synthetic", |t| {
        (if t % 6 == 3 { 100.0 } else { 1100.0 }, 20.0)
    });
    let c = cmp(&[&a, &b]);
    let row = c.rows.iter().find(|r| r.metric == "req/s (mean)").unwrap();
    assert!(row.changes[0].unwrap() < 0.0, "{row:?}");
    assert_eq!(row.verdicts[0], Verdict::Mixed, "{row:?}");
    // Every second 10% faster: better, both ways.
    let b = synthetic(3, 1100.0, 20.0);
    let c = cmp(&[&a, &b]);
    assert_eq!(verdict(&c, "overall", "req/s (mean)", 0), Verdict::Better);
}

#[test]
fn different_tests_and_load_shapes_are_warned_about() {
    let with_shape = |mut r: LoadedRun, desc: &str| {
        r.meta.scenarios = vec![pado_results::ScenarioMeta {
            name: "default".into(),
            executor: "constant-vus".into(),
            description: desc.into(),
            open_model: false,
            max_vus: None,
            scripted: false,
        }];
        r
    };
    let a = with_shape(synthetic(1, 1000.0, 20.0), "8 VUs for 1m");
    let b = with_shape(synthetic(2, 1000.0, 20.0), "8 VUs for 1m");
    assert!(cmp(&[&a, &b]).warnings.is_empty());
    let c = with_shape(shaped(3, 30, "other", |_| (1000.0, 20.0)), "64 VUs for 30s");
    let cmp3 = cmp(&[&a, &b, &c]);
    let w = cmp3.warnings.join("\n");
    assert!(w.contains("A is `synthetic`, C is `other`"), "{w}");
    assert!(
        w.contains("64 VUs for 30s") && w.contains("8 VUs for 1m"),
        "{w}"
    );
    assert!(w.contains("A 60.0 s, C 30.0 s"), "{w}");
    assert!(!w.contains(" B "), "{w}");
    assert!(render_compare(&cmp3).contains("!! the load shapes differ"));
}

#[test]
fn stability_rows_go_from_the_median_to_99_percent() {
    let a = synthetic(1, 1000.0, 20.0);
    let b = synthetic(2, 1000.0, 20.0);
    let c = cmp(&[&a, &b]);
    let at = |m: &str| c.rows.iter().position(|r| r.metric == m).unwrap();
    assert!(at("req/s reached in 50% of seconds") < at("req/s reached in 95% of seconds"));
    assert!(at("req/s reached in 95% of seconds") < at("req/s reached in 99% of seconds"));
}

/// A soak analysis with one memory series rising `per_hour` bytes an hour (notable
/// when `leak`) and latency flat.
fn soak_with(per_hour: f64, leak: bool) -> pado_analysis::soak::Soak {
    use pado_analysis::drift::{Drift, PeriodDrift, SteadyPeriod};
    use pado_analysis::soak::{Resource, ResourceDrift, Soak, Verdict as SoakVerdict};
    let period = SteadyPeriod {
        label: "hold 30 VUs".into(),
        start_s: 0.0,
        end_s: 60.0,
    };
    Soak {
        verdict: if leak {
            SoakVerdict::LeakSuspected
        } else {
            SoakVerdict::Stable
        },
        steady_s: 55.0,
        latency: vec![PeriodDrift {
            period: period.clone(),
            drift: Drift {
                slope_per_hour: 3.0,
                relative_change: 0.01,
                p_value: 0.5,
                notable: false,
                n: 55,
                n_effective: 55.0,
            },
        }],
        resources: vec![ResourceDrift {
            resource: Resource::Memory,
            series: "process_resident_memory_bytes".into(),
            endpoint: "app".into(),
            bytes: true,
            period,
            from: 100.0 * 1048576.0,
            to: 100.0 * 1048576.0 + per_hour * 55.0 / 3600.0,
            slope_per_hour: per_hour,
            relative_change: 0.1,
            p_value: if leak { 1e-9 } else { 0.4 },
            n: 20,
            notable: leak,
            levelled_off: false,
        }],
        observed: true,
        generator: None,
    }
}

#[test]
fn soak_runs_show_each_verdict_and_the_change_per_hour_side_by_side() {
    let a = synthetic(1, 1000.0, 20.0);
    let b = synthetic(2, 1000.0, 20.0);
    let mut sa = crate::build(&a).unwrap();
    let mut sb = crate::build(&b).unwrap();
    fn side<'a>(label: &str, run: &'a LoadedRun, summary: &'a Summary) -> Side<'a> {
        Side {
            label: label.into(),
            run,
            summary,
        }
    }
    // Without a soak analysis on every side: no soak rows, no verdicts.
    sa.soak = Some(soak_with(8.0 * 1024.0 * 1048576.0, true));
    let c = compare(&[side("a", &a, &sa), side("b", &b, &sb)]);
    assert!(c.rows.iter().all(|r| r.scope != "soak"), "{:?}", c.rows);
    assert!(c.soak[0].is_some() && c.soak[1].is_none(), "{:?}", c.soak);
    // The leak, then the fix.
    sb.soak = Some(soak_with(0.5 * 1048576.0, false));
    let c = compare(&[side("a", &a, &sa), side("b", &b, &sb)]);
    assert_eq!(
        c.soak,
        vec![
            Some("leak suspected (process_resident_memory_bytes +8.0 GiB/hour)".to_string()),
            Some("stable".to_string())
        ]
    );
    let row = c
        .rows
        .iter()
        .find(|r| r.scope == "soak" && r.metric == "process_resident_memory_bytes per hour MiB")
        .unwrap_or_else(|| panic!("{:?}", c.rows));
    assert_eq!(row.values, vec![Some(8192.0), Some(0.5)]);
    // A slope near zero makes a change in % meaningless: none, and no mark.
    assert_eq!(row.changes, vec![None]);
    assert_eq!(row.verdicts, vec![Verdict::NotTested]);
    let latency = c
        .rows
        .iter()
        .find(|r| r.scope == "soak" && r.metric == "latency ms per hour")
        .unwrap();
    assert_eq!(latency.values, vec![Some(3.0), Some(3.0)]);
    let text = render_compare(&c);
    assert!(
        text.contains("soak: leak suspected (process_resident_memory_bytes +8.0 GiB/hour)")
            && text.contains("soak: stable"),
        "{text}"
    );
    let html = render_compare_html(&c);
    assert!(html.contains(" — soak: stable"), "{html}");
}

/// A 10-second run at 200 req/s of a server answering in `delay_ms`, shifted as a
/// whole by `offset` (the drift between runs: another moment, another process on
/// the machine), with the per-request noise of `shaped`.
fn short_run(seed: u64, delay_ms: f64, offset: f64) -> LoadedRun {
    shaped(seed, 10, "aa", move |_| (200.0, delay_ms * (1.0 + offset)))
}

/// The rows a pair called different (better, worse, a few seconds, mixed).
fn called_different(c: &Comparison) -> Vec<String> {
    c.rows
        .iter()
        .filter(|r| {
            r.verdicts.iter().any(|v| {
                matches!(
                    v,
                    Verdict::Better | Verdict::Worse | Verdict::FewSeconds | Verdict::Mixed
                )
            })
        })
        .map(|r| format!("{} {} {:?} {:?}", r.scope, r.metric, r.changes, r.verdicts))
        .collect()
}

#[test]
fn twenty_aa_pairs_drifting_between_runs_are_never_different_and_ten_percent_slower_is_worse() {
    // Each run of the same 5 ms server lands 0–3% off the others as a whole, as
    // identical runs did on a busy machine: within each run the seconds agree, so
    // the rank test alone called such pairs "▼ worse" and "▲ better".
    let mut rng = fastrand::Rng::with_seed(2028);
    let mut offset = move || rng.f64() * 0.03;
    let mut rank_test_alone = 0;
    for pair in 0..20u64 {
        let a = short_run(pair * 2 + 1, 5.0, offset());
        let b = short_run(pair * 2 + 2, 5.0, offset());
        let c = cmp(&[&a, &b]);
        let different = called_different(&c);
        assert!(different.is_empty(), "pair {pair}: {different:#?}");
        // The floor is stated, and it is --min-change's.
        assert!(c
            .noise_between_runs
            .starts_with("changes under 5% are treated as noise (--min-change)"));
        let p95 = c
            .rows
            .iter()
            .find(|r| r.metric == "latency p95 ms")
            .unwrap();
        assert_eq!(p95.floor.map(|f| f.pct), Some(5.0));
        if p95.p_values[0].is_some_and(|p| p < 0.05) {
            rank_test_alone += 1;
        }
        // A server 10% slower (with the same drift) is worse, overall and per step.
        let slow = short_run(pair * 2 + 100, 5.5, offset());
        let c = cmp(&[&a, &slow]);
        for (scope, metric) in [
            ("overall", "latency p50 ms"),
            ("overall", "latency p95 ms"),
            ("overall", "latency p99 ms"),
            ("step home", "p95 ms"),
        ] {
            assert_eq!(
                verdict(&c, scope, metric, 0),
                Verdict::Worse,
                "pair {pair} {scope} {metric}: {}",
                render_compare(&c)
            );
        }
        // Throughput did not move: no verdict on it.
        assert_eq!(
            verdict(&c, "overall", "req/s (mean)", 0),
            Verdict::WithinNoise
        );
    }
    // The planted drift is one the per-second test alone does see: the floor is
    // what keeps these pairs quiet.
    assert!(rank_test_alone >= 5, "{rank_test_alone} of 20");
}

#[test]
fn min_change_zero_brings_back_the_rank_test_alone() {
    let a = short_run(1, 5.0, 0.0);
    let b = short_run(2, 5.0, 0.03);
    let summaries = [crate::build(&a).unwrap(), crate::build(&b).unwrap()];
    let sides = [
        Side {
            label: "a".into(),
            run: &a,
            summary: &summaries[0],
        },
        Side {
            label: "b".into(),
            run: &b,
            summary: &summaries[1],
        },
    ];
    let zero = NoiseFloor {
        min_change_pct: 0.0,
        earlier_runs: Vec::new(),
    };
    let c = compare_with(&sides, &zero);
    assert_eq!(verdict(&c, "overall", "latency p50 ms", 0), Verdict::Worse);
    assert!(c.noise_between_runs.starts_with("changes under 0%"));
    assert_eq!(
        verdict(&compare(&sides), "overall", "latency p50 ms", 0),
        Verdict::WithinNoise
    );
}

#[test]
fn the_spread_between_earlier_runs_sets_the_floor_when_wider_and_says_so() {
    let a = short_run(1, 5.0, 0.0);
    let slow = short_run(2, 5.5, 0.0);
    let summaries = [crate::build(&a).unwrap(), crate::build(&slow).unwrap()];
    let sides = [
        Side {
            label: "a".into(),
            run: &a,
            summary: &summaries[0],
        },
        Side {
            label: "b".into(),
            run: &slow,
            summary: &summaries[1],
        },
    ];
    let earlier = |p95s: &[f64]| NoiseFloor {
        min_change_pct: 5.0,
        earlier_runs: p95s
            .iter()
            .map(|p| EarlierRun::overall(Some(5.0), Some(*p), Some(7.0), 200.0, 0.0))
            .collect(),
    };
    // Earlier runs whose p95 wandered ±8%: a 10% change is one they also show.
    let wide = compare_with(&sides, &earlier(&[5.0, 5.8, 5.1, 5.6, 5.2, 5.9]));
    assert_eq!(
        verdict(&wide, "overall", "latency p95 ms", 0),
        Verdict::WithinNoise,
        "{}",
        render_compare(&wide)
    );
    let f = wide
        .rows
        .iter()
        .find(|r| r.metric == "latency p95 ms")
        .unwrap()
        .floor
        .unwrap();
    assert!(f.from_earlier_runs() && f.pct > 10.0, "{f:?}");
    assert!(
        wide.noise_between_runs
            .contains("the spread between the 6 earlier runs of this test is larger: overall latency p95 ms ±"),
        "{}",
        wide.noise_between_runs
    );
    // p50 did not vary between the earlier runs: --min-change holds, and it is worse.
    assert_eq!(
        verdict(&wide, "overall", "latency p50 ms", 0),
        Verdict::Worse
    );
    // Earlier runs that agree within 1%: --min-change holds, the change is worse.
    let tight = compare_with(&sides, &earlier(&[5.0, 5.02, 4.98, 5.01]));
    assert_eq!(
        verdict(&tight, "overall", "latency p95 ms", 0),
        Verdict::Worse
    );
    assert!(
        tight
            .noise_between_runs
            .contains("the spread between the 4 earlier runs of this test is smaller"),
        "{}",
        tight.noise_between_runs
    );
    // Two earlier runs are too few, and the output says how many are needed.
    let few = compare_with(&sides, &earlier(&[5.0, 5.9]));
    assert_eq!(
        verdict(&few, "overall", "latency p95 ms", 0),
        Verdict::Worse
    );
    assert!(few.noise_between_runs.contains("2 earlier runs"));
    // Text, JSON and HTML all state the floor.
    assert!(render_compare(&wide).contains("noise between runs: changes under 5%"));
    let json: serde_json::Value = serde_json::from_str(&render_compare_json(&wide)).unwrap();
    assert_eq!(json["min_change_pct"], 5.0);
    assert!(json["noise_between_runs"]
        .as_str()
        .unwrap()
        .contains("6 earlier runs"));
    let p95 = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "latency p95 ms")
        .unwrap();
    assert_eq!(p95["floor"]["earlier_runs"]["runs"], 6);
    assert!(render_compare_html(&wide).contains("id=\"noise-between-runs\""));
}

#[test]
fn rows_the_history_does_not_record_take_the_spread_of_their_nearest_figure() {
    let f = NoiseFloor {
        min_change_pct: 5.0,
        earlier_runs: [20.0, 26.0, 22.0, 30.0]
            .iter()
            .map(|p95| EarlierRun::overall(Some(20.0), Some(*p95), None, 100.0, 0.0))
            .collect(),
    };
    let latency = f.of_row("overall", "latency p95 ms");
    assert!(latency.from_earlier_runs(), "{latency:?}");
    assert_eq!(f.of_row("overall", "ttfb p95 ms"), latency);
    assert_eq!(f.of_row("stage hold", "p95 ms"), latency);
    // p50 did not vary, so TTFB's mean and median keep --min-change.
    assert!(!f.of_row("overall", "ttfb mean ms").from_earlier_runs());
    // No recorded p99: --min-change alone.
    assert_eq!(f.of_row("overall", "ttfb p99 ms").earlier_runs, None);
}

/// Result directories on disk are loaded in order, labelled by their names, with
/// the figures their timelines hold; a path that is not one is named.
#[test]
fn compared_directories_are_loaded_in_order_under_their_names() {
    let t = tempfile::tempdir().unwrap();
    // `per_second` requests in each of 10 seconds.
    let write = |name: &str, per_second: u64| {
        let dir = pado_results::ResultDir::create(t.path().join(name)).unwrap();
        dir.write_meta(&RunMeta {
            format: "pado-result".into(),
            version: 1,
            name: name.into(),
            duration_s: 10.0,
            ..Default::default()
        })
        .unwrap();
        let mut w = dir.timeline_writer().unwrap();
        for sec in 0..10 {
            let mut s = SeriesStats::new(SeriesKey::named("home"));
            for _ in 0..per_second {
                s.record(&RequestSample {
                    status: 200,
                    ..Default::default()
                });
            }
            let mut r = SecondRecord::new(sec);
            r.absorb(Interval {
                series: vec![s],
                ..Default::default()
            });
            w.write(&r).unwrap();
        }
        drop(w);
        dir.path().to_path_buf()
    };
    let a = write("기준", 7);
    let b = write("after", 13);
    let loaded = load_runs(&[a.clone(), b]).unwrap();
    let labels: Vec<&str> = loaded.iter().map(|l| l.label.as_str()).collect();
    assert_eq!(labels, ["기준", "after"]);
    assert_eq!(loaded[0].summary.requests, 70);
    assert_eq!(loaded[1].summary.requests, 130);
    assert_eq!(loaded[1].side().label, "after");
    let missing = t.path().join("없음");
    let e = load_runs(&[a, missing.clone()]).err().unwrap();
    assert!(matches!(e, LoadError::NotResultDir(_)), "{e}");
    assert!(e.to_string().contains("없음"), "{e}");
}

/// A 40-second run of one LLM step (`채팅`, four streams a second) whose tokens come
/// `gap_ms` apart (±10% noise from `seed`) after a first token at `ttft_ms`.
fn llm_run(seed: u64, ttft_ms: f64, gap_ms: f64) -> LoadedRun {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut noise = move || 1.0 + 0.2 * (rng.f64() - 0.5);
    let mut seconds = Vec::new();
    for t in 0..40u32 {
        let mut s = SeriesStats::new(SeriesKey::named("채팅"));
        let mut e = pado_metrics::SseStats::default();
        for _ in 0..4 {
            let ttft = (ttft_ms * 1000.0 * noise()) as u64;
            let mut decode = 0;
            for _ in 0..19 {
                let gap = (gap_ms * 1000.0 * noise()) as u64;
                e.record_itl(gap);
                decode += gap;
            }
            e.record(&pado_metrics::SseStream {
                events: 21,
                llm: true,
                tokens: 20,
                ttft_us: Some(ttft),
                decode_us: decode,
                duration_us: ttft + decode,
            });
            s.record(&RequestSample {
                status: 200,
                phases: Phases {
                    duration_us: ttft + decode,
                    waiting_us: ttft,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        s.sse = Some(Box::new(e));
        let mut r = SecondRecord::new(t);
        r.absorb(Interval {
            series: vec![s],
            ..Default::default()
        });
        seconds.push(r);
    }
    let meta = RunMeta {
        format: "pado-result".into(),
        version: 1,
        name: "llm".into(),
        duration_s: 40.0,
        ..Default::default()
    };
    LoadedRun::from_seconds(meta, seconds)
}

#[test]
fn slower_tokens_are_worse_itl_and_fewer_tokens_per_second_and_a_rerun_is_noise() {
    let fast = llm_run(1, 100.0, 10.0);
    let fast_again = llm_run(2, 100.0, 10.0);
    let slow = llm_run(3, 100.0, 30.0);
    let c = cmp(&[&fast, &fast_again, &slow]);
    for scope in ["overall", "step 채팅"] {
        for metric in ["itl p50 ms", "itl p99 ms", "tpot p50 ms"] {
            assert_eq!(
                verdict(&c, scope, metric, 0),
                Verdict::WithinNoise,
                "{scope} {metric}"
            );
            assert_eq!(
                verdict(&c, scope, metric, 1),
                Verdict::Worse,
                "{scope} {metric}"
            );
        }
        // Tokens per request per second: higher is better, so slower is worse.
        let m = "tokens/s per request p50";
        assert_eq!(verdict(&c, scope, m, 0), Verdict::WithinNoise, "{scope}");
        assert_eq!(verdict(&c, scope, m, 1), Verdict::Worse, "{scope}");
        // The first token's time did not move.
        assert_eq!(verdict(&c, scope, "ttft p50 ms", 1), Verdict::WithinNoise);
    }
    let itl = c
        .rows
        .iter()
        .find(|r| r.scope == "step 채팅" && r.metric == "itl p50 ms")
        .unwrap();
    assert!((itl.values[0].unwrap() - 10.0).abs() < 0.5, "{itl:?}");
    assert!((itl.values[2].unwrap() - 30.0).abs() < 1.5, "{itl:?}");
    // The other way round, the same change is better.
    let back = cmp(&[&slow, &fast]);
    assert_eq!(verdict(&back, "overall", "itl p50 ms", 0), Verdict::Better);
    assert_eq!(
        verdict(&back, "overall", "tokens/s per request p50", 0),
        Verdict::Better
    );
    // Runs without streams have no LLM rows.
    let plain = cmp(&[&synthetic(1, 100.0, 5.0), &synthetic(2, 100.0, 5.0)]);
    assert!(!plain.rows.iter().any(|r| r.metric.starts_with("itl")));
}

/// Compare loaded runs (labels a, b, c, ...) with `floor` as the noise between runs.
fn cmp_with(runs: &[&LoadedRun], floor: &NoiseFloor) -> Comparison {
    let summaries: Vec<Summary> = runs.iter().map(|r| crate::build(r).unwrap()).collect();
    let sides: Vec<Side<'_>> = runs
        .iter()
        .zip(&summaries)
        .enumerate()
        .map(|(i, (run, summary))| Side {
            label: format!("{}", (b'a' + i as u8) as char),
            run,
            summary,
        })
        .collect();
    compare_with(&sides, floor)
}

/// Earlier runs of the LLM test whose recorded TTFT (overall and of step `채팅`)
/// was `ttft_ms[i]` × (1, 1.09, 1.15) for p50, p95, p99.
fn earlier_llm(ttft_ms: &[f64]) -> NoiseFloor {
    NoiseFloor {
        min_change_pct: 5.0,
        earlier_runs: ttft_ms
            .iter()
            .map(|t| {
                let l = EarlierLlm {
                    ttft_p50_ms: Some(*t),
                    ttft_p95_ms: Some(t * 1.09),
                    ttft_p99_ms: Some(t * 1.15),
                    ..Default::default()
                };
                EarlierRun::overall(Some(5.0), Some(6.0), Some(7.0), 80.0, 0.0)
                    .with_llm(None, &l)
                    .with_llm(Some("채팅"), &l)
            })
            .collect(),
    }
}

#[test]
fn llm_rows_take_the_spread_of_their_own_figure_between_earlier_runs() {
    let base = llm_run(1, 100.0, 10.0);
    let again = llm_run(2, 100.0, 10.0);
    // The first token 30% later, the tokens after it as before.
    let slower = llm_run(3, 130.0, 10.0);
    // Earlier runs that agreed within about 1%: the floor stays --min-change, a
    // rerun is no change and the 30% is called out.
    let tight = cmp_with(
        &[&base, &again, &slower],
        &earlier_llm(&[100.0, 101.0, 99.0, 100.5, 99.5]),
    );
    for scope in ["overall", "step 채팅"] {
        for m in ["ttft p50 ms", "ttft p95 ms", "ttft p99 ms"] {
            assert_eq!(
                verdict(&tight, scope, m, 0),
                Verdict::WithinNoise,
                "{scope} {m}"
            );
            assert_eq!(verdict(&tight, scope, m, 1), Verdict::Worse, "{scope} {m}");
        }
        assert_eq!(
            verdict(&tight, scope, "itl p50 ms", 1),
            Verdict::WithinNoise,
            "{scope}"
        );
    }
    let row = |c: &Comparison, scope: &str, m: &str| {
        c.rows
            .iter()
            .find(|r| r.scope == scope && r.metric == m)
            .unwrap()
            .clone()
    };
    let f = row(&tight, "overall", "ttft p95 ms").floor.unwrap();
    let spread = f.earlier_runs.expect("the history's TTFT p95 was read");
    assert_eq!(spread.runs, 5);
    assert!(spread.pct < 5.0 && !f.from_earlier_runs(), "{f:?}");
    // Earlier runs whose TTFT wandered by tens of percent (a shared GPU): the same
    // 30% is one identical runs also showed, so it is within noise, and the
    // output says the floor came from the history.
    let wide = cmp_with(
        &[&base, &slower],
        &earlier_llm(&[70.0, 130.0, 85.0, 125.0, 100.0, 140.0]),
    );
    for scope in ["overall", "step 채팅"] {
        for m in ["ttft p50 ms", "ttft p95 ms"] {
            assert_eq!(
                verdict(&wide, scope, m, 0),
                Verdict::WithinNoise,
                "{scope} {m}"
            );
            let f = row(&wide, scope, m).floor.unwrap();
            assert!(f.from_earlier_runs() && f.pct > 30.0, "{scope} {m} {f:?}");
        }
    }
    assert!(
        wide.noise_between_runs.contains("overall ttft p95 ms ±")
            && wide.noise_between_runs.contains("step 채팅 ttft p50 ms ±"),
        "{}",
        wide.noise_between_runs
    );
    // Rows the history did not record for the LLM (ITL here) keep --min-change.
    let itl = row(&wide, "overall", "itl p50 ms").floor.unwrap();
    assert_eq!(itl.earlier_runs, None);
}
