//! The exposition parser held to Prometheus' own parsers' test tables: the inputs of
//! `model/textparse/promparse_test.go` (the Prometheus server's text parser) and of
//! `expfmt/text_parse_test.go` (prometheus/common), with the verdict both of them
//! give. A line both accept must give the same name, labels and value here; a line
//! both reject must be counted as bad (and the rest of the page kept).

use pado_metrics::MetricType;
use pado_observe::exposition::{parse, read_body, BodyError};

/// `(input line, name, labels in order, value)`; the value's bits are compared, so
/// NaN must be NaN.
type Accepted = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    f64,
);

const ACCEPTED: &[Accepted] = &[
    // promparse_test.go, TestPromParse.
    (
        "go_gc_duration_seconds{quantile=\"0\"} 4.9351e-05",
        "go_gc_duration_seconds",
        &[("quantile", "0")],
        4.9351e-05,
    ),
    (
        "go_gc_duration_seconds{quantile=\"0.25\",} 7.424100000000001e-05",
        "go_gc_duration_seconds",
        &[("quantile", "0.25")],
        7.424100000000001e-05,
    ),
    (
        "go_gc_duration_seconds{quantile=\"0.8\", a=\"b\"} 8.3835e-05",
        "go_gc_duration_seconds",
        &[("quantile", "0.8"), ("a", "b")],
        8.3835e-05,
    ),
    (
        "go_gc_duration_seconds{ quantile=\"0.9\", a=\"b\"} 8.3835e-05",
        "go_gc_duration_seconds",
        &[("quantile", "0.9"), ("a", "b")],
        8.3835e-05,
    ),
    (
        "go_gc_duration_seconds{ quantile=\"1.0\", a=\"b\" } 8.3835e-05",
        "go_gc_duration_seconds",
        &[("quantile", "1.0"), ("a", "b")],
        8.3835e-05,
    ),
    // Whitespace between the name and `{`.
    (
        "go_gc_duration_seconds { quantile=\"1.0\", a=\"b\" } 8.3835e-05",
        "go_gc_duration_seconds",
        &[("quantile", "1.0"), ("a", "b")],
        8.3835e-05,
    ),
    (
        "go_gc_duration_seconds { quantile= \"1.0\", a= \"b\", } 8.3835e-05",
        "go_gc_duration_seconds",
        &[("quantile", "1.0"), ("a", "b")],
        8.3835e-05,
    ),
    (
        "go_gc_duration_seconds { quantile = \"1.0\", a = \"b\" } 8.3835e-05",
        "go_gc_duration_seconds",
        &[("quantile", "1.0"), ("a", "b")],
        8.3835e-05,
    ),
    (
        "go_gc_duration_seconds_count 99",
        "go_gc_duration_seconds_count",
        &[],
        99.0,
    ),
    (
        "some:aggregate:rate5m{a_b=\"c\"}\t1",
        "some:aggregate:rate5m",
        &[("a_b", "c")],
        1.0,
    ),
    ("go_goroutines 33  \t123123", "go_goroutines", &[], 33.0),
    (
        "_metric_starting_with_underscore 1",
        "_metric_starting_with_underscore",
        &[],
        1.0,
    ),
    (
        "testmetric{_label_starting_with_underscore=\"foo\"} 1",
        "testmetric",
        &[("_label_starting_with_underscore", "foo")],
        1.0,
    ),
    (
        "testmetric{label=\"\\\"bar\\\"\"} 1",
        "testmetric",
        &[("label", "\"bar\"")],
        1.0,
    ),
    // TestUTF8PromParse: quoted names.
    (
        "{\"go.gc_duration_seconds\", quantile=\"0.9\", a=\"b\"} 8.3835e-05",
        "go.gc_duration_seconds",
        &[("quantile", "0.9"), ("a", "b")],
        8.3835e-05,
    ),
    (
        "{ \"go.gc_duration_seconds\", quantile = \"1.0\", a = \"b\" } 8.3835e-05",
        "go.gc_duration_seconds",
        &[("quantile", "1.0"), ("a", "b")],
        8.3835e-05,
    ),
    // text_parse_test.go, testTextParse.
    ("minimal_metric 1.234", "minimal_metric", &[], 1.234),
    ("another_metric -3e3 103948", "another_metric", &[], -3e3),
    ("no_labels{} 3", "no_labels", &[], 3.0),
    (
        "name{labelname=\"val1\",basename=\"basevalue\"} NaN",
        "name",
        &[("labelname", "val1"), ("basename", "basevalue")],
        f64::NAN,
    ),
    (
        "name {labelname=\"val2\",basename=\"base\\\"v\\\\al\\nue\"} 0.23 1234567890",
        "name",
        &[("labelname", "val2"), ("basename", "base\"v\\al\nue")],
        0.23,
    ),
    // A tab inside the labels.
    (
        "name2{labelname=\"val2\"\t,basename   =   \"basevalue2\"\t\t} +Inf 54321",
        "name2",
        &[("labelname", "val2"), ("basename", "basevalue2")],
        f64::INFINITY,
    ),
    // The value right after `}`.
    (
        "name2{ labelname = \"val1\" , }-Inf",
        "name2",
        &[("labelname", "val1")],
        f64::NEG_INFINITY,
    ),
    // Leading whitespace.
    (
        "  my_summary{n1=\"val1\",n2=\"val2\",quantile=\"-12.34\",} NaN",
        "my_summary",
        &[("n1", "val1"), ("n2", "val2"), ("quantile", "-12.34")],
        f64::NAN,
    ),
    (
        "my_summary_sum{n1=\"val2\"} 08 15",
        "my_summary_sum",
        &[("n1", "val2")],
        8.0,
    ),
    (
        "another_summary{n1=\"val1\",n2=\"val2\",quantile=\".3\"} -1.2",
        "another_summary",
        &[("n1", "val1"), ("n2", "val2"), ("quantile", ".3")],
        -1.2,
    ),
    (
        "request_duration_microseconds_bucket{le=\"+Inf\"} 2693",
        "request_duration_microseconds_bucket",
        &[("le", "+Inf")],
        2693.0,
    ),
    (
        "request_duration_microseconds_sum 1.7560473e+06",
        "request_duration_microseconds_sum",
        &[],
        1.7560473e+06,
    ),
    (
        "{\"my.noncompliant.metric\",\"label.name\"=\"value\"} 1",
        "my.noncompliant.metric",
        &[("label.name", "value")],
        1.0,
    ),
    (
        "\t\t\t\t{\"name.with.dots\"} 0.23 1234567890",
        "name.with.dots",
        &[],
        0.23,
    ),
    (
        "{\"gauge.name\",\"name.1\"=\"Björn\",\"name*2\"=\"佖佥\"} 3.14e+42",
        "gauge.name",
        &[("name.1", "Björn"), ("name*2", "佖佥")],
        3.14e+42,
    ),
    (
        "{labelname=\"value\", \"my.noncompliant.metric\"} 1",
        "my.noncompliant.metric",
        &[("labelname", "value")],
        1.0,
    ),
    // Hangul label values round-trip (pado's own users).
    (
        "  http_requests_total {uri=\"/검색\",\tstatus=\"200\"}7",
        "http_requests_total",
        &[("uri", "/검색"), ("status", "200")],
        7.0,
    ),
];

