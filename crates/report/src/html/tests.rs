use super::*;
use crate::stages::test_support::*;
use crate::summary::build;
use pado_metrics::{
    CheckCounts, ErrorKind, Phases, RequestSample, SecondRecord, SeriesKey, SeriesStats,
};
use pado_results::{ResultDir, ScenarioMeta, ThresholdSpec};

const XSS: &str = "<script>alert(1)</script>";
const KOREAN: &str = "검색 \"엔진\" & <b>";

fn between<'a>(s: &'a str, start: &str, end: &str) -> &'a str {
    let i = s.find(start).unwrap_or_else(|| panic!("no {start}")) + start.len();
    let j = s[i..]
        .find(end)
        .unwrap_or_else(|| panic!("no {end} after {start}"))
        + i;
    &s[i..j]
}

fn data_json(html: &str) -> serde_json::Value {
    let raw = between(
        html,
        "<script type=\"application/json\" id=\"data\">",
        "</script>",
    );
    serde_json::from_str(raw).expect("data block is JSON")
}

/// `data-value`s of the cells of the first row whose opening tag contains `marker`.
fn row_values(html: &str, marker: &str) -> Vec<String> {
    let row = between(html, marker, "</tr>");
    row.split("data-value=\"")
        .skip(1)
        .map(|p| p[..p.find('"').unwrap()].to_string())
        .collect()
}

fn two_stage_run() -> LoadedRun {
    let mut m = meta(KOREAN, 10.0);
    m.stages = vec![
        stage(0, 0.0, 4.0, "ramp 0→8 VUs"),
        stage(1, 4.0, 10.0, "hold </script> 8"),
    ];
    m.scenarios = vec![ScenarioMeta {
        name: "default".into(),
        executor: "ramping-vus".into(),
        description: "0→8 VUs <fast>".into(),
        open_model: false,
        max_vus: None,
        scripted: false,
    }];
    m.thresholds = vec![
        ThresholdSpec {
            metric: "http_req_duration".into(),
            expr: "p(95) < 2".into(),
            abort_on_fail: false,
            window_s: None,
        },
        ThresholdSpec {
            metric: "http_req_failed".into(),
            expr: "rate < 0.01".into(),
            abort_on_fail: false,
            window_s: None,
        },
    ];
    m.warnings = vec!["<img src=x onerror=alert(1)>".into()];
    let seconds = (0..10u32)
        .map(|t| {
            let mut r = if t < 4 {
                second(
                    t,
                    t * 2,
                    vec![series(XSS, 9, 200, 1000), series(XSS, 1, 500, 1000)],
                )
            } else {
                let mut tagged = SeriesStats::new(SeriesKey {
                    name: KOREAN.into(),
                    tags: vec![("class".into(), "<rare>".into())],
                });
                for _ in 0..5 {
                    tagged.record(&sample(200, 9000));
                }
                second(t, 8, vec![series(KOREAN, 25, 200, 5000), tagged])
            };
            r.checks.insert(
                format!("{XSS} status is 200"),
                CheckCounts {
                    passes: 9,
                    fails: if t == 2 { 1 } else { 0 },
                },
            );
            r
        })
        .collect();
    run(m, seconds)
}

#[test]
fn escapes_everything_and_has_stable_ids() {
    let r = two_stage_run();
    let s = build(&r).unwrap();
    let html = render_html(&r, &s);
    for id in [
        "chart-vus",
        "chart-rps",
        "chart-latency",
        "chart-errors",
        "table-steps",
        "table-stages",
        "table-thresholds",
        "table-checks",
        "table-phases",
        "table-tags",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "missing #{id}");
    }
    assert!(!html.contains("<script>alert"));
    assert!(!html.contains("<img"));
    assert!(!html.contains("& <b>"));
    assert!(!html.contains("<rare>"));
    assert!(!html.contains("<fast>"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("검색 &quot;엔진&quot; &amp; &lt;b&gt;"));
    assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
    // Exactly two script elements: the data and the code.
    assert_eq!(html.matches("<script").count(), 2);
    assert_eq!(html.matches("</script>").count(), 2);
    assert!(!between(&html, "id=\"data\">", "</script>").contains('<'));
    let d = data_json(&html);
    assert_eq!(d["stages"][1]["label"], "hold </script> 8");
    assert_eq!(d["stage_rows"], 1);
    assert_eq!(d["duration"], 10.0);
    // Thresholds: p95 of 1..9 ms fails `< 2`, the failure rate of 4% fails too.
    assert!(html.contains("class=\"badge fail\""));
    assert_eq!(html.matches("data-ok=\"false\"").count(), 3);
    // Checks: 90 passes, 1 fail.
    let check = row_values(&html, "<tr class=\"bad\"><td class=\"name\">&lt;script");
    assert_eq!(check[..2], ["90".to_string(), "1".to_string()]);
    // Steps: the XSS step has 40 requests, 4 failed.
    let steps = between(&html, "id=\"table-steps\"", "</table>");
    let xss_row = row_values(
        steps,
        "<td class=\"name\">&lt;script&gt;alert(1)&lt;/script&gt;</td>",
    );
    assert_eq!(xss_row[..2], ["40".to_string(), "4".to_string()]);
}

