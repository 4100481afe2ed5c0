//! pado's threshold parser held to k6's own parser test tables.
//!
//! The inputs and k6's verdicts are those of k6's `metrics/thresholds_parser_test.go`
//! (`TestParseThresholdExpression`, `TestParseThresholdAggregationMethod`,
//! `TestScanThresholdExpression`), `metrics/thresholds_test.go` (`TestThresholdsParse`,
//! `TestThresholdsValidate`) and `metrics/metric_test.go` (`TestParseMetricName`,
//! `TestAddSubmetric`). k6 parses a metric key and an expression apart and checks
//! the metric against its registry later; pado does both at once, so k6's
//! placeholder metric `test_metric` is a pado metric of the same kind here and k6's
//! placeholder expressions are whole ones. Every place pado's verdict differs from
//! k6's says why (`docs/scenario.md`, "Differences from k6", says the same to users).

use super::*;

/// One k6 test case: its test and input, k6's verdict, pado's, and why they differ.
struct Case {
    k6_test: &'static str,
    key: &'static str,
    expr: &'static str,
    k6_accepts: bool,
    pado_accepts: bool,
    why_different: &'static str,
}

const fn same(k6_test: &'static str, key: &'static str, expr: &'static str, ok: bool) -> Case {
    Case {
        k6_test,
        key,
        expr,
        k6_accepts: ok,
        pado_accepts: ok,
        why_different: "",
    }
}

const fn stricter(
    k6_test: &'static str,
    key: &'static str,
    expr: &'static str,
    why_different: &'static str,
) -> Case {
    Case {
        k6_test,
        key,
        expr,
        k6_accepts: true,
        pado_accepts: false,
        why_different,
    }
}

const EXPR: &str = "TestParseThresholdExpression";
const AGG: &str = "TestParseThresholdAggregationMethod";
const SCAN: &str = "TestScanThresholdExpression";
const PARSE: &str = "TestThresholdsParse";
const VALIDATE: &str = "TestThresholdsValidate";
const NAME: &str = "TestParseMetricName";
const SUB: &str = "TestAddSubmetric";
const TAGS: &str = "k6 system tags";

const QUOTED_NAMES: &str = "tag names are never quoted in pado: no tag pado sets or a step can set needs quotes, so a quote there is taken for a typo";
const NO_VALUE: &str = "k6's AddSubmetric takes a tag without a value as an empty one, but ParseMetricName, which every k6 threshold key passes first, rejects it: k6 refuses the threshold too";
const PER_STEP: &str = "pado keeps one latency histogram and one failure count per step, not per status or outcome: only `http_reqs` can be filtered by `status` or `expected_response`";

