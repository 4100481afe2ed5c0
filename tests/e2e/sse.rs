//! `sse:` steps against the test kit's `/sse` route, whose pacing the test plants
//! (first token `first_ms` after the request, then one every `gap_ms`): pado's
//! time to first token and inter-token latency carry exactly that pacing, its token
//! counts equal what the server sent (or the `usage` the server reported), a
//! stream cut mid-event is counted as `sse_truncated`, and thresholds read the
//! `llm_*` metrics.

use pado_testkit::TestServer;

use crate::harness::{num, run, run_timed, tmp, within, write_fixture, Run, Tmp};

const FIXTURE: &str = "sse_llm_stream_timing_and_tokens_match_the_planted_pacing.yaml";

/// Runs 12 streams (4 VUs × 3) of `tokens` tokens paced `first_ms`/`gap_ms`.
fn scenario(
    srv: &TestServer,
    name: &str,
    pacing: (u64, u64, u64),
    extra: &str,
    ttft: &str,
) -> (Tmp, String) {
    let t = tmp(name);
    let (tokens, first_ms, gap_ms) = pacing;
    let file = write_fixture(
        &t,
        FIXTURE,
        "llm.yaml",
        &[
            ("target", srv.url("")),
            ("tokens", tokens.to_string()),
            ("first_ms", first_ms.to_string()),
            ("gap_ms", gap_ms.to_string()),
            ("extra", extra.to_string()),
            ("ttft_threshold", ttft.to_string()),
        ],
    );
    let file = file.to_str().unwrap().to_string();
    (t, file)
}

fn llm(r: &Run) -> serde_json::Value {
    r.summary()["steps"]["대화"]["sse"]["llm"].clone()
}

#[test]
fn llm_stream_timing_and_tokens_match_the_planted_pacing() {
    let srv = TestServer::start();
    let (_t, f) = scenario(&srv, "sse-pacing", (20, 150, 20), "", "p(95) < 500");
    run_timed("sse-pacing", &[&f], |r| {
        assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
        let s = r.summary();
        let st = srv.stats();
        srv.reset_stats();
        assert_eq!(st.requests, 12, "{st:?}");
        assert_eq!(num(&s, "requests"), 12.0, "{s:#}");
        assert_eq!(num(&s, "failed"), 0.0, "{s:#}");
        let l = llm(r);
        // Exact: 20 tokens per stream; the role event and [DONE] are not tokens.
        assert_eq!(num(&l, "requests"), 12.0, "{l:#}");
        assert_eq!(num(&l, "output_tokens"), 240.0, "{l:#}");
        // Per request, through a histogram (3 significant digits): 20 each.
        let per = &l["output_tokens_per_request"];
        assert!((19.97..20.03).contains(&num(per, "min")), "{per:#}");
        assert!((19.97..20.03).contains(&num(per, "max")), "{per:#}");
        // 1 comment-only block is no event; role + 20 tokens + [DONE] are.
        let sse = &s["steps"]["대화"]["sse"];
        assert_eq!(num(sse, "events"), 12.0 * 22.0, "{sse:#}");
        // All steps together: the same tokens.
        assert_eq!(num(&s, "sse.llm.output_tokens"), 240.0, "{:#}", s["sse"]);
        // Never earlier than planted (timed from before the write), at most 2 ms
        // later (the histogram's 3 digits aside).
        let ttft = &l["ttft_ms"];
        assert!(num(ttft, "min") >= 149.9, "{ttft:#}");
        // The server's own first token may leave late on a busy machine (it
        // notes by how much): the truth is what it did, not what it planned.
        let late_ms = st.delay_late_max_us as f64 / 1000.0;
        within("llm_ttft p50", num(ttft, "p50"), 149.9..152.0 + late_ms)?;
        within("llm_itl p50", num(&l, "itl_ms.p50"), 18.0..22.0)?;
        within("llm_tpot p50", num(&l, "tpot_ms.p50"), 18.0..22.0)?;
        // 20 tokens in 150 + 19 × 20 = 530 ms: 37.7 tokens/s.
        within(
            "llm_tokens_per_s p50",
            num(&l, "tokens_per_s_per_request.p50"),
            35.0..38.0,
        )?;
        // The timeline's seconds add up to the same tokens.
        let tokens: f64 = r
            .timeline()
            .iter()
            .flat_map(|l| l["series"].as_array().cloned().unwrap_or_default())
            .map(|x| x["sse"]["tokens"].as_f64().unwrap_or(0.0))
            .sum();
        assert_eq!(tokens, 240.0);
        Ok(())
    });
}