#[test]
fn the_verdict_is_listed_at_the_top_escaped() {
    let r = two_stage_run();
    let mut s = build(&r).unwrap();
    assert!(s.verdict[0].starts_with("SLA not met"), "{:?}", s.verdict);
    s.verdict.push("load <b>rose</b> & fell".into());
    let html = render_html(&r, &s);
    let at = html.find("id=\"verdict\"").expect("a verdict section");
    assert!(at < html.find("id=\"key-figures\"").unwrap());
    let list = between(&html, "id=\"verdict\">", "</section>");
    assert_eq!(list.matches("<li>").count(), s.verdict.len());
    assert!(list.contains("<li>SLA not met: http_req_duration: p(95) &lt; 2"));
    assert!(list.contains("load &lt;b&gt;rose&lt;/b&gt; &amp; fell"));
}

#[test]
fn stage_table_matches_hand_computation() {
    let r = two_stage_run();
    let s = build(&r).unwrap();
    let html = render_html(&r, &s);
    // Stage 0: seconds 0..4, 10 requests each, 1 failed each, 1 ms.
    let v = row_values(&html, "<tr data-scenario=\"default\" data-index=\"0\">");
    // window start, peak VUs, requests, failed, error %, req/s, mean, p50, p95, p99
    assert_eq!(v[0], "0");
    assert_eq!(v[1], "6");
    assert_eq!(v[2], "40");
    assert_eq!(v[3], "4");
    assert_eq!(v[4], "10");
    assert_eq!(v[5], "10");
    let p95: f64 = v[8].parse().unwrap();
    assert!((p95 - 1.0).abs() < 0.01, "{p95}");
    // Stage 1: seconds 4..10, 30 requests each (25 at 5 ms, 5 at 9 ms).
    let v = row_values(&html, "<tr data-scenario=\"default\" data-index=\"1\">");
    assert_eq!(v[0], "4");
    assert_eq!(v[1], "8");
    assert_eq!(v[2], "180");
    assert_eq!(v[3], "0");
    assert_eq!(v[5], "30");
    let mean: f64 = v[6].parse().unwrap();
    assert!(
        (mean - (25.0 * 5.0 + 5.0 * 9.0) / 30.0).abs() < 0.02,
        "{mean}"
    );
    let p99: f64 = v[9].parse().unwrap();
    assert!((p99 - 9.0).abs() < 0.02, "{p99}");
    // The same figures from the public function.
    let st = stage_stats(&r);
    assert_eq!((st[0].requests, st[1].requests), (40, 180));
}

#[test]
fn lttb_keeps_ends_length_and_spikes() {
    let mut pts: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, 1.0)).collect();
    pts[5_000].1 = 100.0;
    pts[7_777].1 = -50.0;
    let out = lttb(&pts, 1000);
    assert_eq!(out.len(), 1000);
    assert_eq!(out[0], pts[0]);
    assert_eq!(out[999], pts[9_999]);
    assert!(out.contains(&(5000.0, 100.0)));
    assert!(out.contains(&(7777.0, -50.0)));
    assert!(out.windows(2).all(|w| w[0].0 < w[1].0));
    // Short inputs come back unchanged; tiny thresholds still keep the ends.
    assert_eq!(lttb(&pts[..10], 1000), pts[..10].to_vec());
    assert!(lttb(&[], 10).is_empty());
    let three = lttb(&pts, 0);
    assert_eq!(three.len(), 3);
    assert_eq!(three[1], (5000.0, 100.0));
    // A sine keeps its extremes.
    let sine: Vec<(f64, f64)> = (0..14_400)
        .map(|i| (i as f64, (i as f64 / 600.0).sin()))
        .collect();
    let out = lttb(&sine, 1000);
    let max = out.iter().map(|p| p.1).fold(f64::MIN, f64::max);
    assert!(max > 0.999);
}

