//! The demo target's LLM (`/v1/chat/completions`) under a step ramp of concurrent
//! streams: its batch holds a known number of generations, so the time to first
//! token must stay flat while the streams fit and rise past the limit by the
//! queueing the pacing implies, and the bottleneck table must name the full batch
//! in the user's words; below the limit it names nothing of the LLM.

use serde_json::Value;

use crate::harness::{run_timed, serve_demo_target, tmp, within, write_fixture, Run};

const FIXTURE: &str = "llm_demo_ttft_knee_appears_past_the_batch_limit.yaml";
/// Generations the target's batch holds in the first run.
const BATCH: f64 = 4.0;
/// Tokens per answer and ms per token: a generation takes the prefill plus 19 × 10 ms.
const MAX_TOKENS: u64 = 20;
const DECODE_MS: f64 = 10.0;
/// 400 ASCII characters: 100 prompt tokens, 5 ms of prefill at 50 ms per 1,000.
const PROMPT_CHARS: usize = 400;
const PREFILL_MS: f64 = 5.0;

/// The scenario's threshold value (the mean TTFT, ms) of `scope`.
fn ttft_in(s: &Value, scope: &str) -> f64 {
    s["thresholds"]
        .as_array()
        .and_then(|t| {
            t.iter()
                .find(|t| t["metric"].as_str() == Some(&format!("llm_ttft{{{scope}}}")))
        })
        .and_then(|t| t["value"].as_f64())
        .unwrap_or_else(|| panic!("no llm_ttft{{{scope}}} value: {:#}", s["thresholds"]))
}

fn llm_row(s: &Value) -> Value {
    s["bottlenecks"]["components"]
        .as_array()
        .and_then(|rows| {
            rows.iter()
                .find(|r| r["component"] == "LLM batch `pado-demo-llm`")
        })
        .cloned()
        .unwrap_or_else(|| panic!("no LLM batch row: {:#}", s["bottlenecks"]))
}

/// Runs the ramp against a target whose batch holds `batch`.
fn ramp(name: &str, batch: u32, check: impl FnMut(&Run) -> Result<(), String>) {
    let b = batch.to_string();
    let (_kid, url) = serve_demo_target(&[
        "--llm-batch-limit",
        &b,
        "--llm-decode-ms-per-token",
        "10",
        "--llm-prefill-ms-per-1k-tokens",
        "50",
        "--llm-batch-slowdown",
        "0",
    ]);
    let t = tmp(name);
    let file = write_fixture(
        &t,
        FIXTURE,
        "llm-knee.yaml",
        &[
            ("target", url),
            ("max_tokens", MAX_TOKENS.to_string()),
            ("prompt", "a".repeat(PROMPT_CHARS - 1)),
        ],
    );
    run_timed(name, &[file.to_str().unwrap()], check);
}

#[test]
fn llm_demo_ttft_knee_appears_past_the_batch_limit() {
    // One generation: the prefill, then 19 more tokens.
    let service_ms = PREFILL_MS + (MAX_TOKENS - 1) as f64 * DECODE_MS;
    ramp("llm-knee", BATCH as u32, |r| {
        assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
        let s = r.summary();
        assert_eq!(s["failed"], 0, "{s:#}");
        let below = ttft_in(&s, "window:1s-3s");
        let above = ttft_in(&s, "window:7s-9s");
        eprintln!("llm-knee: mean TTFT {below:.1} ms at 2 streams, {above:.1} ms at 10");
        // 2 streams in a batch of 4: the first token is the prefill's.
        within(
            "mean TTFT at 2 streams",
            below,
            PREFILL_MS..PREFILL_MS + 25.0,
        )?;
        // 10 streams, 4 at a time: each waits (10 / 4 − 1) generations on average
        // (Little's law over the closed loop), 1.5 × 195 ms.
        let queueing = (10.0 / BATCH - 1.0) * service_ms;
        within(
            "mean TTFT at 10 streams",
            above,
            0.6 * queueing..1.5 * queueing + 25.0,
        )?;
        let row = llm_row(&s);
        assert_eq!(row["verdict"], "yes", "{:#}", s["bottlenecks"]);
        let evidence = row["evidence"].as_str().unwrap_or_default();
        assert!(
            evidence.starts_with("LLM batch full: 4 running, ")
                && evidence.contains(" waiting; KV cache "),
            "{evidence}"
        );
        assert!(
            s["bottlenecks"]["limit"]
                .as_str()
                .is_some_and(|l| l.contains("LLM batch `pado-demo-llm`")),
            "{:#}",
            s["bottlenecks"]
        );
        Ok(())
    });
}

#[test]
fn llm_demo_below_the_batch_limit_names_nothing_of_the_llm() {
    // A batch of 16: the 10 streams always fit.
    ramp("llm-no-knee", 16, |r| {
        assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
        let s = r.summary();
        let below = ttft_in(&s, "window:1s-3s");
        let above = ttft_in(&s, "window:7s-9s");
        within("mean TTFT at 10 streams", above, PREFILL_MS..below + 25.0)?;
        let row = llm_row(&s);
        assert_eq!(row["verdict"], "no", "{:#}", s["bottlenecks"]);
        assert!(
            !s["bottlenecks"]["limit"]
                .as_str()
                .unwrap_or_default()
                .contains("LLM"),
            "{:#}",
            s["bottlenecks"]
        );
        Ok(())
    });
}