#[test]
fn a_threshold_on_time_to_first_token_fails_when_the_first_token_is_late() {
    let srv = TestServer::start();
    // The first token comes after 150 ms: `p(95) < 100` cannot hold.
    let (_t, f) = scenario(&srv, "sse-ttft-fails", (3, 150, 5), "", "p(95) < 100");
    let r = run("sse-ttft-fails", &[&f]);
    assert_eq!(r.code(), 99, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    let t = s["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["metric"] == "llm_ttft")
        .cloned()
        .unwrap_or_else(|| panic!("{:#}", s["thresholds"]));
    assert_eq!(t["ok"], false, "{t:#}");
    assert!(t["value"].as_f64().unwrap() >= 150.0, "{t:#}");
}

#[test]
fn usage_from_the_server_replaces_the_count_of_token_events() {
    let srv = TestServer::start();
    let (_t, f) = scenario(&srv, "sse-usage", (5, 0, 1), "&usage=42", "p(95) < 5000");
    let r = run("sse-usage", &[&f]);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let l = llm(&r);
    assert_eq!(num(&l, "output_tokens"), 12.0 * 42.0, "{l:#}");
    // Per request, through a histogram (3 significant digits): 42 each.
    let per = &l["output_tokens_per_request"];
    assert!((41.95..42.05).contains(&num(per, "min")), "{per:#}");
    assert!((41.95..42.05).contains(&num(per, "max")), "{per:#}");
}

#[test]
fn a_stream_cut_mid_event_is_counted_as_sse_truncated() {
    let srv = TestServer::start();
    let (_t, f) = scenario(&srv, "sse-cut", (4, 0, 1), "&cut=1", "p(95) < 5000");
    let r = run("sse-cut", &[&f]);
    // Every request failed: the run's failure thresholds are not set, so it ends
    // with the failures' code or 0; what matters is the category.
    let s = r.summary();
    assert_eq!(num(&s, "requests"), 12.0, "{s:#}\n{}", r.stderr());
    assert_eq!(num(&s, "failed"), 12.0, "{s:#}");
    assert_eq!(num(&s, "errors.sse_truncated"), 12.0, "{:#}", s["errors"]);
    // The tokens that did arrive are counted.
    assert_eq!(num(&llm(&r), "output_tokens"), 48.0);
}

#[test]
fn stop_conditions_end_the_stream_as_a_success() {
    let srv = TestServer::start();
    let t = tmp("sse-stop");
    let file = write_fixture(
        &t,
        "sse_stop_conditions_end_the_stream_as_a_success.yaml",
        "stop.yaml",
        &[("target", srv.url(""))],
    );
    let r = run("sse-stop", &[file.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "failed"), 0.0, "{:#}", s["errors"]);
    let step = |n: &str| s["steps"][n].clone();
    // `count: 3`: three events (the role and two tokens), then the stream is left
    // long before its 50 tokens (1 s) would have come.
    let c = step("count");
    assert_eq!(num(&c, "sse.events"), 4.0 * 3.0, "{c:#}");
    assert!(num(&c, "latency_ms.max") < 500.0, "{c:#}");
    // `max_time: 300ms`: read for 300 ms, then a success (not a timeout), with
    // at most the tokens of those 300 ms: one at once, then one every 10 ms. (A
    // busy machine may pace the server's tokens slower, never faster: the lower
    // bound only says the stream was read.)
    let m = step("max-time");
    assert_eq!(num(&m, "requests"), 4.0, "{m:#}");
    let per = num(&m, "sse.llm.output_tokens") / 4.0;
    assert!(
        (2.0..=31.0).contains(&per),
        "{per} tokens per stream: {m:#}"
    );
    assert!(num(&m, "latency_ms.min") >= 299.0, "{m:#}");
    // `until_event: message`: the first event stops it.
    assert_eq!(num(&step("event-name"), "sse.events"), 4.0);
}

#[test]
fn over_http2_tokens_are_exact_and_a_cut_stream_is_sse_truncated() {
    let srv = pado_testkit::h2server::H2Server::start(Default::default()).unwrap();
    let t = tmp("sse-h2");
    let file = write_fixture(
        &t,
        "sse_over_http2_tokens_are_exact_and_a_cut_stream_is_sse_truncated.yaml",
        "h2.yaml",
        &[("target", format!("http://{}", srv.addr))],
    );
    let r = run("sse-h2", &[file.to_str().unwrap()]);
    let s = r.summary();
    assert_eq!(srv.requests(), 12, "{}", r.stderr());
    let whole = &s["steps"]["whole"];
    assert_eq!(num(whole, "failed"), 0.0, "{whole:#}");
    assert_eq!(num(whole, "sse.llm.output_tokens"), 6.0 * 7.0, "{whole:#}");
    let cut = &s["steps"]["cut"];
    assert_eq!(num(cut, "errors.sse_truncated"), 6.0, "{cut:#}");
    assert_eq!(num(cut, "sse.llm.output_tokens"), 6.0 * 2.0, "{cut:#}");
}

#[test]
fn merging_two_segments_keeps_token_counts_exact() {
    let srv = TestServer::start();
    let (t, f) = scenario(&srv, "sse-merge", (5, 0, 1), "&usage=9", "p(95) < 5000");
    let root = tmp("sse-merge-out");
    let mut dirs = Vec::new();
    for i in 0..2 {
        let dir = root.join(format!("seg{i}"));
        let seg = format!("{i}/2");
        let out = crate::harness::pado(&[
            "run",
            &f,
            "--segment",
            &seg,
            "--out",
            dir.to_str().unwrap(),
            "--quiet",
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            crate::harness::stderr(&out)
        );
        dirs.push(dir);
    }
    let merged = root.join("merged");
    let out = crate::harness::merge(&dirs, &merged, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::harness::stderr(&out)
    );
    let s = crate::harness::read_json(&merged.join("summary.json"));
    assert_eq!(srv.stats().requests, 12);
    let l = &s["steps"]["대화"]["sse"]["llm"];
    // 12 streams, each reporting `usage` 9: exactly 108 over the two segments.
    assert_eq!(num(l, "requests"), 12.0, "{l:#}");
    assert_eq!(num(l, "output_tokens"), 108.0, "{l:#}");
    assert_eq!(num(&s, "sse.events"), 12.0 * 8.0, "{:#}", s["sse"]);
    drop(t);
}

/// The lines of a result directory's `failures.jsonl`.
fn failures(r: &Run) -> Vec<serde_json::Value> {
    std::fs::read_to_string(r.dir.join("failures.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_failed_event_is_named_in_the_failure_sample() {
    let srv = TestServer::start();
    let t = tmp("sse-bad-event");
    let file = write_fixture(
        &t,
        "sse_a_failed_event_is_named_in_the_failure_sample.yaml",
        "bad.yaml",
        &[("target", srv.url(""))],
    );
    let r = run("sse-bad-event", &[file.to_str().unwrap()]);
    let s = r.summary();
    assert_eq!(num(&s, "steps.대화.failed"), 4.0, "{s:#}\n{}", r.stderr());
    assert_eq!(num(&s, "steps.clean.failed"), 0.0, "{s:#}");
    let lines = failures(&r);
    assert!(!lines.is_empty(), "{}", r.stderr());
    for f in &lines {
        // Only the stream with the planted event failed, each on that event.
        assert_eq!(f["step"], "대화", "{f:#}");
        assert_eq!(f["category"], "check_failed", "{f:#}");
        assert_eq!(f["check"], "대화: every event's data is JSON", "{f:#}");
        let ev = &f["event"];
        // The role event is the stream's first (0): token 3 is its event 4.
        assert_eq!(ev["index"], 4, "{f:#}");
        assert_eq!(ev["event"], "warning", "{f:#}");
        assert_eq!(ev["id"], "bad-3", "{f:#}");
        assert_eq!(ev["data"], "토큰3 {broken", "{f:#}");
        assert_eq!(
            f["actual"], "event 4 (type warning, id bad-3): data \"토큰3 {broken\"",
            "{f:#}"
        );
    }
    // The report's failures section says the same.
    let samples = s["failures"].as_array().cloned().unwrap_or_default();
    assert!(
        samples.iter().any(|f| f["event"]["index"] == 4),
        "{:#}",
        s["failures"]
    );
    let html = std::fs::read_to_string(r.dir.join("report.html")).unwrap();
    assert!(html.contains("event 4 (type warning, id bad-3)"));
}

#[test]
fn raw_lines_carry_each_streams_llm_figures_as_planted() {
    let srv = TestServer::start();
    let t = tmp("sse-raw");
    let (tokens, first_ms, gap_ms) = (8u64, 120u64, 15u64);
    let file = write_fixture(
        &t,
        "sse_raw_output_carries_the_planted_pacing.yaml",
        "raw.yaml",
        &[
            ("target", srv.url("")),
            ("tokens", tokens.to_string()),
            ("first_ms", first_ms.to_string()),
            ("gap_ms", gap_ms.to_string()),
        ],
    );
    let json = t.join("requests.jsonl");
    let csv = t.join("requests.csv");
    let (json_arg, csv_arg) = (
        format!("raw-json={}", json.display()),
        format!("raw-csv={}", csv.display()),
    );
    run_timed(
        "sse-raw",
        &[file.to_str().unwrap(), "--output", &json_arg],
        |r| {
            assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
            let late_ms = srv.stats().delay_late_max_us as f64 / 1000.0;
            srv.reset_stats();
            let text = std::fs::read_to_string(&json).unwrap();
            let lines: Vec<serde_json::Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert_eq!(lines.len(), 12, "{text}");
            for l in &lines {
                if l["step"] == "plain" {
                    // Not a stream: no LLM fields at all.
                    for f in [
                        "llm_ttft_ms",
                        "llm_tpot_ms",
                        "llm_output_tokens",
                        "llm_input_tokens",
                    ] {
                        assert!(l.get(f).is_none(), "{f} on {l}");
                    }
                    continue;
                }
                assert_eq!(l["step"], "대화", "{l}");
                assert_eq!(num(l, "llm_output_tokens"), tokens as f64, "{l}");
                // Timed from before the request was written: never earlier than
                // planted, at most 5 ms later for one request (the server's own
                // lateness aside; the summary's p50 is held to 2 ms elsewhere).
                let ttft = num(l, "llm_ttft_ms");
                within(
                    "llm_ttft_ms",
                    ttft,
                    first_ms as f64..first_ms as f64 + 5.0 + late_ms,
                )?;
                within(
                    "llm_tpot_ms",
                    num(l, "llm_tpot_ms"),
                    gap_ms as f64 - 3.0..gap_ms as f64 + 3.0,
                )?;
                // The prompt was sent as written: pado did not size it.
                assert!(l.get("llm_input_tokens").is_none(), "{l}");
            }
            Ok(())
        },
    );
    // The same fields in CSV: empty cells on the plain request's rows.
    let r = run(
        "sse-raw-csv",
        &[file.to_str().unwrap(), "--output", &csv_arg],
    );
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let mut rd = csv::Reader::from_path(&csv).unwrap();
    let head = rd.headers().unwrap().clone();
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    let (step, out, ttft, input) = (
        col("step"),
        col("llm_output_tokens"),
        col("llm_ttft_ms"),
        col("llm_input_tokens"),
    );
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 12);
    for row in &rows {
        if &row[step] == "plain" {
            assert_eq!((&row[out], &row[ttft]), ("", ""), "{row:?}");
        } else {
            assert_eq!(&row[out], tokens.to_string(), "{row:?}");
            assert!(row[ttft].parse::<f64>().unwrap() >= first_ms as f64);
            assert_eq!(&row[input], "", "{row:?}");
        }
    }
}