#[test]
fn empty_and_one_second_runs_render() {
    let r = run(meta("empty", 0.0), vec![]);
    let s = build(&r).unwrap();
    let html = render_html(&r, &s);
    let d = data_json(&html);
    assert_eq!(
        d["charts"]["latency"]["series"][0]["pts"],
        serde_json::json!([])
    );
    assert_eq!(d["charts"]["errors"]["series"], serde_json::json!([]));
    assert!(html.contains("no thresholds"));
    assert!(html.contains("no stages"));
    // No request completed: the run failed, and says why.
    assert!(html.contains("class=\"badge fail\""));
    assert!(
        s.verdict[0].contains("no request completed"),
        "{:?}",
        s.verdict
    );
    assert!(!s.passed() && s.judged.exit_code == 99);

    let r = run(
        meta("one", 1.0),
        vec![second(0, 1, vec![series("a", 3, 200, 700)])],
    );
    let s = build(&r).unwrap();
    let html = render_html(&r, &s);
    assert!(html.contains("class=\"badge none\""));
    let d = data_json(&html);
    assert_eq!(
        d["charts"]["rps"]["series"][0]["pts"],
        serde_json::json!([[0.0, 3.0]])
    );
}

#[test]
fn four_hour_run_is_downsampled() {
    // Most seconds empty (to keep the test light), VUs vary every second.
    let seconds: Vec<SecondRecord> = (0..14_400u32)
        .map(|t| {
            let s = if t % 97 == 0 {
                vec![series(
                    "a",
                    2,
                    if t % 2 == 0 { 200 } else { 503 },
                    1000 + t as u64,
                )]
            } else {
                vec![]
            };
            second(t, (t % 300) + 1, s)
        })
        .collect();
    let r = run(meta("long", 14_400.0), seconds);
    let s = build(&r).unwrap();
    let html = render_html(&r, &s);
    let d = data_json(&html);
    for chart in ["vus", "rps", "latency", "errors"] {
        for s in d["charts"][chart]["series"].as_array().unwrap() {
            let n = s["pts"].as_array().unwrap().len();
            assert!(n <= MAX_POINTS, "{chart}: {n}");
        }
    }
    assert_eq!(
        d["charts"]["vus"]["series"][0]["pts"]
            .as_array()
            .unwrap()
            .len(),
        MAX_POINTS
    );
    assert!(html.len() < 400_000, "{}", html.len());
}

#[test]
fn templates_escape_and_script_json_stays_inert() {
    // What the sections rely on: maud escapes every interpolated value.
    let esc = |s: &str| maud::html! { (s) }.into_string();
    assert_eq!(esc("<a href=\"x\">&"), "&lt;a href=&quot;x&quot;&gt;&amp;");
    assert_eq!(esc(KOREAN), "검색 &quot;엔진&quot; &amp; &lt;b&gt;");
    let j =
        script_json(&serde_json::to_string(&serde_json::json!({"a": "</script><!--&"})).unwrap());
    assert!(!j.contains('<'));
    let back: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(back["a"], "</script><!--&");
}

