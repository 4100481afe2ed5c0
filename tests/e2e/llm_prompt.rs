//! Prompts sized by pado (`sse.prompt`) against the demo target's LLM, whose
//! prefill costs a planted time per 1,000 prompt tokens: requests with 1,000-token
//! prompts have a time to first token higher than those with 100-token prompts by
//! the prefill of the 900 tokens between, and the prompt tokens the demo target
//! counted (`vllm:prompt_tokens_total`) are exactly the input tokens pado says it
//! sent (`llm_input_tokens`, per request in the raw output), Hangul prompts cut on
//! character boundaries included.

use std::io::{Read, Write};

use crate::harness::{num, run_timed, serve_demo_target, tmp, within, write_file, write_fixture};

/// Prefill per 1,000 prompt tokens, ms: 20 ms for 100 tokens, 200 ms for 1,000.
const PREFILL_MS_PER_1K: f64 = 200.0;

/// The demo target's `/metrics` value of `name` (one series).
fn metric(url: &str, name: &str) -> f64 {
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn llm_prompt_prefill_grows_with_the_input_length() {
    let t = tmp("llm-prompt");
    // A Korean prompt longer than 100 tokens (cut on a syllable) and an English
    // one shorter (padded with words).
    let korean = "부산에서 사흘 동안 머물 여행 일정을 짜 주세요 바다가 보이는 숙소와 시장 음식과 해운대 산책을 넣고 ".repeat(4);
    write_file(
        &t,
        "prompts.csv",
        &format!("prompt\n{korean}\nPlan a weekend trip to Busan\n"),
    );
    let (_kid, url) = serve_demo_target(&[
        "--llm-batch-limit",
        "64",
        "--llm-prefill-ms-per-1k-tokens",
        "200",
        "--llm-decode-ms-per-token",
        "5",
        "--llm-batch-slowdown",
        "0",
    ]);
    let file = write_fixture(
        &t,
        "llm_prompt_prefill_grows_with_the_input_length.yaml",
        "prompt.yaml",
        &[("target", url.clone())],
    );
    let raw_path = t.join("raw.jsonl");
    let raw_arg = format!("raw-json={}", raw_path.display());
    // The target's counter before the run being judged (a second attempt follows
    // the first's prompts).
    let mut counted_before = metric(&url, "vllm:prompt_tokens_total");
    run_timed(
        "llm-prompt",
        &[file.to_str().unwrap(), "--output", &raw_arg],
        |r| {
            let counted = metric(&url, "vllm:prompt_tokens_total") - counted_before;
            counted_before += counted;
            assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
            let s = r.summary();
            assert_eq!(num(&s, "failed"), 0.0, "{:#}", s["errors"]);
            let step = |n: &str| s["steps"][n]["sse"]["llm"].clone();
            let (short, long) = (step("short"), step("long"));
            // Every request's prompt was the asked length (3 significant digits).
            for (l, n) in [(&short, 100.0), (&long, 1000.0)] {
                let per = &l["input_tokens_per_request"];
                assert!(
                    (n * 0.999..=n * 1.001).contains(&num(per, "min")),
                    "{per:#}"
                );
                assert!(
                    (n * 0.999..=n * 1.001).contains(&num(per, "max")),
                    "{per:#}"
                );
            }
            // The thresholds on the input tokens read the planted lengths...
            let th = s["thresholds"].as_array().unwrap();
            assert_eq!(th.len(), 3, "{th:#?}");
            for t in th {
                let want = match t["metric"].as_str() {
                    Some("llm_input_tokens{step:long}") => 1000.0,
                    Some("llm_input_tokens{step:short}") => 100.0,
                    _ => panic!("{t:#}"),
                };
                assert_eq!(t["ok"], true, "{t:#}");
                let v = num(t, "value");
                assert!((want * 0.999..=want * 1.001).contains(&v), "{t:#}");
            }
            // ...and the summary's LLM table shows them per step (`input50`).
            let out = r.stdout();
            let block: Vec<&str> = out.lines().skip_while(|l| !l.contains("input50")).collect();
            let input50 = |step: &str| {
                block
                    .iter()
                    .find(|l| l.split_whitespace().next() == Some(step))
                    .and_then(|l| l.split_whitespace().nth(3))
            };
            assert_eq!(input50("short"), Some("100"), "{out}");
            assert_eq!(input50("long"), Some("1,000"), "{out}");
            // The raw lines: each request's input tokens, summed, are what the
            // demo target counted.
            let raw = std::fs::read_to_string(&raw_path).unwrap();
            let lines: Vec<serde_json::Value> = raw
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert_eq!(lines.len(), 24, "{raw}");
            let mut sent = 0.0;
            for l in &lines {
                let want = if l["step"] == "short" { 100.0 } else { 1000.0 };
                assert_eq!(num(l, "llm_input_tokens"), want, "{l}");
                assert_eq!(num(l, "llm_output_tokens"), 4.0, "{l}");
                sent += want;
            }
            assert_eq!(
                counted, sent,
                "the demo target counted {counted} prompt tokens"
            );
            // The 900 tokens between cost 180 ms of prefill: the difference of
            // the medians, within the demo target's timers.
            let extra = PREFILL_MS_PER_1K * 0.9;
            let gap = num(&long, "ttft_ms.p50") - num(&short, "ttft_ms.p50");
            within("TTFT p50 long − short", gap, extra - 10.0..extra + 12.0)?;
            Ok(())
        },
    );
}