/// Lines both parsers reject (TestPromParseErrors, testTextParseError).
const REJECTED: &[&str] = &[
    "a",
    "a{b='c'} 1",
    "a{b=",
    "a true",
    "something_weird{problem=\"",
    "empty_label_name{=\"\"} 0",
    "foo 1_2",
    "foo 0x1p-3",
    "foo 0x1P-3",
    "foo 0B1",
    "foo 0O1",
    "foo 0X1",
    "foo 0x1",
    "foo 0b1",
    "foo 0o1",
    "foo 0 1_2",
    "{a=\"ok\"} 1",
    "a\u{0}{b=\"ddd\"} 1",
    "a{b\u{0}=\"hiih\"}\t1",
    "a 0 1\u{0}",
    "metric{@=\"bla\"} 3.14",
    "metric{label+=\"bla\"} 3.14",
    "metric{label=bla} 3.14",
    "metric{label=\"bla\"+} 3.14",
    "metric{label=\"bla\"} 3.14 2 3",
    "metric{label=\"bla\"} blubb",
    "@invalidmetric{label=\"bla\"} 3.14 2",
    "{label=\"bla\"} 3.14 2",
];

#[test]
fn lines_both_prometheus_parsers_accept_are_read_as_they_read_them() {
    let mut failures = Vec::new();
    for (line, name, labels, value) in ACCEPTED {
        let e = parse(&format!("{line}\n"));
        let want: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        match e.samples.as_slice() {
            [s] if e.bad_lines == 0
                && s.name == *name
                && s.labels == want
                && s.value.to_bits() == value.to_bits() => {}
            _ => failures.push(format!("{line:?}: {e:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn lines_both_prometheus_parsers_reject_are_counted_and_the_page_kept() {
    for line in REJECTED {
        let e = parse(&format!("before 1\n{line}\nafter 2\n"));
        assert_eq!(e.bad_lines, 1, "{line:?} was accepted: {e:?}");
        assert!(
            e.first_bad.as_deref().unwrap().starts_with("line 2:"),
            "{line:?}: {e:?}"
        );
        let names: Vec<&str> = e.samples.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["before", "after"], "{line:?}");
    }
}

/// testTextParse #2 and TestPromParse: `# TYPE` indented, or with blanks and tabs
/// between `#`, `TYPE`, the name and the type, still types its family.
#[test]
fn an_indented_type_line_types_its_family() {
    let text = "# HELP name two-line\\n doc  str\\\\ing\n\
        \n \
        # HELP  name2  \tdoc str\"ing 2\n  \
        #    TYPE    name2 gauge\n\
        name2{labelname=\"val2\"} +Inf 54321\n\
        # \tTYPE go_gc_duration_seconds summary\n\
        go_gc_duration_seconds_count 99\n\
        \t# TYPE\tjobs_total counter\n\
        jobs_total 5\n";
    let e = parse(text);
    assert_eq!(e.bad_lines, 0, "{:?}", e.first_bad);
    let kinds: Vec<(&str, MetricType)> = e
        .samples
        .iter()
        .map(|s| (s.name.as_str(), s.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("name2", MetricType::Gauge),
            ("go_gc_duration_seconds_count", MetricType::Summary),
            ("jobs_total", MetricType::Counter),
        ]
    );
    // A word that only starts with TYPE is a comment, not a declaration.
    let e = parse("# TYPEX jobs counter\njobs 1\n");
    assert_eq!(e.samples[0].kind, MetricType::Untyped);
}

/// An exporter with nothing to report yet is up: an empty page, blank lines
/// (testTextParse #0), comments only, or OpenMetrics' `# EOF` alone.
#[test]
fn an_exposition_without_samples_is_a_good_scrape() {
    for body in [
        "",
        "\n\n",
        "# EOF\n",
        "# EOF",
        "# HELP x nothing yet\n# TYPE x gauge\n",
    ] {
        let e = read_body(body.as_bytes()).unwrap_or_else(|err| panic!("{body:?} refused: {err}"));
        assert!(e.samples.is_empty() && e.bad_lines == 0, "{body:?}: {e:?}");
    }
    assert!(read_body(b"# EOF\n").unwrap().openmetrics);
    // A page of which no line is a sample is not an exposition.
    let err = read_body(b"<html>\n<body>Login</body>\n").unwrap_err();
    assert!(
        matches!(err, BodyError::NoSamples { bad_lines: 2, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("line 1:"), "{err}");
}

#[test]
fn a_gzip_body_not_asked_for_says_so() {
    // The gzip header of `x 1\n`, as an endpoint compressing regardless would send.
    let gz = [
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xab, 0x50, 0x30, 0xe4, 0x02,
        0x00,
    ];
    let err = read_body(&gz).unwrap_err();
    assert_eq!(err, BodyError::Compressed);
    let msg = err.to_string();
    assert!(msg.contains("gzip-compressed"), "{msg}");
    assert!(msg.contains("Accept-Encoding"), "{msg}");
}

#[test]
fn a_byte_order_mark_says_so() {
    let body = "\u{feff}# TYPE jobs_total counter\njobs_total 5\n";
    let err = read_body(body.as_bytes()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("byte-order mark"), "{msg}");
    assert!(msg.contains("EF BB BF"), "{msg}");
    assert!(msg.contains("without a BOM"), "{msg}");
    let err = read_body(&[0xff, 0xfe, b'x', 0, b' ', 0, b'1', 0]).unwrap_err();
    assert!(err.to_string().contains("UTF-16"), "{err}");
    // The same page without the mark is read whole.
    let e = read_body(&body.as_bytes()[3..]).unwrap();
    assert_eq!(e.samples[0].kind, MetricType::Counter);
}