/// A hostile test name and a Hangul one with quotes and brackets, in every place a
/// user's text reaches the page: they come out escaped, and intact once unescaped.
#[test]
fn hostile_and_hangul_names_are_escaped_everywhere_and_intact() {
    const HANGUL: &str = "결제 \"단계\" & <끝>";
    const HANGUL_ESC: &str = "결제 &quot;단계&quot; &amp; &lt;끝&gt;";
    let mut m = meta(XSS, 4.0);
    m.stages = vec![stage(0, 0.0, 4.0, HANGUL)];
    m.notes = vec![HANGUL.into()];
    let seconds = (0..4u32)
        .map(|t| {
            let mut r = second(
                t,
                2,
                vec![series(HANGUL, 5, 200, 1000), series(XSS, 5, 503, 1000)],
            );
            r.checks.insert(
                HANGUL.into(),
                CheckCounts {
                    passes: 5,
                    fails: 5,
                },
            );
            r
        })
        .collect();
    let r = run(m, seconds);
    let s = build(&r).unwrap();
    let html = render_html(&r, &s);
    assert!(!html.contains(XSS), "raw script in the page");
    assert!(!html.contains("<끝>"));
    assert!(html.contains("<title>pado report · &lt;script&gt;alert(1)&lt;/script&gt;</title>"));
    assert!(html.contains("<h1 id=\"test-name\">&lt;script&gt;alert(1)&lt;/script&gt;</h1>"));
    // Step, check, stage and note.
    assert!(
        html.matches(HANGUL_ESC).count() >= 4,
        "{}",
        html.matches(HANGUL_ESC).count()
    );
    assert!(html.contains(&format!("<td class=\"name\">{HANGUL_ESC}</td>")));
    assert!(html.contains(&format!("<div class=\"note\">{HANGUL_ESC}</div>")));
    // The chart data keeps the text exactly.
    let d = data_json(&html);
    assert_eq!(d["stages"][0]["label"], HANGUL);
    assert_eq!(html.matches("<script").count(), 2);
}

/// Deterministic pseudo-random numbers for the demo run.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Writes realistic result directories with `report.html` for a browser look:
/// `PADO_REPORT_DEMO=/tmp/demo cargo test -p pado-report -- --ignored demo`.
#[test]
#[ignore]
fn demo_report() {
    let base = std::path::PathBuf::from(
        std::env::var("PADO_REPORT_DEMO").unwrap_or_else(|_| "/tmp/pado-report-demo".into()),
    );
    let write = |name: &str, meta: pado_results::RunMeta, seconds: Vec<SecondRecord>| {
        let dir = ResultDir::create(base.join(name)).unwrap();
        dir.write_meta(&meta).unwrap();
        let mut w = dir.timeline_writer().unwrap();
        for s in &seconds {
            w.write(s).unwrap();
        }
        drop(w);
        let loaded = crate::summary::load(&dir).unwrap();
        let s = build(&loaded).unwrap();
        std::fs::write(dir.path().join("report.html"), render_html(&loaded, &s)).unwrap();
        std::fs::write(
            dir.path().join("timeline.csv"),
            crate::csv_export::timeline_csv(&loaded),
        )
        .unwrap();
        std::fs::write(dir.path().join("junit.xml"), crate::junit::junit_xml(&s)).unwrap();
    };

    // A 10-minute ramp/hold/ramp-down run with an incident at 5 minutes.
    let mut rng = Lcg(42);
    let seconds = (0..600u32).map(|t| demo_second(t, &mut rng)).collect();
    write("full", demo_meta(), seconds);
    write("empty", meta("empty run", 0.0), vec![]);
    write(
        "one-second",
        meta("one second", 1.0),
        vec![second(0, 1, vec![series("only", 3, 200, 800)])],
    );
}

/// The demo's run.json: two scenarios, four stages, thresholds and a warning with
/// hostile text.
fn demo_meta() -> pado_results::RunMeta {
    let mut m = meta("checkout flow — 검색 \"엔진\" & <b>", 600.0);
    m.scenarios = vec![
        ScenarioMeta {
            name: "shoppers".into(),
            executor: "ramping-vus".into(),
            description: "0→50 VUs over 2m, hold 5m, down 3m".into(),
            open_model: false,
            max_vus: None,
            scripted: false,
        },
        ScenarioMeta {
            name: "background".into(),
            executor: "constant-arrival-rate".into(),
            description: "20 iterations/s for 10m".into(),
            open_model: true,
            max_vus: None,
            scripted: false,
        },
    ];
    m.stages = vec![
        mark("shoppers", 0, 0.0, 120.0, "ramp 0→50 VUs", 50.0),
        mark("shoppers", 1, 120.0, 420.0, "hold 50 VUs", 50.0),
        mark("shoppers", 2, 420.0, 600.0, "ramp 50→0 VUs", 0.0),
        mark("background", 0, 0.0, 600.0, "hold 20 req/s", 20.0),
    ];
    m.thresholds = vec![
        ThresholdSpec {
            metric: "http_req_duration".into(),
            expr: "p(95) < 200".into(),
            abort_on_fail: false,
            window_s: None,
        },
        ThresholdSpec {
            metric: "http_req_failed".into(),
            expr: "rate < 0.01".into(),
            abort_on_fail: false,
            window_s: None,
        },
        ThresholdSpec {
            metric: format!("http_req_duration{{step:{XSS}}}"),
            expr: "p(99) < 1000".into(),
            abort_on_fail: false,
            window_s: None,
        },
    ];
    m.warnings = vec!["generator CPU above 90% for 12 s: <img src=x onerror=alert(1)>".into()];
    m.notes = vec!["closed model for shoppers, open model for background".into()];
    m
}

