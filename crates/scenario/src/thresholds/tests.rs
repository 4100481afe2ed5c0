//! Parsing: what is accepted, and what every rejection says.

use super::*;

fn err(key: &str, expr: &str) -> String {
    parse(key, expr).unwrap_err().to_string()
}

fn assert_err(key: &str, expr: &str, fragments: &[&str]) {
    let msg = err(key, expr);
    for f in fragments {
        assert!(
            msg.contains(f),
            "`{key}` / `{expr}`: message {msg:?} lacks {f:?}"
        );
    }
}

fn tags(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn parses_basic_file_form() {
    let t = parse("http_req_duration", "p(95) < 200").unwrap();
    assert_eq!(
        t,
        Threshold {
            source: "p(95) < 200".into(),
            metric: "http_req_duration".into(),
            tags: vec![],
            aggregation: Aggregation::Percentile(95.0),
            comparison: Comparison::Lt,
            bound: 200.0,
            abort_on_fail: false,
            scope: None,
        }
    );
    let t = parse("http_req_failed", "rate < 0.01").unwrap();
    assert_eq!(
        (t.aggregation, t.comparison, t.bound),
        (Aggregation::Rate, Comparison::Lt, 0.01)
    );
    let t = parse("checks", "rate>0.99").unwrap();
    assert_eq!(
        (t.aggregation, t.comparison, t.bound),
        (Aggregation::Rate, Comparison::Gt, 0.99)
    );
}

#[test]
fn whitespace_and_numbers() {
    let cases: &[(&str, Aggregation, Comparison, f64)] = &[
        (
            "p(95)<200",
            Aggregation::Percentile(95.0),
            Comparison::Lt,
            200.0,
        ),
        (
            "  p( 95 ) < 200.5 ",
            Aggregation::Percentile(95.0),
            Comparison::Lt,
            200.5,
        ),
        (
            "p (99.9)<=1e3",
            Aggregation::Percentile(99.9),
            Comparison::Le,
            1000.0,
        ),
        (
            "p(0) >= -5",
            Aggregation::Percentile(0.0),
            Comparison::Ge,
            -5.0,
        ),
        (
            "p(100)>.5",
            Aggregation::Percentile(100.0),
            Comparison::Gt,
            0.5,
        ),
        ("avg==1.", Aggregation::Avg, Comparison::Eq, 1.0),
        ("avg === 3", Aggregation::Avg, Comparison::Eq, 3.0),
        ("med != +2E-1", Aggregation::Med, Comparison::Ne, 0.2),
        ("min\t<\t1", Aggregation::Min, Comparison::Lt, 1.0),
        ("max < 0.01", Aggregation::Max, Comparison::Lt, 0.01),
    ];
    for (expr, agg, cmp, bound) in cases {
        let t = parse("http_req_duration", expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        assert_eq!(
            (t.aggregation, t.comparison, t.bound),
            (*agg, *cmp, *bound),
            "{expr}"
        );
        assert_eq!(t.source, expr.trim());
    }
}

#[test]
fn aggregations_per_kind() {
    assert!(parse("http_reqs", "count > 100").is_ok());
    assert!(parse("http_reqs", "rate > 50").is_ok());
    assert!(parse("data_received", "count < 1e9").is_ok());
    assert!(parse("vus", "value <= 10").is_ok());
    assert!(parse("vus_max", "max < 100").is_ok());
    assert!(parse("vus", "min > 0").is_ok());
    assert!(parse("iteration_duration", "med < 1000").is_ok());

    assert_err(
        "http_req_duration",
        "rate < 0.1",
        &["`rate` does not apply to trend metric http_req_duration; use avg, min, max, med or p(N)"],
    );
    assert_err(
        "http_req_failed",
        "p(95) < 1",
        &["`p(95)` does not apply to rate metric http_req_failed; use rate"],
    );
    assert_err(
        "http_reqs",
        "avg < 1",
        &["counter metric http_reqs; use count or rate"],
    );
    assert_err(
        "vus",
        "count < 1",
        &["gauge metric vus; use value, min or max"],
    );
    assert_err("checks", "value > 0", &["use rate"]);
}

#[test]
fn object_form_carries_abort_on_fail() {
    let t = parse_object("http_req_failed", "rate<0.01", true).unwrap();
    assert!(t.abort_on_fail);
    assert!(!parse("http_req_failed", "rate<0.01").unwrap().abort_on_fail);
    assert!(parse_object("http_req_failed", "rate<<0.01", true).is_err());
}

#[test]
fn invalid_aggregations() {
    assert_err(
        "http_req_duration",
        "p95 < 200",
        &["unknown aggregation `p95`; did you mean `p(95)`?"],
    );
    assert_err("http_req_duration", "p99.9<1", &["did you mean `p(99.9)`?"]);
    assert_err(
        "http_req_duration",
        "P(95) < 200",
        &["`P(95)`", "did you mean `p(95)`?"],
    );
    assert_err(
        "http_req_duration",
        "percentile(90) < 200",
        &["did you mean `p(90)`?"],
    );
    assert_err(
        "http_req_duration",
        "average < 200",
        &["did you mean `avg`?"],
    );
    assert_err(
        "http_req_duration",
        "median < 200",
        &["did you mean `med`?"],
    );
    assert_err("http_req_duration", "AVG < 200", &["did you mean `avg`?"]);
    assert_err("http_req_duration", "avgg < 200", &["did you mean `avg`?"]);
    assert_err("http_req_failed", "rat < 0.1", &["did you mean `rate`?"]);
    assert_err(
        "http_req_duration",
        "foo < 200",
        &[
            "unknown aggregation `foo`",
            "use avg, min, max, med or p(N) for trend metric http_req_duration",
        ],
    );
    assert_err("http_req_duration", "p < 200", &["rank in parentheses"]);
    assert_err(
        "http_req_duration",
        "avg() < 200",
        &["`avg` takes no argument"],
    );
    assert_err(
        "http_req_duration",
        "< 200",
        &["missing aggregation in `< 200`", "p(95) < 200"],
    );
    assert_err("http_req_duration", "   ", &["empty threshold expression"]);
    assert_err("http_req_failed", "", &["write e.g. `rate < 0.01`"]);
}

#[test]
fn invalid_percentiles() {
    assert_err(
        "http_req_duration",
        "p(101) < 1",
        &["invalid percentile `p(101)`", "between 0 and 100, got 101"],
    );
    assert_err("http_req_duration", "p(-1) < 1", &["between 0 and 100"]);
    assert_err("http_req_duration", "p() < 1", &["missing rank"]);
    assert_err(
        "http_req_duration",
        "p(x) < 1",
        &["rank `x` is not a number"],
    );
    assert_err("http_req_duration", "p(nan) < 1", &["not a number"]);
    assert_err("http_req_duration", "p(95 < 1", &["missing closing `)`"]);
}

#[test]
fn invalid_operators_and_values() {
    assert_err(
        "http_req_duration",
        "p(95) 200",
        &["missing comparison operator after `p(95)`"],
    );
    assert_err(
        "http_req_duration",
        "avg",
        &["missing comparison operator after `avg`"],
    );
    assert_err(
        "http_req_duration",
        "avg = 200",
        &["invalid comparison operator `=`", "use `==`"],
    );
    assert_err("http_req_duration", "avg => 200", &["did you mean `>=`?"]);
    assert_err("http_req_duration", "avg =< 200", &["did you mean `<=`?"]);
    assert_err("http_req_duration", "avg <> 200", &["did you mean `!=`?"]);
    assert_err(
        "http_req_duration",
        "avg <<< 200",
        &["use one of <, <=, >, >=, ==, !="],
    );
    assert_err(
        "http_req_duration",
        "avg <",
        &["missing number after `<`", "p(95) < 200"],
    );
    assert_err(
        "http_req_duration",
        "avg < abc",
        &["invalid number `abc`", "plain number"],
    );
    assert_err("http_req_duration", "avg < inf", &["invalid number `inf`"]);
    assert_err("http_req_duration", "avg < NaN", &["invalid number `NaN`"]);
    assert_err("http_req_duration", "avg < 1e999", &["out of range"]);
    assert_err(
        "http_req_duration",
        "p(95) < 200ms",
        &["invalid number `200ms`", "write `200`"],
    );
    assert_err(
        "http_req_duration",
        "p(95) < 200 ms",
        &["invalid number `200 ms`", "write `200`"],
    );
    assert_err(
        "http_req_duration",
        "p(95) < 1.1s",
        &["write `1100` for 1.1s"],
    );
    assert_err("http_req_duration", "p(95) < 2m", &["write `120000`"]);
    assert_err("http_req_duration", "p(95) < 500us", &["write `0.5`"]);
    assert_err(
        "http_req_failed",
        "rate < 1%",
        &["fractions between 0 and 1", "write `0.01` for 1%"],
    );
    assert_err(
        "data_sent",
        "count < 10kb",
        &["units are not allowed", "(in bytes)"],
    );
    assert_err(
        "http_req_duration",
        "avg < 1.2.3",
        &["unexpected `.3` after `1.2`"],
    );
    assert_err(
        "http_req_duration",
        "avg < 1 2",
        &["unexpected `2` after the number"],
    );
    assert_err(
        "http_req_duration",
        "p(95) < 200 && avg < 100",
        &["each condition as its own threshold"],
    );
}

#[test]
fn metric_key_tags() {
    assert_eq!(
        parse_metric_key("http_req_duration").unwrap(),
        ("http_req_duration".to_string(), vec![])
    );
    assert_eq!(
        parse_metric_key(" http_reqs { step : search , status:200 } ").unwrap(),
        (
            "http_reqs".to_string(),
            tags(&[("step", "search"), ("status", "200")])
        )
    );
    assert_eq!(
        parse_metric_key("http_req_duration{url:http://example.com:8080/a?b=c}")
            .unwrap()
            .1,
        tags(&[("url", "http://example.com:8080/a?b=c")])
    );
    assert_eq!(
        parse_metric_key(r#"checks{name:"a, b}", other:'it''s', e:"", esc:"q\"\\x\y"}"#).unwrap_err().to_string(),
        "invalid tag filter in `checks{name:\"a, b}\", other:'it''s', e:\"\", esc:\"q\\\"\\\\x\\y\"}`: unexpected `'` after the quoted value of tag `other`; separate tags with `,`"
    );
    assert_eq!(
        parse_metric_key(
            r#"checks{name:"a, b}", other:'it\'s', e:"", esc:"q\"\\x\y", plain:it's}"#
        )
        .unwrap()
        .1,
        tags(&[
            ("name", "a, b}"),
            ("other", "it's"),
            ("e", ""),
            ("esc", "q\"\\x\\y"),
            ("plain", "it's")
        ])
    );
}

#[test]
fn hangul_tag_values() {
    let (m, t) = parse_metric_key("http_req_duration{step:검색,페이지:\"장바구니 담기\"}").unwrap();
    assert_eq!(m, "http_req_duration");
    assert_eq!(t, tags(&[("step", "검색"), ("페이지", "장바구니 담기")]));
    let th = parse_cli("http_req_duration{step:결제}: p(99) < 300").unwrap();
    assert_eq!(th.tags, tags(&[("step", "결제")]));
    assert_eq!(th.metric_key(), "http_req_duration{step:결제}");
    let e = parse_metric_key("http_req_duration{단계:}")
        .unwrap_err()
        .to_string();
    assert!(e.contains("tag `단계` has no value"), "{e}");
}

#[test]
fn invalid_metric_keys() {
    let e = |k: &str| parse_metric_key(k).unwrap_err().to_string();
    assert_eq!(
        e("http_req_duraton"),
        "unknown metric `http_req_duraton`; did you mean `http_req_duration`?"
    );
    assert!(e("HTTP_REQ_FAILED").contains("did you mean `http_req_failed`?"));
    assert!(e("http-reqs").contains("did you mean `http_reqs`?"));
    assert!(e("vu").contains("did you mean `vus`?"));
    assert!(e("latency").contains("known metrics are http_req_duration, "));
    assert!(e("").contains("empty metric name"));
    assert!(e("{step:a}").contains("empty metric name"));
    assert!(e("http_req_duration{step:a").contains("missing closing `}`"));
    assert!(e("http_req_duration{}").contains("empty tag filter `{}`"));
    assert!(e("http_req_duration{step}").contains("tag `step` has no value"));
    assert!(e("http_req_duration{:a}").contains("empty tag name"));
    assert!(e("http_req_duration{a:b,}").contains("trailing `,`"));
    assert!(e("http_req_duration{a:b,,c:d}").contains("empty tag before `,`"));
    assert!(e("http_req_duration{a:1,a:2}").contains("tag `a` is given twice"));
    assert!(e("http_req_duration{a:b}x").contains("unexpected `x` after `}`"));
    assert!(e("http_req_duration{a:\"b}").contains("unterminated quoted value of tag `a`"));
    assert!(e("http_req_duration{a b:c}").contains("contains whitespace"));
    assert!(e("http_req_duration}").contains("`}` without a matching `{`"));
    // The metric is checked before the tags, so a typo is reported first.
    assert!(e("http_req_duraton{").contains("did you mean"));
}

#[test]
fn metric_key_round_trips() {
    let mut t = parse("http_req_duration", "avg < 1").unwrap();
    t.tags = tags(&[
        ("a", "plain"),
        ("b", ""),
        ("c", " padded "),
        ("d", "x,y}z"),
        ("e", "\"quoted\""),
        ("f", "back\\slash\\"),
        ("g", "'single"),
        ("h", "검색:결제"),
    ]);
    let key = t.metric_key();
    assert_eq!(
        parse_metric_key(&key).unwrap(),
        (t.metric.clone(), t.tags.clone()),
        "{key}"
    );
    let again = parse_cli(&t.to_string()).unwrap();
    assert_eq!(again, t);
}

#[test]
fn cli_form() {
    let t = parse_cli("p(95) < 200").unwrap();
    assert_eq!(t.metric, DEFAULT_CLI_METRIC);
    assert_eq!(t.source, "p(95) < 200");
    assert!(t.tags.is_empty());

    let t = parse_cli("http_req_failed: rate < 0.01").unwrap();
    assert_eq!(
        (t.metric.as_str(), t.aggregation, t.bound),
        ("http_req_failed", Aggregation::Rate, 0.01)
    );
    assert_eq!(t.source, "rate < 0.01");

    let t = parse_cli("http_req_duration{step:search}: p(99)<300").unwrap();
    assert_eq!(t.tags, tags(&[("step", "search")]));
    assert_eq!(t.aggregation, Aggregation::Percentile(99.0));
    assert_eq!(t.to_string(), "http_req_duration{step:search}: p(99)<300");

    let t = parse_cli("http_req_duration{url:\"http://x:1/a,b\"}:avg<1").unwrap();
    assert_eq!(t.tags, tags(&[("url", "http://x:1/a,b")]));
    assert!(!t.abort_on_fail);

    let e = |s: &str| parse_cli(s).unwrap_err().to_string();
    assert!(e("http_req_failed rate < 0.01").contains(
        "`http_req_failed` is a metric; separate it from the expression with `:`, e.g. `http_req_failed: rate < 0.01`"
    ));
    assert!(e("http_req_duration{step:a} p(95)<1").contains("is a metric"));
    assert!(e("http_req_duration{step:a: p(95)<1").contains("missing closing `}`"));
    assert!(e("http_req_failed:").contains("empty threshold expression; write e.g. `rate < 0.01`"));
    assert!(e("http_req_duraton: p(95)<1").contains("did you mean `http_req_duration`?"));
    assert!(e("p(95) < 200ms").contains("write `200`"));
    assert!(e("http_req_failed: p(95) < 1").contains("does not apply to rate metric"));
}

#[test]
fn display_of_aggregations() {
    assert_eq!(Aggregation::Percentile(95.0).to_string(), "p(95)");
    assert_eq!(Aggregation::Percentile(99.9).to_string(), "p(99.9)");
    assert_eq!(
        parse("http_req_duration", "p(-0)<1")
            .unwrap()
            .aggregation
            .to_string(),
        "p(0)"
    );
    assert_eq!(Comparison::Ge.to_string(), ">=");
}

#[test]
fn a_files_thresholds_parse_with_the_line_of_each_bad_one() {
    let text = "target: http://127.0.0.1:9\nthresholds:\n  http_req_duration: [\"p(95) < 200ms\"]\n  http_req_failed: [\"rate < 0.01\"]\n  htp_reqs: [\"count > 1\"]\nscenarios:\n  s: { executor: constant-vus, vus: 1, duration: 1s, flow: [ { request: / } ] }\n";
    let config = crate::parse_str(text, "t.yaml").unwrap();
    let lines = LineIndex::build(text);
    let e = from_config(&config, "t.yaml", &lines).unwrap_err();
    let d = e.diagnostics();
    assert_eq!(d.len(), 2, "{e}");
    let duration = d
        .iter()
        .find(|x| x.field == "thresholds.http_req_duration")
        .unwrap();
    assert_eq!((duration.file.as_str(), duration.line), ("t.yaml", Some(3)));
    assert!(
        duration.to_string().starts_with(
            "t.yaml:3:3: thresholds.http_req_duration: `p(95) < 200ms`: invalid number"
        ),
        "{duration}"
    );
    let typo = d.iter().find(|x| x.field == "thresholds.htp_reqs").unwrap();
    assert_eq!(typo.line, Some(5));
    assert!(typo.message.contains("did you mean `http_reqs`?"), "{typo}");

    // Good thresholds, in the order of the file's keys; quick mode has no lines.
    let good = crate::parse_str(
        &text
            .replace("200ms", "200")
            .replace("htp_reqs", "http_reqs"),
        "t.yaml",
    )
    .unwrap();
    let parsed = from_config(&good, "<command line>", &LineIndex::default()).unwrap();
    let keys: Vec<String> = parsed.iter().map(Threshold::metric_key).collect();
    assert_eq!(keys, ["http_req_duration", "http_req_failed", "http_reqs"]);
}

/// A stress test's file: `warm` starts at 5 s; its stages last 10 s, 20 s and 30 s,
/// the second named `peak`.
const STAGED: &str = "target: http://127.0.0.1:9\nthresholds:\n  \"http_req_duration{stage:2}\": [\"p(95) < 200\"]\n  \"http_req_failed{stage:peak}\": [\"rate < 0.01\"]\n  \"http_reqs{window:1m-2m}\": [\"count > 0\"]\nscenarios:\n  other: { executor: constant-vus, vus: 1, duration: 1s, flow: [ { request: / } ] }\n  warm:\n    executor: ramping-vus\n    start_time: 5s\n    stages: [{ duration: 10s, target: 5 }, { duration: 20s, target: 5, name: peak }, { duration: 30s, target: 0 }]\n    flow: [ { request: / } ]\n";

#[test]
fn stage_scopes_are_placed_on_the_run_clock() {
    let config = crate::parse_str(STAGED, "t.yaml").unwrap();
    let parsed = from_config(&config, "t.yaml", &LineIndex::build(STAGED)).unwrap();
    let windows: Vec<_> = parsed
        .iter()
        .map(|t| (t.metric_key(), t.scope.as_ref().and_then(|s| s.window_s)))
        .collect();
    assert_eq!(
        windows,
        [
            ("http_req_duration{stage:2}".to_string(), Some((15.0, 35.0))),
            (
                "http_req_failed{stage:peak}".to_string(),
                Some((15.0, 35.0))
            ),
            ("http_reqs{window:1m-2m}".to_string(), Some((60.0, 120.0))),
        ]
    );
    // The scope is not a series filter.
    assert!(parsed.iter().all(|t| t.tags.is_empty()));
    // Stage 1 starts at the scenario's start_time.
    let one = STAGED.replace("{stage:2}", "{stage:1}");
    let t = &from_config(
        &crate::parse_str(&one, "t.yaml").unwrap(),
        "t.yaml",
        &LineIndex::build(&one),
    )
    .unwrap()[0];
    assert_eq!(t.scope.as_ref().unwrap().window_s, Some((5.0, 15.0)));
}

#[test]
fn a_stage_that_does_not_exist_is_named_with_its_line() {
    let bad = STAGED
        .replace("{stage:2}", "{stage:4}")
        .replace("{stage:peak}", "{stage:top}");
    let config = crate::parse_str(&bad, "t.yaml").unwrap();
    let e = from_config(&config, "t.yaml", &LineIndex::build(&bad)).unwrap_err();
    let d = e.diagnostics();
    assert_eq!(d.len(), 2, "{e}");
    assert_eq!(d[0].line, Some(3), "{e}");
    assert!(
        d[0].message
            .contains("stage 4 does not exist: scenario `warm` has 3 (counting from 1)"),
        "{e}"
    );
    assert_eq!(d[1].line, Some(4), "{e}");
    assert!(d[1].message.contains("no stage named `top`"), "{e}");
    assert!(d[1].hint.as_deref().unwrap().contains("peak"), "{e}");

    // A scenario without `stages:`, named by the `scenario` tag.
    let other = STAGED.replace("{stage:2}", "{stage:1,scenario:other}");
    let e = from_config(
        &crate::parse_str(&other, "t.yaml").unwrap(),
        "t.yaml",
        &LineIndex::build(&other),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("scenario `other` has no `stages:`"),
        "{e}"
    );

    // abort_on_fail is refused: a scope is judged at the end.
    let abort = STAGED.replace(
        "[\"p(95) < 200\"]",
        "[{ threshold: \"p(95) < 200\", abort_on_fail: true }]",
    );
    let e = from_config(
        &crate::parse_str(&abort, "t.yaml").unwrap(),
        "t.yaml",
        &LineIndex::build(&abort),
    )
    .unwrap_err();
    assert!(e.to_string().contains("judged when the run ends"), "{e}");
}

#[test]
fn scopes_read_back_and_gauges_refuse_them() {
    let t = parse_cli("http_req_duration{step:검색,stage:2}: p(95) < 200").unwrap();
    assert_eq!(t.tags, [("step".to_string(), "검색".to_string())]);
    assert_eq!(t.metric_key(), "http_req_duration{step:검색,stage:2}");
    assert_eq!(parse_cli(&t.to_string()).unwrap(), t);
    // Scopes apply to metrics whose other tags are restricted, too.
    assert!(parse("group_duration{window:10s-20s}", "p(95) < 200").is_ok());
    let e = parse("vus{stage:1}", "value < 10").unwrap_err().to_string();
    assert!(e.contains("whole run"), "{e}");
}
