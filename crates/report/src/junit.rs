//! JUnit XML (`--export junit`) so CI systems show the run's verdict as test
//! results: one test case per judged item (thresholds, events' expectations, the
//! soak, the requests rule) and one per check, failing exactly when the exit code
//! says the run failed.

use std::fmt::Write as _;

use crate::summary::Summary;

/// Escape text for XML content and attribute values. Characters XML 1.0 cannot hold
/// (control characters other than tab, line feed and carriage return) become U+FFFD.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

fn value_text(v: Option<f64>) -> String {
    match v {
        None => "no data".to_string(),
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{}", v as i64),
        Some(v) => format!("{v:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string(),
    }
}

struct Case {
    name: String,
    classname: &'static str,
    failure: Option<(String, String, &'static str)>,
    /// What a passing case saw (`system-out`).
    out: Option<String>,
}

fn suite(out: &mut String, name: &str, cases: &[Case], time: &str, timestamp: &str) {
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{time}\" timestamp=\"{}\">",
        xml_escape(name),
        cases.len(),
        xml_escape(timestamp)
    );
    for c in cases {
        let head = format!(
            "    <testcase name=\"{}\" classname=\"{}\" time=\"{time}\"",
            xml_escape(&c.name),
            c.classname
        );
        match &c.failure {
            None => match &c.out {
                None => {
                    let _ = writeln!(out, "{head}/>");
                }
                Some(text) => {
                    let _ = writeln!(out, "{head}>");
                    let _ = writeln!(out, "      <system-out>{}</system-out>", xml_escape(text));
                    let _ = writeln!(out, "    </testcase>");
                }
            },
            Some((message, body, kind)) => {
                let _ = writeln!(out, "{head}>");
                let _ = writeln!(
                    out,
                    "      <failure message=\"{}\" type=\"{kind}\">{}</failure>",
                    xml_escape(message),
                    xml_escape(body)
                );
                let _ = writeln!(out, "    </testcase>");
            }
        }
    }
    let _ = writeln!(out, "  </testsuite>");
}

/// The run's verdict ([`Summary::judged`]) as a JUnit XML document, one test case
/// per judged item, so CI's test view and the exit code always agree: a
/// `thresholds` suite (cases named `metric: expr`, failing with
/// `message="actual X"`, `actual no data` when the metric had none), then, when the
/// run has them, `events` (each expectation, each required event's action), `soak`
/// (`--soak`'s verdict) and `requests` (the rule that a run where every request
/// failed, or none completed, fails), and a `checks` suite with one case per check.
/// Checks fail the run only through a threshold on `checks` (as in k6), so their
/// cases pass and say in `system-out` how many times the check failed. Every `time`
/// is the run's duration in seconds.
pub fn junit_xml(summary: &Summary) -> String {
    use pado_analysis::verdict::JudgedKind;
    let time = format!("{:.3}", summary.duration_s.max(0.0));
    let thresholds: Vec<Case> = summary
        .thresholds
        .iter()
        .map(|t| {
            let name = format!("{}: {}", t.metric, t.expr);
            let actual = value_text(t.value);
            let over = match t.window_s {
                Some([a, b]) => format!(" over seconds {a:.0}–{b:.0} of the run"),
                None => String::new(),
            };
            Case {
                failure: (!t.ok).then(|| {
                    (
                        format!("actual {actual}"),
                        format!("threshold `{name}` failed: actual {actual}{over}"),
                        "threshold",
                    )
                }),
                name,
                classname: "pado.thresholds",
                out: None,
            }
        })
        .collect();
    let judged = |kind: JudgedKind, classname: &'static str, what: &'static str| -> Vec<Case> {
        summary
            .judged
            .items
            .iter()
            .filter(|j| j.kind == kind)
            .map(|j| Case {
                name: j.name.clone(),
                classname,
                failure: (!j.ok)
                    .then(|| (j.detail.clone(), format!("{}: {}", j.name, j.detail), what)),
                out: j.ok.then(|| j.detail.clone()),
            })
            .collect()
    };
    let events = judged(JudgedKind::Event, "pado.events", "event");
    let soak = judged(JudgedKind::Soak, "pado.soak", "soak");
    let requests = judged(JudgedKind::Requests, "pado.requests", "requests");
    let checks: Vec<Case> = summary
        .checks
        .iter()
        .map(|(name, c)| {
            let total = c.passes + c.fails;
            Case {
                name: name.clone(),
                classname: "pado.checks",
                failure: None,
                out: Some(format!(
                    "check `{name}`: passes {}, fails {} of {total} ({:.2}%); a failed check fails the run only through a threshold on `checks`",
                    c.passes,
                    c.fails,
                    c.fails as f64 * 100.0 / total.max(1) as f64
                )),
            }
        })
        .collect();
    let suites: [(&str, &Vec<Case>, bool); 5] = [
        ("thresholds", &thresholds, true),
        ("events", &events, false),
        ("soak", &soak, false),
        ("requests", &requests, false),
        ("checks", &checks, true),
    ];
    let all = || suites.iter().flat_map(|(_, c, _)| c.iter());
    let tests = all().count();
    let failures = all().filter(|c| c.failure.is_some()).count();
    let mut out = String::new();
    let _ = writeln!(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{time}\">",
        xml_escape(&format!("pado: {}", summary.name))
    );
    for (name, cases, always) in suites {
        if always || !cases.is_empty() {
            suite(&mut out, name, cases, &time, &summary.started_at);
        }
    }
    let _ = writeln!(out, "</testsuites>");
    out
}

#[cfg(test)]
pub(crate) mod xml_check {
    //! A minimal XML well-formedness checker for tests: elements nest and close,
    //! attributes are quoted and unique, entities are known, no raw `<` or `&` in text.

    /// An element: name, attributes, children, text.
    #[derive(Debug, Default)]
    pub(crate) struct Node {
        pub name: String,
        pub attrs: Vec<(String, String)>,
        pub children: Vec<Node>,
        pub text: String,
    }

    impl Node {
        pub(crate) fn attr(&self, k: &str) -> Option<&str> {
            self.attrs
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        }
    }

    fn unescape(s: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find(['&', '<']) {
            out.push_str(&rest[..i]);
            if rest[i..].starts_with('<') {
                return Err(format!("raw < in text: {s:?}"));
            }
            let end = rest[i..].find(';').ok_or("unterminated entity")? + i;
            let ent = &rest[i + 1..end];
            out.push(match ent {
                "amp" => '&',
                "lt" => '<',
                "gt" => '>',
                "quot" => '"',
                "apos" => '\'',
                _ => return Err(format!("unknown entity &{ent};")),
            });
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn is_name(s: &str) -> bool {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ':' | '.'))
    }

    /// Parse a document into its root element.
    pub(crate) fn parse(doc: &str) -> Result<Node, String> {
        let mut s = doc.trim_start();
        if s.starts_with("<?xml") {
            s = &s[s.find("?>").ok_or("bad declaration")? + 2..];
        }
        let mut stack: Vec<Node> = vec![Node::default()];
        loop {
            let Some(lt) = s.find('<') else {
                if !s.trim().is_empty() {
                    return Err("text after root".into());
                }
                break;
            };
            let text = unescape(&s[..lt])?;
            stack.last_mut().unwrap().text.push_str(&text);
            s = &s[lt..];
            let gt = s.find('>').ok_or("unterminated tag")?;
            let tag = &s[1..gt];
            s = &s[gt + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                let n = stack.pop().ok_or("close without open")?;
                if n.name != name.trim() || stack.is_empty() {
                    return Err(format!("</{name}> closes <{}>", n.name));
                }
                stack.last_mut().unwrap().children.push(n);
                continue;
            }
            let selfclose = tag.ends_with('/');
            let tag = tag.trim_end_matches('/');
            let (name, mut rest) = tag.split_at(tag.find(char::is_whitespace).unwrap_or(tag.len()));
            if !is_name(name) {
                return Err(format!("bad element name {name:?}"));
            }
            let mut node = Node {
                name: name.to_string(),
                ..Default::default()
            };
            loop {
                rest = rest.trim_start();
                if rest.is_empty() {
                    break;
                }
                let eq = rest.find('=').ok_or("attribute without =")?;
                let k = rest[..eq].trim();
                if !is_name(k) || node.attr(k).is_some() {
                    return Err(format!("bad or repeated attribute {k:?}"));
                }
                let v = rest[eq + 1..].trim_start();
                let v = v.strip_prefix('"').ok_or("unquoted attribute")?;
                let end = v.find('"').ok_or("unterminated attribute")?;
                node.attrs.push((k.to_string(), unescape(&v[..end])?));
                rest = &v[end + 1..];
            }
            if selfclose {
                stack.last_mut().unwrap().children.push(node);
            } else {
                stack.push(node);
            }
        }
        if stack.len() != 1 {
            return Err("unclosed element".into());
        }
        let mut doc = stack.pop().unwrap();
        if doc.children.len() != 1 {
            return Err("not exactly one root".into());
        }
        Ok(doc.children.pop().unwrap())
    }
}

#[cfg(test)]
mod tests {
    use super::xml_check::parse;
    use super::*;
    use crate::summary::CheckSummary;
    use pado_analysis::thresholds::ThresholdResult;

    fn summary() -> Summary {
        let mut s = Summary {
            name: "검색 \"엔진\" & <b>".into(),
            started_at: "2025-01-02T03:04:05Z".into(),
            duration_s: 12.5,
            ..Default::default()
        };
        s.thresholds = vec![
            ThresholdResult {
                expr: "p(95) < 200".into(),
                metric: "http_req_duration{step:<script>}".into(),
                ok: true,
                value: Some(150.25),
                window_s: None,
            },
            ThresholdResult {
                expr: "rate < 0.01".into(),
                metric: "http_req_failed".into(),
                ok: false,
                value: Some(0.05),
                window_s: None,
            },
            ThresholdResult {
                expr: "count > 0".into(),
                metric: "http_reqs{step:nope}".into(),
                ok: false,
                value: None,
                window_s: None,
            },
        ];
        s.checks.insert(
            "status is 200 & 'ok'".into(),
            CheckSummary {
                passes: 97,
                fails: 3,
            },
        );
        s.checks.insert(
            "body has \u{1}id".into(),
            CheckSummary {
                passes: 10,
                fails: 0,
            },
        );
        s
    }

    #[test]
    fn well_formed_with_right_counts() {
        let xml = junit_xml(&summary());
        let root = parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
        assert_eq!(root.name, "testsuites");
        assert_eq!(root.attr("tests"), Some("5"));
        // The two failed thresholds; a failed check alone fails nothing (k6's rule).
        assert_eq!(root.attr("failures"), Some("2"));
        assert_eq!(root.attr("name"), Some("pado: 검색 \"엔진\" & <b>"));
        assert_eq!(root.children.len(), 2);
        let th = &root.children[0];
        assert_eq!(th.attr("name"), Some("thresholds"));
        assert_eq!(th.attr("tests"), Some("3"));
        assert_eq!(th.attr("failures"), Some("2"));
        assert_eq!(th.attr("time"), Some("12.500"));
        assert_eq!(
            th.children[0].attr("name"),
            Some("http_req_duration{step:<script>}: p(95) < 200")
        );
        assert!(th.children[0].children.is_empty());
        let f = &th.children[1].children[0];
        assert_eq!(f.name, "failure");
        assert_eq!(f.attr("message"), Some("actual 0.05"));
        assert_eq!(
            th.children[2].children[0].attr("message"),
            Some("actual no data")
        );
        let ch = &root.children[1];
        assert_eq!(ch.attr("name"), Some("checks"));
        assert_eq!(ch.attr("tests"), Some("2"));
        assert_eq!(ch.attr("failures"), Some("0"));
        let failing = ch
            .children
            .iter()
            .find(|c| c.attr("name") == Some("status is 200 & 'ok'"))
            .unwrap();
        let f = &failing.children[0];
        assert_eq!(f.name, "system-out");
        assert!(
            f.text.contains("passes 97, fails 3 of 100 (3.00%)"),
            "{}",
            f.text
        );
        // The control character was replaced, not written raw.
        assert!(!xml.contains('\u{1}'));
    }

    #[test]
    fn every_judged_item_is_a_case_and_failures_match_the_verdict() {
        use pado_analysis::verdict::{Judged, JudgedKind, Verdict};
        let mut s = summary();
        s.thresholds.truncate(1);
        let item = |kind, name: &str, ok| Judged {
            kind,
            name: name.into(),
            ok,
            detail: format!("{name} detail"),
        };
        s.judged = Verdict {
            passed: false,
            exit_code: 99,
            items: vec![
                item(
                    JudgedKind::Threshold,
                    "http_req_duration{step:<script>}: p(95) < 200",
                    true,
                ),
                item(
                    JudgedKind::Event,
                    "event 배포: during http_req_failed: rate < 0.05",
                    false,
                ),
                item(
                    JudgedKind::Event,
                    "event 배포: recovers p(95) < 200 within 30s",
                    true,
                ),
                item(
                    JudgedKind::Requests,
                    "requests: some completed, not all failed",
                    true,
                ),
            ],
        };
        let xml = junit_xml(&s);
        let root = parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
        assert_eq!(root.attr("failures"), Some("1"), "{xml}");
        let names: Vec<_> = root
            .children
            .iter()
            .filter_map(|c| c.attr("name"))
            .collect();
        assert_eq!(names, ["thresholds", "events", "requests", "checks"]);
        let ev = &root.children[1];
        assert_eq!(
            (ev.attr("tests"), ev.attr("failures")),
            (Some("2"), Some("1"))
        );
        let f = &ev.children[0].children[0];
        assert_eq!(f.name, "failure");
        assert!(f.attr("message").unwrap().contains("detail"));
        assert_eq!(
            ev.children[0].attr("name"),
            Some("event 배포: during http_req_failed: rate < 0.05")
        );
    }

    #[test]
    fn empty_summary_is_well_formed() {
        let xml = junit_xml(&Summary::default());
        let root = parse(&xml).unwrap();
        assert_eq!(root.attr("tests"), Some("0"));
        assert_eq!(root.children.len(), 2);
        assert!(root.children.iter().all(|s| s.attr("tests") == Some("0")));
    }

    #[test]
    fn checker_rejects_bad_xml() {
        assert!(parse("<a><b></a>").is_err());
        assert!(parse("<a x=\"1\" x=\"2\"/>").is_err());
        assert!(parse("<a>1 < 2</a>").is_err());
        assert!(parse("<a>&nbsp;</a>").is_err());
        assert!(parse("<a>ok &amp; fine</a>").is_ok());
    }
}
