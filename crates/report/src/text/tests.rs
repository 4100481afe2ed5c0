use super::findings::bottleneck_table;
use super::*;
use pado_base::units::{bytes, thousands};

#[test]
fn escape_sequences_from_outside_never_reach_the_terminal() {
    let mut s = Summary {
        name: "run\x1b]0;pwned\x07".into(),
        requests: 3,
        ..Default::default()
    };
    s.steps.insert(
        "GET /\x1b[2J\x1b[H".into(),
        crate::summary::StepSummary {
            requests: 3,
            ..Default::default()
        },
    );
    s.warnings.push("label \x1b[31mred\x1b[0m\r".into());
    for color in [false, true] {
        let out = render(&s, TextOptions { color });
        assert!(out.contains("run\\x1b]0;pwned\\x07"), "{out}");
        assert!(out.contains("\\x1b[2J\\x1b[H"), "{out}");
        assert!(!out.contains('\r') && !out.contains('\x07'), "{out}");
        let mut rest = out.as_str();
        while let Some(i) = rest.find('\x1b') {
            assert!(color, "an escape without colour: {out:?}");
            assert!(
                OWN_ESCAPES.iter().any(|e| rest[i..].starts_with(e)),
                "{out:?}"
            );
            rest = &rest[i + 1..];
        }
    }
}

#[test]
fn number_formats() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(1234567), "1,234,567");
    assert_eq!(thousands(100), "100");
    assert_eq!(bytes(999), "999 B");
    assert_eq!(bytes(1_500_000), "1.5 MB");
    assert_eq!(ms(0.2871), "0.287");
    assert_eq!(ms(12.345), "12.35");
    assert_eq!(fit("abcdef", 4), "abc…");
}

#[test]
fn the_bottleneck_table_marks_busy_throughout_apart_from_the_limit() {
    use pado_analysis::attribution::{Attribution, Component, Kind, Verdict, Window};
    let comp = |name: &str, kind, verdict| Component {
        component: name.into(),
        kind,
        endpoint: "app".into(),
        state: "state".into(),
        baseline: None,
        verdict,
        evidence: "why".into(),
        utilisation: None,
    };
    let mut b = Attribution {
        window: Window::new("saturation (load ≥ 8)", 10.0, 20.0),
        baseline: Some(Window::new("low load (≤ 4)", 0.0, 5.0)),
        saturated_run: true,
        components: vec![
            comp("DB pool HikariPool-1", Kind::Pool, Verdict::Yes),
            comp("CPU (machine)", Kind::MachineCpu, Verdict::BusyThroughout),
        ],
        limit: Some("DB pool HikariPool-1 (app)".into()),
        endpoints: Vec::new(),
    };
    let mut out = String::new();
    bottleneck_table(&mut out, &b, TextOptions { color: false });
    let line = |name: &str| {
        out.lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("no {name} in {out}"))
            .to_string()
    };
    assert!(line("DB pool").trim_start().starts_with("YES"), "{out}");
    assert!(
        line("CPU (machine)").trim_start().starts_with("busy "),
        "{out}"
    );
    assert!(out.contains("busy = busy throughout"), "{out}");
    // Without such a row, no legend for it.
    b.components.pop();
    let mut out = String::new();
    bottleneck_table(&mut out, &b, TextOptions { color: false });
    assert!(!out.contains("busy = "), "{out}");
}