/// One request of the demo run: latency growing with `vus`, 4x slower with 503s and
/// timeouts during the incident, a few 404s otherwise.
fn demo_sample(vus: u32, incident: bool, rng: &mut Lcg) -> RequestSample {
    let base = 15_000.0 + vus as f64 * 900.0 * rng.next();
    let mut dur = (base * (1.0 + 3.0 * rng.next().powi(8))) as u64;
    if incident {
        dur *= 4;
    }
    let mut sample = RequestSample {
        status: 200,
        phases: Phases {
            duration_us: dur,
            waiting_us: dur * 85 / 100,
            sending_us: dur / 100,
            receiving_us: dur * 14 / 100,
            blocked_us: if rng.next() < 0.05 { 3000 } else { 5 },
            connecting_us: if rng.next() < 0.05 { 1500 } else { 0 },
            tls_us: if rng.next() < 0.05 { 4000 } else { 0 },
            dns_us: 0,
        },
        bytes_sent: 300,
        bytes_received: 4000,
        ..Default::default()
    };
    let e = rng.next();
    if incident && e < 0.15 {
        sample.status = 503;
        sample.failed = true;
    } else if incident && e < 0.2 {
        sample = RequestSample {
            error: Some(ErrorKind::Timeout),
            failed: true,
            ..sample
        };
        sample.phases.duration_us = 10_000_000;
    } else if e < 0.004 {
        sample.status = 404;
        sample.failed = true;
    }
    sample
}

/// Second `t` of the demo run: VUs ramping up, holding and down, latency growing
/// with them, and an incident (4x slower, 503s and timeouts) from 300 to 330 s.
fn demo_second(t: u32, rng: &mut Lcg) -> SecondRecord {
    let vus = if t < 120 {
        t * 50 / 120
    } else if t < 420 {
        50
    } else {
        (600 - t) * 50 / 180
    };
    let incident = (300..330).contains(&t);
    let mut rec = SecondRecord::new(t);
    let mut login = SeriesStats::new(SeriesKey::named("login"));
    let mut xss = SeriesStats::new(SeriesKey::named(XSS));
    let mut search = SeriesStats::new(SeriesKey {
        name: KOREAN.into(),
        tags: vec![("class".into(), "common".into())],
    });
    let mut rare = SeriesStats::new(SeriesKey {
        name: KOREAN.into(),
        tags: vec![("class".into(), "rare".into())],
    });
    let n = vus * 6 + 20;
    let mut checks = (0u64, 0u64);
    for _ in 0..n {
        let u = rng.next();
        let sample = demo_sample(vus, incident, rng);
        if sample.failed {
            checks.1 += 1;
        } else {
            checks.0 += 1;
        }
        if u < 0.1 {
            login.record(&sample);
        } else if u < 0.4 {
            xss.record(&sample);
        } else if u < 0.9 {
            search.record(&sample);
        } else {
            rare.record(&sample);
        }
    }
    rec.absorb(pado_metrics::Interval {
        vus,
        vus_max: 50 + 10,
        series: [login, xss, search, rare]
            .into_iter()
            .filter(|s| s.requests > 0)
            .collect(),
        ..Default::default()
    });
    rec.checks.insert(
        "status is 200".into(),
        CheckCounts {
            passes: checks.0,
            fails: checks.1,
        },
    );
    rec.checks.insert(
        format!("{XSS} body has <id>"),
        CheckCounts {
            passes: checks.0 + checks.1,
            fails: 0,
        },
    );
    rec
}

fn mark(
    scenario: &str,
    index: usize,
    start_s: f64,
    end_s: f64,
    label: &str,
    target: f64,
) -> pado_results::StageMark {
    pado_results::StageMark {
        scenario: scenario.into(),
        index,
        start_s,
        end_s,
        label: label.into(),
        target,
        from: Some(target),
    }
}