fn cases() -> Vec<Case> {
    vec![
        same(EXPR, "http_reqs", "count!20", false),
        same(EXPR, "http_reqs", "foo>20", false),
        same(EXPR, "http_reqs", "count>abc", false),
        same(EXPR, "http_reqs", "count>20", true),
        same(AGG, "http_reqs", "count < 1", true),
        same(AGG, "http_req_failed", "rate < 1", true),
        same(AGG, "vus", "value < 1", true),
        same(AGG, "http_req_duration", "avg < 1", true),
        same(AGG, "http_req_duration", "min < 1", true),
        same(AGG, "http_req_duration", "max < 1", true),
        same(AGG, "http_req_duration", "med < 1", true),
        same(AGG, "http_req_duration", "p(99) < 1", true),
        same(AGG, "http_req_duration", "p(99.9) < 1", true),
        same(AGG, "http_req_duration", "p(0) < 1", true),
        same(AGG, "http_req_duration", "p(100) < 1", true),
        same(AGG, "http_req_duration", "foo < 1", false),
        same(AGG, "http_req_duration", "p() < 1", false),
        same(AGG, "http_req_duration", "p(99 < 1", false),
        same(AGG, "http_req_duration", "p(foo) < 1", false),
        same(AGG, "http_req_duration", "p(-1) < 1", false),
        same(AGG, "http_req_duration", "p(101) < 1", false),
        same(AGG, "http_req_duration", "p(NaN) < 1", false),
        same(AGG, "http_req_duration", "p(+Inf) < 1", false),
        same(SCAN, "http_req_duration", "avg<=1", true),
        same(SCAN, "http_req_duration", "avg<1", true),
        same(SCAN, "http_req_duration", "avg>=1", true),
        same(SCAN, "http_req_duration", "avg>1", true),
        same(SCAN, "http_req_duration", "avg===1", true),
        same(SCAN, "http_req_duration", "avg==1", true),
        same(SCAN, "http_req_duration", "avg!=1", true),
        same(SCAN, "http_req_duration", "  avg  <=1", true),
        same(SCAN, "http_req_duration", "avg<=  1  ", true),
        same(SCAN, "http_req_duration", "avg!1", false),
        same(PARSE, "http_req_failed", "rate<1", true),
        same(PARSE, "http_req_failed", "foo&1", false),
        same(VALIDATE, "non-existing", "rate<1", false),
        same(VALIDATE, "http_reqs", "count==1", true),
        same(VALIDATE, "http_reqs", "rate==1", true),
        same(VALIDATE, "http_reqs{foo:bar}", "rate==1", true),
        same(VALIDATE, "http_reqs{abc:123,easyas:doremi}", "rate==1", true),
        same(VALIDATE, "vus", "value==1", true),
        same(VALIDATE, "checks", "rate==1", true),
        same(VALIDATE, "http_req_duration", "avg==1", true),
        same(VALIDATE, "http_req_duration", "min==1", true),
        same(VALIDATE, "http_req_duration", "max==1", true),
        same(VALIDATE, "http_req_duration", "med==1", true),
        same(VALIDATE, "http_req_duration", "p(99)==1", true),
        same(NAME, "http_reqs", "count>0", true),
        same(NAME, "http_reqs{abc:123}", "count>0", true),
        same(NAME, "http_reqs{abc:123,easyas:doremi}", "count>0", true),
        same(NAME, "http_reqs{abc:123, easyas:doremi}", "count>0", true),
        same(NAME, "http_reqs{group:::mygroup}", "count>0", true),
        same(NAME, "http_req_duration{name:http://${}.com}", "p(95)<1", true),
        same(
            NAME,
            "http_req_duration{name:http://${}.com,url:ssh://github.com:grafana/k6}",
            "p(95)<1",
            true,
        ),
        same(NAME, "http_reqs{easyas}", "count>0", false),
        same(NAME, "http_reqs{easyas:}", "count>0", false),
        same(NAME, "http_reqs{abc:123,easyas:}", "count>0", false),
        same(NAME, "http_reqs{abc:123,easyas:doremi", "count>0", false),
        same(NAME, "http_reqsabc:123,easyas:doremi}", "count>0", false),
        same(NAME, "http_reqs}abc:123,easyas:doremi}", "count>0", false),
        same(NAME, "http_reqs}abc{bar", "count>0", false),
        same(NAME, "http_reqs{foo:ba}r", "count>0", false),
        same(SUB, "http_req_duration{}", "avg<1", false),
        same(SUB, "http_req_duration{  }", "avg<1", false),
        stricter(SUB, "http_req_duration{a}", "avg<1", NO_VALUE),
        same(SUB, "http_req_duration{a:1}", "avg<1", true),
        same(SUB, "http_req_duration{ a : 1 }", "avg<1", true),
        stricter(SUB, "http_req_duration{a,b}", "avg<1", NO_VALUE),
        same(SUB, r#"http_req_duration{ a:"",b: ''}"#, "avg<1", true),
        same(SUB, "http_req_duration{a:1,b:2}", "avg<1", true),
        same(SUB, "http_req_duration{ a : 1, b : 2 }", "avg<1", true),
        same(SUB, r#"http_req_duration{a : '1' , b : "2"}"#, "avg<1", true),
        stricter(
            SUB,
            r#"http_req_duration{" a" : ' 1' , b : "2 " }"#,
            "avg<1",
            QUOTED_NAMES,
        ),
        // k6's system tags: what maps onto pado's data is accepted, the rest is
        // refused with the reason.
        same(TAGS, "http_reqs{status:200}", "count>0", true),
        same(TAGS, "http_reqs{expected_response:true}", "count>0", true),
        same(TAGS, "http_req_duration{method:GET}", "p(95)<1", true),
        same(TAGS, "http_req_failed{scenario:browse}", "rate<0.1", true),
        same(TAGS, "group_duration{group:::login}", "p(95)<1", true),
        stricter(TAGS, "http_req_duration{status:200}", "p(95)<1", PER_STEP),
        stricter(
            TAGS,
            "http_req_duration{expected_response:true}",
            "p(95)<1",
            PER_STEP,
        ),
        stricter(TAGS, "http_req_failed{status:500}", "rate<0.1", PER_STEP),
        stricter(
            TAGS,
            "http_reqs{group:login}",
            "count>0",
            "k6 accepts it and it never matches (k6's group tag is a path, `::login`); pado says so",
        ),
        stricter(
            TAGS,
            "http_reqs{method:get}",
            "count>0",
            "k6 accepts it and it never matches (methods are sent upper case); pado says so",
        ),
        stricter(
            TAGS,
            "vus{scenario:browse}",
            "value<10",
            "vus is sampled for the whole run, not per scenario: k6's would never match",
        ),
    ]
}

#[test]
fn k6_parser_tables_get_k6s_verdicts_except_where_pado_says_why() {
    let mut wrong = Vec::new();
    for c in cases() {
        assert_eq!(
            c.k6_accepts != c.pado_accepts,
            !c.why_different.is_empty(),
            "{} `{}` `{}`: a difference needs its reason, a reason needs a difference",
            c.k6_test,
            c.key,
            c.expr
        );
        let got = parse(c.key, c.expr);
        if got.is_ok() != c.pado_accepts {
            wrong.push(format!(
                "{} `{}` / `{}`: expected {}, got {got:?}",
                c.k6_test,
                c.key,
                c.expr,
                if c.pado_accepts { "accept" } else { "reject" }
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn k6_accepted_cases_parse_to_k6s_values() {
    let t = parse("http_reqs", "count>20").unwrap();
    assert_eq!(
        (t.aggregation, t.comparison, t.bound),
        (Aggregation::Count, Comparison::Gt, 20.0)
    );
    for (expr, p) in [
        ("p(99)", 99.0),
        ("p(99.9)", 99.9),
        ("p(0)", 0.0),
        ("p(100)", 100.0),
    ] {
        let t = parse("http_req_duration", &format!("{expr}<1")).unwrap();
        assert_eq!(t.aggregation, Aggregation::Percentile(p), "{expr}");
    }
    for (expr, op) in [
        ("avg<=  1  ", Comparison::Le),
        ("  avg  <=1", Comparison::Le),
        ("avg===1", Comparison::Eq),
        ("avg!=1", Comparison::Ne),
    ] {
        let t = parse("http_req_duration", expr).unwrap();
        assert_eq!(
            (t.aggregation, t.comparison, t.bound),
            (Aggregation::Avg, op, 1.0)
        );
    }
    let owned = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    for (key, want) in [
        (
            "http_reqs{group:::mygroup}",
            owned(&[("group", "::mygroup")]),
        ),
        (
            "http_req_duration{name:http://${}.com,url:ssh://github.com:grafana/k6}",
            owned(&[
                ("name", "http://${}.com"),
                ("url", "ssh://github.com:grafana/k6"),
            ]),
        ),
        (
            "http_req_duration{ a : 1, b : 2 }",
            owned(&[("a", "1"), ("b", "2")]),
        ),
        (
            r#"http_req_duration{a : '1' , b : "2"}"#,
            owned(&[("a", "1"), ("b", "2")]),
        ),
        (
            r#"http_req_duration{ a:"",b: ''}"#,
            owned(&[("a", ""), ("b", "")]),
        ),
    ] {
        assert_eq!(parse_metric_key(key).unwrap().1, want, "{key}");
    }
    // A value with balanced braces is written back as k6 users wrote it.
    let t = parse("http_req_duration{name:http://${}.com}", "p(95)<1").unwrap();
    assert_eq!(t.metric_key(), "http_req_duration{name:http://${}.com}");
    assert_eq!(parse_cli(&t.to_string()).unwrap(), t);
}

#[test]
fn refused_tags_say_why_and_what_to_write() {
    let e = |k: &str, x: &str| parse(k, x).unwrap_err().to_string();
    let m = e("http_req_duration{status:200}", "p(95)<1");
    assert!(
        m.contains("one latency histogram") && m.contains("http_reqs{status:200}"),
        "{m}"
    );
    let m = e("http_reqs{group:login}", "count>0");
    assert!(m.contains("`group:::login`"), "{m}");
    let m = e("http_reqs{method:post}", "count>0");
    assert!(m.contains("`method:POST`"), "{m}");
    let m = e("http_reqs{status:0}", "count>0");
    assert!(m.contains("from 100 to 599"), "{m}");
    let m = e("http_reqs{expected_response:yes}", "count>0");
    assert!(m.contains("neither `true` nor `false`"), "{m}");
    let m = e("group_duration{step:a}", "p(95)<1");
    assert!(m.contains("filter it by `group` or `scenario`"), "{m}");
    // An unmatched `}` in a value: quoting is the way, and quoting works.
    let m = e("http_req_duration{name:a}b}", "p(95)<1");
    assert!(m.contains("is quoted"), "{m}");
    assert_eq!(
        parse_metric_key(r#"http_req_duration{name:"a}b"}"#)
            .unwrap()
            .1,
        vec![("name".to_string(), "a}b".to_string())]
    );
}

#[test]
fn each_tag_is_accepted_exactly_where_pados_data_answers_it() {
    let ok = |k: &str, x: &str| parse(k, x).is_ok();
    // scenario and group select steps: any per-step metric, WebSocket and gRPC too.
    assert!(ok("ws_sessions{scenario:chat}", "count > 0"));
    assert!(ok("grpc_req_duration{group:::pay}", "p(95) < 1"));
    assert!(ok("checks{method:GET}", "rate > 0.9"));
    assert!(ok("iterations{scenario:browse}", "count > 0"));
    // A ws: or grpc: step sends no method of its own; iterations are no request.
    assert!(!ok("ws_sessions{method:GET}", "count > 0"));
    assert!(!ok("grpc_req_duration{method:POST}", "p(95) < 1"));
    assert!(!ok("iterations{method:GET}", "count > 0"));
    assert!(!ok("iteration_duration{group:::pay}", "p(95) < 1"));
    assert!(!ok("http_reqs{status:abc}", "count > 0"));
    assert!(ok("http_reqs{status:599}", "count > 0"));
    assert!(!ok("http_reqs{status:600}", "count > 0"));
}