/// A merged result shows one line per generator with its own figures and verdict,
/// and the partial marking on top; a run of one generator shows neither.
#[test]
fn generators_block_and_partial_marking_only_for_merged_results() {
    let single = Summary {
        name: "one".into(),
        ..Default::default()
    };
    let out = render(&single, TextOptions::default());
    assert!(
        !out.contains("generators (") && !out.contains("PARTIAL"),
        "{out}"
    );

    let saturated = pado_analysis::self_check::GeneratorCheck {
        saturated: true,
        ..Default::default()
    };
    let merged = Summary {
        name: "split".into(),
        generators: vec![
            crate::summary::GeneratorSummary {
                segment: "0/2".into(),
                share: 0.5,
                requests: 1234,
                rps: 123.4,
                failed: 5,
                latency_ms: pado_metrics::LatencySummary {
                    p50: 1.5,
                    p95: 7.25,
                    p99: 9.0,
                    ..Default::default()
                },
                start_skew_ms: Some(14.2),
                self_check: Some(Default::default()),
                ..Default::default()
            },
            crate::summary::GeneratorSummary {
                segment: "1/2".into(),
                share: 0.5,
                ended_early: true,
                self_check: Some(saturated),
                ..Default::default()
            },
        ],
        partial: vec!["segment 3/4 missing: its share of the load was not sent".into()],
        ..Default::default()
    };
    let out = render(&merged, TextOptions::default());
    assert!(out.contains("generators (2 merged)"), "{out}");
    let row0 = out
        .lines()
        .find(|l| l.trim_start().starts_with("0/2"))
        .unwrap();
    for cell in [
        "50%", "1,234", "123", "5", "1.50", "7.25", "9.00", "14", "ok",
    ] {
        assert!(row0.contains(cell), "{cell} in {row0}");
    }
    let row1 = out
        .lines()
        .find(|l| l.trim_start().starts_with("1/2"))
        .unwrap();
    assert!(
        row1.contains("SATURATED") && row1.contains("ended early"),
        "{row1}"
    );
    assert!(out.contains("PARTIAL RESULT"), "{out}");
    assert!(out.contains("segment 3/4 missing"), "{out}");
}

#[test]
fn step_tables_stay_aligned_with_hangul_step_names() {
    let mut s = Summary {
        requests: 30,
        ..Default::default()
    };
    for name in ["GET /api/posts", "게시글 목록 조회", "검색"] {
        s.steps.insert(
            name.into(),
            crate::summary::StepSummary {
                requests: 10,
                ..Default::default()
            },
        );
    }
    let out = render(&s, TextOptions { color: false });
    // The requests column ends at the same terminal column on every step's row.
    let ends: Vec<usize> = out
        .lines()
        .filter(|l| l.contains("GET /api/posts") || l.contains("게시글") || l.contains("검색"))
        .filter(|l| l.contains("10"))
        .map(|l| {
            let i = l.find("10").expect("requests");
            pado_base::text::columns(&l[..i]) + 2
        })
        .collect();
    assert_eq!(ends.len(), 3, "{out}");
    assert!(ends.iter().all(|e| *e == ends[0]), "{ends:?}\n{out}");
}

#[test]
fn grpc_steps_get_their_block_with_status_names() {
    let mut s = Summary {
        requests: 12,
        ..Default::default()
    };
    let mut g = crate::summary::GrpcSummary {
        streams: 4,
        stream_msgs: 12,
        ..Default::default()
    };
    g.status.insert("0".into(), 10);
    g.status.insert("5".into(), 2);
    s.steps.insert(
        "에코 호출".into(),
        crate::summary::StepSummary {
            requests: 12,
            grpc: Some(g),
            ..Default::default()
        },
    );
    let out = render(&s, TextOptions { color: false });
    let line = out
        .lines()
        .filter(|l| l.contains("에코 호출"))
        .nth(1)
        .expect("a grpc line after the step's own")
        .to_string();
    assert!(out.contains("  grpc "), "{out}");
    assert!(line.contains("OK 10, NOT_FOUND 2"), "{line}");
    // Without gRPC steps, no block.
    s.steps.clear();
    assert!(!render(&s, TextOptions { color: false }).contains("  grpc "));
}