/// Changes of the load made by hand (`control` events) are on the charts' data
/// marked as such, apart from fault events, listed in the events table with the
/// note that says what they are; a run without them has no such note.
#[test]
fn changes_of_the_load_by_hand_are_drawn_apart_and_listed() {
    let mut r = two_stage_run();
    let event = |name: &str, kind: &str, start_s: f64, end_s: Option<f64>| {
        pado_analysis::events::EventImpact {
            name: name.into(),
            kind: kind.into(),
            start_s,
            end_s,
            outcome: kind.into(),
            required: false,
            error: None,
            before: Default::default(),
            during: None,
            after: Default::default(),
            time_to_first_error_s: None,
            time_to_recovery_s: None,
            failed_requests: 0,
            expectations: Vec::new(),
        }
    };
    let plain = render_html(&r, &build(&r).unwrap());
    assert!(!plain.contains("id=\"control-note\""));
    r.events = vec![
        event("active VUs 8 → 4 over 2.0s", "control", 5.0, Some(7.0)),
        event("배포 표시", "mark", 6.0, None),
    ];
    let s = build(&r).unwrap();
    let html = render_html(&r, &s);
    let d = data_json(&html);
    assert_eq!(d["events"][0]["control"], true, "{}", d["events"]);
    assert_eq!(d["events"][0]["end"], 7.0);
    assert!(d["events"][1].get("control").is_none(), "{}", d["events"]);
    let table = between(&html, "id=\"table-events\"", "</table>");
    assert!(table.contains("active VUs 8 → 4 over 2.0s"), "{table}");
    assert!(table.contains("배포 표시"), "{table}");
    assert!(html.contains("id=\"control-note\""));
}

#[test]
fn a_scripts_own_metrics_get_a_section_escaped_and_a_run_without_none() {
    let r = two_stage_run();
    let mut s = build(&r).unwrap();
    let without = render_html(&r, &s);
    assert!(!without.contains("id=\"table-custom\""));
    let mut c = pado_metrics::CustomStats::new(
        pado_metrics::SeriesKey::named("응답<b>"),
        pado_metrics::CustomKind::Trend,
        true,
    );
    for v in [10.0, 20.0, 30.0] {
        c.add(v, 0);
    }
    s.custom.insert(
        "응답<b>".into(),
        crate::summary::custom::summarise(&c, 10.0),
    );
    let html = render_html(&r, &s);
    let table = between(&html, "id=\"table-custom\"", "</table>");
    assert!(table.contains("응답&lt;b&gt;"), "{table}");
    assert!(!table.contains("응답<b>"));
    assert!(table.contains("avg=20ms min=10ms"), "{table}");
}

/// A step of `n` LLM streams in one second: the first token after `ttft_ms`, then
/// one every `gap_ms`, `tokens` tokens each.
fn llm_series(name: &str, n: u64, ttft_ms: u64, gap_ms: u64, tokens: u64) -> SeriesStats {
    let mut s = series(name, n, 200, (ttft_ms + gap_ms * (tokens - 1)) * 1000);
    let mut e = pado_metrics::SseStats::default();
    for _ in 0..n {
        for _ in 1..tokens {
            e.record_itl(gap_ms * 1000);
        }
        let decode_us = gap_ms * 1000 * (tokens - 1);
        e.record(&pado_metrics::SseStream {
            events: tokens + 2,
            llm: true,
            tokens,
            ttft_us: Some(ttft_ms * 1000),
            decode_us,
            duration_us: ttft_ms * 1000 + decode_us,
        });
    }
    s.sse = Some(Box::new(e));
    s
}

