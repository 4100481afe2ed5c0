//! LLM streams everywhere a run is read, against the test kit's `/sse` route
//! (planted pacing: the first token 20 ms after the request, then one every Δ):
//! the HTML report shows `summary.json`'s figures, `pado compare` calls a slower Δ
//! worse and a rerun within noise, `pado trend` follows the figures the history
//! recorded, a live output receives the token counts the summary has, and checks
//! and extraction on individual events fail, pass and feed the next step as
//! planted.

use pado_testkit::TestServer;
use serde_json::Value;

use crate::harness::{machine_too_busy_in, num, pado_cmd, run, tmp, write_fixture, Run, Tmp};

/// A run named `name` of 4 VUs streaming 10 tokens a request, `gap_ms` apart, for
/// `secs` seconds.
fn stream_run(srv: &TestServer, t: &Tmp, name: &str, gap_ms: u64, secs: u32) -> Run {
    let f = write_fixture(
        t,
        "llm_report_stream.yaml",
        &format!("{name}-{gap_ms}.yaml"),
        &[
            ("name", name.to_string()),
            ("target", srv.url("")),
            ("duration", format!("{secs}s")),
            ("gap_ms", gap_ms.to_string()),
        ],
    );
    let r = run(name, &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    r
}

/// The `data-value`s of the report's LLM row named `name` (its cells in the
/// table's column order).
fn llm_row(html: &str, name: &str) -> Vec<f64> {
    let table = &html[html.find("<table id=\"llm\"").expect("an LLM table")..];
    let at = table
        .find(&format!(">{name}</td>"))
        .unwrap_or_else(|| panic!("no row {name}"));
    let row = &table[at..at + table[at..].find("</tr>").unwrap()];
    row.split("data-value=\"")
        .skip(1)
        .map(|p| p[..p.find('"').unwrap()].parse().unwrap())
        .collect()
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// The verdict of compare row (`scope`, `metric`) for candidate `i` (0: the
/// second run).
fn verdict(c: &Value, scope: &str, metric: &str, i: usize) -> String {
    let row = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["scope"] == scope && r["metric"] == metric)
        .unwrap_or_else(|| panic!("no row {scope} {metric}: {c:#}"));
    row["verdicts"][i].as_str().unwrap().to_string()
}

#[test]
fn llm_figures_reach_the_html_report_compare_and_trend() {
    let srv = TestServer::start();
    let t = tmp("llm-report");
    let fast = stream_run(&srv, &t, "llm-fast", 10, 8);
    let again = stream_run(&srv, &t, "llm-fast", 10, 8);
    let slow = stream_run(&srv, &t, "llm-slow", 30, 8);

    // The report: the step's row and the all-steps row carry summary.json's figures.
    let s = fast.summary();
    let html = std::fs::read_to_string(fast.dir.join("report.html")).unwrap();
    assert!(html.contains("<h2>LLM streams</h2>"));
    for (name, sse) in [
        ("대화", &s["steps"]["대화"]["sse"]),
        ("all steps", &s["sse"]),
    ] {
        let l = &sse["llm"];
        let want = [
            num(sse, "streams"),
            num(sse, "events"),
            num(l, "requests"),
            num(l, "output_tokens"),
            num(l, "output_tokens_per_s"),
            num(l, "ttft_ms.p50"),
            num(l, "ttft_ms.p95"),
            num(l, "ttft_ms.p99"),
            num(l, "itl_ms.p50"),
            num(l, "itl_ms.p95"),
            num(l, "itl_ms.p99"),
            num(l, "tpot_ms.p50"),
            num(l, "tpot_ms.p95"),
            num(l, "tokens_per_s_per_request.p50"),
        ];
        let got = llm_row(&html, name);
        assert_eq!(got, want.map(round3).to_vec(), "{name}");
    }
    // Exact: 10 tokens a stream, and the planted gap.
    assert_eq!(
        num(&s, "sse.llm.output_tokens"),
        10.0 * num(&s, "sse.llm.requests")
    );
    assert!(html.contains("id=\"chart-llm_ttft\"") && html.contains("id=\"chart-llm_itl\""));

    // Compare: ITL 30 ms against 10 ms is worse; the rerun is within noise.
    let dirs = [&fast.dir, &again.dir, &slow.dir].map(|d| d.to_str().unwrap().to_string());
    let o = pado_cmd(["compare", "--json", &dirs[0], &dirs[1], &dirs[2]])
        .output()
        .unwrap();
    let c: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let busy = [&fast, &again, &slow]
        .iter()
        .find_map(|r| machine_too_busy_in(&r.summary()));
    for scope in ["overall", "step 대화"] {
        assert_eq!(verdict(&c, scope, "itl p50 ms", 1), "worse", "{scope}");
        assert_eq!(verdict(&c, scope, "tpot p50 ms", 1), "worse", "{scope}");
        assert_eq!(verdict(&c, scope, "tokens/s per request p50", 1), "worse");
        let rerun = verdict(&c, scope, "itl p50 ms", 0);
        match &busy {
            Some(b) if rerun != "within_noise" => {
                eprintln!(
                    "\n*** llm compare: the rerun's ITL was {rerun} on a busy machine ({b})\n"
                )
            }
            _ => assert_eq!(rerun, "within_noise", "{scope}: {c:#}"),
        }
    }

    // Trend: both runs of `llm-fast` with the ITL the history recorded.
    let chart = t.join("trend.html");
    let o = pado_cmd([
        "trend",
        "llm-fast",
        "--metric",
        "llm_itl.p50",
        "--json",
        "--html",
    ])
    .arg(&chart)
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let tr: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(tr["metric"], "llm_itl.p50", "{tr:#}");
    let values: Vec<f64> = tr["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["value"].as_f64().unwrap())
        .collect();
    let recorded = [
        num(&s, "sse.llm.itl_ms.p50"),
        num(&again.summary(), "sse.llm.itl_ms.p50"),
    ];
    assert_eq!(values, recorded.to_vec(), "{tr:#}");
    assert!(std::fs::read_to_string(&chart)
        .unwrap()
        .contains("llm_itl p50 ms"));
}

#[test]
fn a_live_output_receives_the_token_counts_and_ttft_of_the_summary() {
    let srv = TestServer::start();
    let receiver = TestServer::start();
    let t = tmp("llm-output");
    let f = write_fixture(
        &t,
        "llm_report_stream.yaml",
        "out.yaml",
        &[
            ("name", "llm-out".to_string()),
            ("target", srv.url("")),
            ("duration", "3s".to_string()),
            ("gap_ms", "5".to_string()),
        ],
    );
    let influx = format!("influxdb={}?db=pado", receiver.url("/write"));
    let r = run("llm-output", &[f.to_str().unwrap(), "--output", &influx]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let (mut tokens, mut requests, mut ttft_lines) = (0u64, 0u64, 0u64);
    let lines: Vec<String> = receiver
        .records()
        .into_iter()
        .filter(|w| w.path == "/write")
        .flat_map(|w| {
            String::from_utf8(w.body)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let count = |l: &str| -> u64 {
        let fields = l.rsplit(' ').nth(1).unwrap();
        fields
            .split(',')
            .find_map(|kv| kv.strip_prefix("count="))
            .unwrap()
            .trim_end_matches('i')
            .parse()
            .unwrap()
    };
    for l in &lines {
        if l.starts_with("pado_llm_output_tokens,") {
            assert!(l.contains("step=대화"), "{l}");
            tokens += count(l);
        } else if l.starts_with("pado_llm_requests,") {
            requests += count(l);
        } else if l.starts_with("pado_llm_ttft,") {
            ttft_lines += 1;
            // The first token 20 ms after the request (the server's own lateness
            // and the histogram's precision aside).
            let p50: f64 = l
                .rsplit(' ')
                .nth(1)
                .unwrap()
                .split(',')
                .find_map(|kv| kv.strip_prefix("p50="))
                .unwrap()
                .parse()
                .unwrap();
            assert!((19.9..60.0).contains(&p50), "{l}");
        }
    }
    assert_eq!(
        tokens as f64,
        num(&s, "sse.llm.output_tokens"),
        "{lines:#?}"
    );
    assert_eq!(requests as f64, num(&s, "sse.llm.requests"));
    assert!(ttft_lines >= 2, "{ttft_lines} seconds of TTFT");
}

/// The passes and fails of the check whose name contains `part`.
fn check(s: &Value, part: &str) -> (f64, f64) {
    let (_, c) = s["checks"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| k.contains(part))
        .unwrap_or_else(|| panic!("no check {part}: {:#}", s["checks"]));
    (num(c, "passes"), num(c, "fails"))
}

#[test]
fn checks_on_events_pass_and_fail_as_planted_and_extraction_feeds_the_next_step() {
    let srv = TestServer::start();
    let t = tmp("llm-event-checks");
    let scenario = |extra: &str| {
        write_fixture(
            &t,
            "llm_report_event_checks.yaml",
            &format!("checks{}.yaml", extra.len()),
            &[("target", srv.url("")), ("extra", extra.to_string())],
        )
    };
    // Every event is JSON with `choices` and the id; no `error` event: all pass.
    let ok = run("llm-event-ok", &[scenario("").to_str().unwrap()]);
    assert_eq!(ok.code(), 0, "{}\n{}", ok.stdout(), ok.stderr());
    let s = ok.summary();
    assert_eq!(check(&s, "no `error` event"), (6.0, 0.0));
    assert_eq!(check(&s, "every event's data is JSON"), (6.0, 0.0));
    assert_eq!(check(&s, "$.choices exists"), (6.0, 0.0));
    assert_eq!(check(&s, "$.id == \"cmpl-42\""), (6.0, 0.0));
    assert_eq!(num(&s, "failed"), 0.0);
    // The id from the first event, the first and the last token's number (Hangul
    // around them in the data): the server saw them in the next step's URL.
    let st = srv.stats();
    assert_eq!(
        st.by_path.get("/done/cmpl-42/0-4"),
        Some(&6),
        "{:?}",
        st.by_path
    );

    // An `event: error` after the tokens: `no_event` fails every stream and its
    // request; the other checks still hold (the error's data is JSON).
    srv.reset_stats();
    let bad = run("llm-event-bad", &[scenario("&error=1").to_str().unwrap()]);
    let s = bad.summary();
    assert_eq!(check(&s, "no `error` event"), (0.0, 6.0));
    assert_eq!(check(&s, "every event's data is JSON"), (6.0, 0.0));
    assert_eq!(num(&s, "steps.대화.failed"), 6.0, "{:#}", s["steps"]);
    assert_eq!(
        num(&s, "steps.대화.errors.check_failed"),
        6.0,
        "{:#}",
        s["steps"]
    );
    // The error event has no `choices`: `json_exists` fails too.
    assert_eq!(check(&s, "$.choices exists"), (0.0, 6.0));
}