#[test]
fn llm_steps_get_their_block_and_other_runs_do_not() {
    let mut s = Summary {
        requests: 12,
        ..Default::default()
    };
    assert!(!render(&s, TextOptions { color: false }).contains("ttft50"));
    let llm = crate::summary::LlmSummary {
        requests: 12,
        output_tokens: 240,
        output_tokens_per_s: 120.0,
        ttft_ms: pado_metrics::LatencySummary {
            p50: 150.5,
            p95: 171.0,
            ..Default::default()
        },
        ..Default::default()
    };
    let sse = crate::summary::SseSummary {
        streams: 12,
        events: 264,
        llm: Some(llm),
    };
    s.steps.insert(
        "대화".into(),
        crate::summary::StepSummary {
            requests: 12,
            sse: Some(sse.clone()),
            ..Default::default()
        },
    );
    s.sse = Some(sse);
    let out = render(&s, TextOptions { color: false });
    let row = out
        .lines()
        .find(|l| l.contains("대화") && l.contains("240"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains("150") && row.contains("171"), "{row}");
    assert!(out.contains("output tokens: 240"), "{out}");
}

#[test]
fn llm_block_shows_the_planted_input_tokens_and_a_dash_without_them() {
    let llm = |input: Option<(f64, f64, f64)>| crate::summary::LlmSummary {
        requests: 12,
        output_tokens: 240,
        output_tokens_per_s: 120.0,
        input_tokens_per_request: input.map(|(p50, mean, max)| pado_metrics::LatencySummary {
            p50,
            mean,
            max,
            ..Default::default()
        }),
        ..Default::default()
    };
    let sse = |l| crate::summary::SseSummary {
        streams: 12,
        events: 264,
        llm: Some(l),
    };
    let mut s = Summary {
        requests: 24,
        ..Default::default()
    };
    let step = |l| crate::summary::StepSummary {
        requests: 12,
        sse: Some(sse(l)),
        ..Default::default()
    };
    // Planted: prompts of 1,500 tokens at the median (mean 1,750.4, max 3,001.2).
    s.steps.insert(
        "긴 질문".into(),
        step(llm(Some((1_500.0, 1_750.4, 3_001.2)))),
    );
    s.steps.insert("짧은".into(), step(llm(None)));
    s.sse = Some(sse(llm(Some((1_500.0, 1_750.4, 3_001.2)))));
    let out = render(&s, TextOptions { color: false });
    let head = out
        .lines()
        .find(|l| l.contains("ttft50"))
        .unwrap_or_else(|| panic!("{out}"));
    let col = |line: &str, i: usize| line.split_whitespace().nth(i).map(str::to_string);
    assert_eq!(col(head, 3).as_deref(), Some("input50"), "{head}");
    // The LLM block's rows (the step names are in other blocks too).
    let row = |name: &str| {
        out.lines()
            .skip_while(|l| !l.contains("ttft50"))
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{out}"))
            .replace(name, "step")
    };
    assert_eq!(col(&row("긴 질문"), 3).as_deref(), Some("1,500"), "{out}");
    assert_eq!(col(&row("짧은"), 3).as_deref(), Some("-"), "{out}");
    assert!(
        out.contains("input tokens per request (the prompts pado sized): 1,500 median, 1,750 mean, 3,001 max"),
        "{out}"
    );
    // Without sized prompts anywhere, no such line.
    s.sse = Some(sse(llm(None)));
    assert!(!render(&s, TextOptions { color: false }).contains("input tokens per request"));
}

#[test]
fn a_scripts_exception_is_shown_with_its_frame_and_no_request_count() {
    let sample = |category: &str, reason: Option<&str>| pado_metrics::FailureSample {
        step: "default".into(),
        category: category.into(),
        second: 1,
        method: "GET".into(),
        url: "/x".into(),
        status: 500,
        body: String::new(),
        check: None,
        actual: None,
        reason: reason.map(str::to_string),
        event: None,
    };
    let mut s = Summary {
        requests: 5,
        ..Default::default()
    };
    s.errors.insert("http_500".into(), 2);
    s.failures.push(sample(
        "script_error",
        Some("Error: planted 파도\n    at default (s.js:14:45)"),
    ));
    s.failures.push(sample("http_500", None));
    let out = render(&s, TextOptions { color: false });
    assert!(
        out.contains("script_error           default: an exception ended an iteration · Error: planted 파도 (at default (s.js:14:45)) · at 1s"),
        "{out}"
    );
    assert!(!out.contains("script_error (0)"), "{out}");
    // Any other category keeps its count and request.
    assert!(
        out.contains("http_500 (2)") && out.contains("GET /x → 500"),
        "{out}"
    );
}