#[test]
fn llm_section_shows_the_summary_figures_and_charts_per_second() {
    const STEP: &str = "채팅 <답변>";
    // Seconds 0-4: TTFT 100 ms, a token every 10 ms; seconds 5-9: 300 ms and 30 ms.
    let seconds = (0..10u32)
        .map(|t| {
            let (ttft, gap) = if t < 5 { (100, 10) } else { (300, 30) };
            second(
                t,
                4,
                vec![
                    llm_series(STEP, 4, ttft, gap, 11),
                    series("plain", 3, 200, 900),
                ],
            )
        })
        .collect();
    let r = run(meta("llm", 10.0), seconds);
    let s = build(&r).unwrap();
    let html = render_html(&r, &s);
    assert!(html.contains("<h2>LLM streams</h2>"));
    // The Hangul name intact, its markup escaped.
    assert!(html.contains("채팅 &lt;답변&gt;"), "step name");
    let l = s.steps[STEP].sse.as_ref().unwrap().llm.as_ref().unwrap();
    assert_eq!(l.output_tokens, 10 * 4 * 11);
    let vals = row_values(&html, "채팅 &lt;답변&gt;</td>");
    let want = [
        40.0,
        40.0 * 13.0,
        40.0,
        440.0,
        l.output_tokens_per_s,
        l.ttft_ms.p50,
        l.ttft_ms.p95,
        l.ttft_ms.p99,
        l.itl_ms.p50,
        l.itl_ms.p95,
        l.itl_ms.p99,
        l.tpot_ms.p50,
        l.tpot_ms.p95,
        l.tokens_per_s_per_request.p50,
    ];
    assert_eq!(vals.len(), want.len(), "{vals:?}");
    for (v, w) in vals.iter().zip(want) {
        assert_eq!(v.parse::<f64>().unwrap(), chart_data::round3(w), "{vals:?}");
    }
    // Planted: half the tokens 10 ms apart, half 30 ms.
    assert!((l.itl_ms.p50 - 10.0).abs() < 0.05 && (l.itl_ms.p99 - 30.0).abs() < 0.1);
    // A step without streams has no row.
    assert!(!between(&html, "<table id=\"llm\"", "</table>").contains(">plain<"));

    let d = data_json(&html);
    let ttft95 = &d["charts"]["llm_ttft"]["series"][1]["pts"];
    assert_eq!(ttft95[0][1].as_f64().unwrap().round(), 100.0);
    assert_eq!(ttft95[9][1].as_f64().unwrap().round(), 300.0);
    let itl50 = &d["charts"]["llm_itl"]["series"][0]["pts"];
    assert_eq!(itl50[9][1].as_f64().unwrap().round(), 30.0);
    let tokens = &d["charts"]["llm_tokens"]["series"][0]["pts"];
    assert_eq!(tokens[3], serde_json::json!([3.0, 44.0]));
    assert!(html.contains("id=\"chart-llm_itl\""));
}

#[test]
fn llm_table_shows_the_planted_input_tokens_beside_the_output_tokens() {
    const STEP: &str = "긴 질문";
    // Each second: 4 streams whose prompts pado sized, 3 of 1,000 tokens and one of
    // 3,000; step `plain` streams prompts as written (no input tokens).
    let seconds = (0..4u32)
        .map(|t| {
            let mut chat = llm_series(STEP, 4, 100, 10, 11);
            for i in 0..4 {
                chat.record_llm_input_tokens(if i < 3 { 1_000 } else { 3_000 });
            }
            second(t, 4, vec![chat, llm_series("plain", 2, 100, 10, 11)])
        })
        .collect();
    let r = run(meta("llm", 4.0), seconds);
    let s = build(&r).unwrap();
    let html = render_html(&r, &s);
    let heads = between(&html, "<table id=\"llm\"", "</thead>");
    let at = |h: &str| {
        heads
            .find(&format!(">{h}<"))
            .unwrap_or_else(|| panic!("{h}: {heads}"))
    };
    // The input tokens stand beside the output tokens.
    assert!(at("output tokens") < at("input tokens p50"));
    assert!(at("input tokens p50") < at("input tokens max"));
    assert!(at("input tokens max") < at("tokens/s (run)"));
    let vals = row_values(&html, "긴 질문</td>");
    // streams, events, requests, output tokens, then the input tokens' p50 and max.
    assert_eq!(vals[3], "176", "{vals:?}");
    assert_eq!(vals[4].parse::<f64>().unwrap().round(), 1_000.0, "{vals:?}");
    assert_eq!(vals[5].parse::<f64>().unwrap().round(), 3_000.0, "{vals:?}");
    assert_eq!(vals.len(), llm::LLM_HEADS.len() - 1, "{vals:?}");
    // Without sized prompts the two cells are empty, the row's other figures there.
    let plain = between(&html, ">plain</td>", "</tr>");
    assert_eq!(
        row_values(&html, ">plain</td>").len(),
        llm::LLM_HEADS.len() - 3,
        "{plain}"
    );
}

#[test]
fn a_run_without_streams_has_no_llm_section() {
    let r = two_stage_run();
    let html = render_html(&r, &build(&r).unwrap());
    assert!(!html.contains("LLM streams"));
    assert!(data_json(&html)["charts"].get("llm_ttft").is_none());
}
