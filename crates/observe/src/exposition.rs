//! Prometheus text exposition (format 0.0.4) and OpenMetrics 1.0 text, read line
//! by line.
//!
//! Written here rather than taken from a crate because a load test must keep what
//! it can: the parsers we looked at reject a whole exposition on one malformed
//! line, while a scrape of a misbehaving exporter during a load test should keep
//! every good sample and count the bad lines. Both formats share the sample line
//! grammar (`name{label="value",...} value [timestamp] [# exemplar]`); the
//! OpenMetrics differences that matter here are `# EOF`, `# UNIT`, the `_total` /
//! `_created` / `_gcount` suffixes of a family's samples and exemplars, all handled.
//! Quoted metric names (`{"my.metric",label="v"}`, Prometheus 3) are accepted too.
//!
//! What a line may look like is what both of Prometheus' own text parsers (the
//! server's `textparse` and `expfmt` in prometheus/common) accept: blanks and tabs
//! before a line (an indented `# TYPE` still types its family), between a name and
//! its `{`, anywhere between label items, and none needed between `}` and the value.
//! The tests hold the parser to the inputs of those parsers' own test tables.

use std::collections::HashMap;

use pado_metrics::{MetricType, ScrapedSample};
use thiserror::Error;

/// Why a scraped body could not be read as an exposition at all (as opposed to a
/// bad line, which is counted and skipped). Each says what the endpoint sent and
/// what to change, since the user sees it as the scrape's failure detail.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum BodyError {
    /// The body is gzip data although the scrape asked for no compression.
    #[error(
        "the answer is gzip-compressed although pado asked for no compression \
         (it sends no Accept-Encoding); configure the endpoint to answer plain \
         text when the request does not ask for gzip"
    )]
    Compressed,
    /// The body starts with a Unicode byte-order mark, which neither the
    /// Prometheus text format nor OpenMetrics allows (Prometheus fails such a
    /// scrape too).
    #[error(
        "the answer starts with a byte-order mark ({0}), which the Prometheus \
         text format does not allow (Prometheus itself rejects it); make the \
         endpoint write UTF-8 without a BOM"
    )]
    ByteOrderMark(&'static str),
    /// Lines were there but none was a sample (an HTML page, a JSON document).
    #[error("no samples in the answer ({bad_lines} unreadable lines), {first_bad}")]
    NoSamples {
        /// Lines that were neither comments nor samples.
        bad_lines: u32,
        /// The first of them, numbered, with why.
        first_bad: String,
    },
}

/// Read a scraped body: refuse what is not an exposition at all (compressed
/// bytes, a byte-order mark, a page of which no line is a sample) with a message
/// saying so, else parse it. An exposition with no lines but comments, an empty
/// body or `# EOF` alone is a good scrape with no samples: an exporter with
/// nothing to report yet is up.
pub fn read_body(body: &[u8]) -> Result<Exposition, BodyError> {
    if body.starts_with(&[0x1f, 0x8b]) {
        return Err(BodyError::Compressed);
    }
    for (bom, name) in [
        (&[0xef, 0xbb, 0xbf][..], "UTF-8 BOM, bytes EF BB BF"),
        (&[0xfe, 0xff][..], "UTF-16 big-endian BOM, bytes FE FF"),
        (&[0xff, 0xfe][..], "UTF-16 little-endian BOM, bytes FF FE"),
    ] {
        if body.starts_with(bom) {
            return Err(BodyError::ByteOrderMark(name));
        }
    }
    let parsed = parse(&String::from_utf8_lossy(body));
    if parsed.samples.is_empty() && parsed.bad_lines > 0 {
        return Err(BodyError::NoSamples {
            bad_lines: parsed.bad_lines,
            first_bad: parsed.first_bad.unwrap_or_default(),
        });
    }
    Ok(parsed)
}

/// A parsed exposition.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exposition {
    /// Samples in file order.
    pub samples: Vec<ScrapedSample>,
    /// Lines that were neither comments nor valid samples.
    pub bad_lines: u32,
    /// The first bad line (1-based number and why), for the scrape's detail.
    pub first_bad: Option<String>,
    /// Whether `# EOF` was seen (an OpenMetrics exposition).
    pub openmetrics: bool,
}

/// Sample-name suffixes a family's samples may carry, with the family types they
/// belong to.
const SUFFIXES: [(&str, &[MetricType]); 8] = [
    ("_total", &[MetricType::Counter]),
    (
        "_created",
        &[
            MetricType::Counter,
            MetricType::Histogram,
            MetricType::Summary,
        ],
    ),
    (
        "_bucket",
        &[MetricType::Histogram, MetricType::Gaugehistogram],
    ),
    ("_count", &[MetricType::Histogram, MetricType::Summary]),
    ("_sum", &[MetricType::Histogram, MetricType::Summary]),
    ("_gcount", &[MetricType::Gaugehistogram]),
    ("_gsum", &[MetricType::Gaugehistogram]),
    ("_info", &[MetricType::Info]),
];

/// Parse an exposition. Never fails: bad lines are counted and skipped.
pub fn parse(text: &str) -> Exposition {
    let mut types: HashMap<&str, MetricType> = HashMap::new();
    let mut out = Exposition::default();
    for (n, raw) in text.lines().enumerate() {
        // Both Prometheus parsers skip blanks and tabs before any line.
        let line = raw.trim_end_matches('\r').trim_start_matches(BLANK);
        if line.trim().is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let rest = rest.trim_start_matches(BLANK);
            if rest.trim_end() == "EOF" {
                out.openmetrics = true;
                break;
            }
            if let Some(decl) = rest.strip_prefix("TYPE") {
                if decl.starts_with(BLANK) {
                    let mut it = decl.split_whitespace();
                    if let (Some(name), Some(kind)) = (it.next(), it.next()) {
                        types.insert(name.trim_matches('"'), MetricType::from_word(kind));
                    }
                }
            }
            continue;
        }
        match parse_sample(line) {
            Ok((name, labels, value)) => {
                let kind = family_type(&types, &name);
                out.samples.push(ScrapedSample {
                    name,
                    labels,
                    value,
                    kind,
                });
            }
            Err(why) => {
                out.bad_lines += 1;
                if out.first_bad.is_none() {
                    let shown: String = line.chars().take(80).collect();
                    out.first_bad = Some(format!("line {}: {why}: `{shown}`", n + 1));
                }
            }
        }
    }
    out
}

fn family_type(types: &HashMap<&str, MetricType>, name: &str) -> MetricType {
    if let Some(t) = types.get(name) {
        return *t;
    }
    for (suffix, allowed) in SUFFIXES {
        if let Some(base) = name.strip_suffix(suffix) {
            if let Some(t) = types.get(base) {
                if allowed.contains(t) {
                    return *t;
                }
            }
        }
    }
    MetricType::Untyped
}

/// The whitespace of the text formats: a blank or a tab.
const BLANK: [char; 2] = [' ', '\t'];

fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b':'
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b':'
}

type Parsed = (String, Vec<(String, String)>, f64);

fn parse_sample(line: &str) -> Result<Parsed, &'static str> {
    let b = line.as_bytes();
    let mut i = 0;
    let mut name = String::new();
    if b.first().is_some_and(|c| is_name_start(*c)) {
        while i < b.len() && is_name_char(b[i]) {
            i += 1;
        }
        name.push_str(&line[..i]);
    } else if b.first() != Some(&b'{') {
        return Err("not a metric name");
    }
    let mut labels = Vec::new();
    // Blanks may stand between a name and its `{`.
    let after_name = i;
    if b.get(skip_spaces(b, i)) == Some(&b'{') {
        i = skip_spaces(b, i) + 1;
        loop {
            i = skip_spaces(b, i);
            match b.get(i) {
                None => return Err("unterminated labels"),
                Some(b'}') => {
                    i += 1;
                    break;
                }
                Some(b'"') => {
                    // A quoted name: the metric name when it is the first item
                    // without `=`, otherwise a quoted label name.
                    let (s, next) = quoted(line, i)?;
                    i = skip_spaces(b, next);
                    if b.get(i) == Some(&b'=') {
                        i += 1;
                        let (v, next) = quoted(line, skip_spaces(b, i))?;
                        labels.push((s, v));
                        i = next;
                    } else if name.is_empty() {
                        name = s;
                    } else {
                        return Err("label without value");
                    }
                }
                Some(c) if is_name_start(*c) => {
                    let start = i;
                    while i < b.len() && is_name_char(b[i]) {
                        i += 1;
                    }
                    let lname = line[start..i].to_string();
                    i = skip_spaces(b, i);
                    if b.get(i) != Some(&b'=') {
                        return Err("label without `=`");
                    }
                    let (v, next) = quoted(line, skip_spaces(b, i + 1))?;
                    labels.push((lname, v));
                    i = next;
                }
                Some(_) => return Err("bad label"),
            }
            i = skip_spaces(b, i);
            match b.get(i) {
                Some(b',') => i += 1,
                Some(b'}') => {}
                _ => return Err("expected `,` or `}` after a label"),
            }
        }
    }
    if name.is_empty() {
        return Err("no metric name");
    }
    let rest = &line[i..];
    // After `}` the value may follow at once; after a bare name a blank must
    // (anything else is a character no name may hold).
    if i == after_name && !rest.starts_with(BLANK) {
        return Err("no value");
    }
    // Value, then an optional timestamp, then an optional `# exemplar`.
    let rest = rest.split(" # ").next().unwrap_or("");
    let mut fields = rest.split_whitespace();
    let v = fields.next().ok_or("no value")?;
    let value = parse_value(v).ok_or("bad value")?;
    if let Some(ts) = fields.next() {
        if ts.parse::<f64>().is_err() {
            return Err("bad timestamp");
        }
    }
    if fields.next().is_some() {
        return Err("trailing text");
    }
    Ok((name, labels, value))
}

fn skip_spaces(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| is_blank(*c)) {
        i += 1;
    }
    i
}

/// A double-quoted string starting at `i`, unescaped, and the index after it.
fn quoted(line: &str, i: usize) -> Result<(String, usize), &'static str> {
    let b = line.as_bytes();
    if b.get(i) != Some(&b'"') {
        return Err("label value not quoted");
    }
    let mut out = String::new();
    let mut j = i + 1;
    let mut run = j;
    while j < b.len() {
        match b[j] {
            b'"' => {
                out.push_str(&line[run..j]);
                return Ok((out, j + 1));
            }
            b'\\' => {
                out.push_str(&line[run..j]);
                match b.get(j + 1) {
                    Some(b'n') => out.push('\n'),
                    Some(b'"') => out.push('"'),
                    Some(b'\\') => out.push('\\'),
                    Some(_) => {
                        // Unknown escapes are kept as written (Prometheus does).
                        out.push('\\');
                        j += 1;
                        run = j;
                        continue;
                    }
                    None => return Err("unterminated label value"),
                }
                j += 2;
                run = j;
            }
            _ => j += 1,
        }
    }
    Err("unterminated label value")
}

fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ => s.parse::<f64>().ok().filter(|v| v.is_finite()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> ScrapedSample {
        let e = parse(text);
        assert_eq!(e.bad_lines, 0, "{:?}", e.first_bad);
        assert_eq!(e.samples.len(), 1, "{e:?}");
        e.samples.into_iter().next().unwrap()
    }

    #[test]
    fn prometheus_text_with_types_labels_escapes_and_timestamps() {
        let text = "# HELP http_requests_total The total.\n\
            # TYPE http_requests_total counter\n\
            http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n\
            http_requests_total{method=\"post\",code=\"400\"}    3 1395066363000\n\
            \n\
            # Escaping in label values:\n\
            msdos_file_access_time_seconds{path=\"C:\\\\DIR\\\\FILE.TXT\",error=\"Cannot find file:\\n\\\"FILE.TXT\\\"\"} 1.458255915e9\n\
            metric_without_timestamp_and_labels 12.47\n\
            something_weird{problem=\"division by zero\"} +Inf -3982045\n\
            # TYPE rpc_duration_seconds summary\n\
            rpc_duration_seconds{quantile=\"0.99\"} 76656\n\
            rpc_duration_seconds_sum 1.7560473e+07\n\
            rpc_duration_seconds_count 2693\n\
            # TYPE http_request_duration_seconds histogram\n\
            http_request_duration_seconds_bucket{le=\"+Inf\"} 144320\n";
        let e = parse(text);
        assert_eq!(e.bad_lines, 0, "{:?}", e.first_bad);
        assert_eq!(e.samples.len(), 9);
        assert_eq!(e.samples[0].kind, MetricType::Counter);
        assert_eq!(e.samples[0].value, 1027.0);
        assert_eq!(
            e.samples[1].labels,
            vec![
                ("method".into(), "post".into()),
                ("code".into(), "400".into())
            ]
        );
        assert_eq!(e.samples[2].labels[0].1, "C:\\DIR\\FILE.TXT");
        assert_eq!(e.samples[2].labels[1].1, "Cannot find file:\n\"FILE.TXT\"");
        assert_eq!(e.samples[3].kind, MetricType::Untyped);
        assert!(e.samples[4].value.is_infinite());
        assert_eq!(e.samples[5].kind, MetricType::Summary);
        assert_eq!(e.samples[6].kind, MetricType::Summary);
        assert!(e.samples[6].kind.is_monotonic_sample(&e.samples[6].name));
        assert!(!e.samples[5].kind.is_monotonic_sample(&e.samples[5].name));
        assert_eq!(e.samples[8].kind, MetricType::Histogram);
        assert!(!e.openmetrics);
    }

    #[test]
    fn openmetrics_suffixes_exemplars_and_eof() {
        let text = "# TYPE acme_http_router_request_seconds summary\n\
            # UNIT acme_http_router_request_seconds seconds\n\
            acme_http_router_request_seconds_sum{path=\"/api/v1\",method=\"GET\"} 9036.32\n\
            acme_http_router_request_seconds_count{path=\"/api/v1\",method=\"GET\"} 807283.0\n\
            acme_http_router_request_seconds_created{path=\"/api/v1\",method=\"GET\"} 1605281325.0\n\
            # TYPE go_goroutines gauge\n\
            go_goroutines 69\n\
            # TYPE foo counter\n\
            foo_total 17.0 1520879607.789 # {id=\"counter-test\"} 5\n\
            foo_created 1520872607.123\n\
            # TYPE hist histogram\n\
            hist_bucket{le=\"0.01\"} 0 # {trace_id=\"KOO5S4vxi0o\"} 0.67\n\
            # TYPE build info\n\
            build_info{version=\"1.2\"} 1\n\
            # EOF\n\
            after_eof 1\n";
        let e = parse(text);
        assert_eq!(e.bad_lines, 0, "{:?}", e.first_bad);
        assert!(e.openmetrics);
        let names: Vec<_> = e.samples.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "acme_http_router_request_seconds_sum",
                "acme_http_router_request_seconds_count",
                "acme_http_router_request_seconds_created",
                "go_goroutines",
                "foo_total",
                "foo_created",
                "hist_bucket",
                "build_info"
            ]
        );
        assert_eq!(e.samples[4].kind, MetricType::Counter);
        assert_eq!(e.samples[4].value, 17.0);
        assert!(e.samples[4].kind.is_monotonic_sample("foo_total"));
        assert!(!e.samples[5].kind.is_monotonic_sample("foo_created"));
        assert_eq!(e.samples[6].kind, MetricType::Histogram);
        assert_eq!(e.samples[7].kind, MetricType::Info);
    }

    #[test]
    fn bad_lines_are_counted_and_the_rest_kept() {
        let text = "good 1\n\
            bad{x=\"1\" 2\n\
            also bad\n\
            7seven 1\n\
            nolabelvalue{x=} 1\n\
            good2{a=\"b\",} 2\n";
        let e = parse(text);
        assert_eq!(e.samples.len(), 2);
        assert_eq!(e.bad_lines, 4);
        assert!(e.first_bad.as_deref().unwrap().starts_with("line 2:"));
        assert_eq!(e.samples[1].labels, vec![("a".into(), "b".into())]);
    }

    #[test]
    fn utf8_label_values_and_quoted_names() {
        let s = one("search_total{keyword=\"검색 엔진\"} 3\n");
        assert_eq!(s.labels[0].1, "검색 엔진");
        let s = one("{\"http.server.duration\", \"service.name\"=\"파도\"} 0.5\n");
        assert_eq!(s.name, "http.server.duration");
        assert_eq!(s.labels, vec![("service.name".into(), "파도".into())]);
    }

    #[test]
    fn special_values() {
        assert!(one("x NaN\n").value.is_nan());
        assert_eq!(one("x -Inf\n").value, f64::NEG_INFINITY);
        assert_eq!(one("x 1e3\n").value, 1000.0);
        assert_eq!(one("x\t-0.5\n").value, -0.5);
        assert_eq!(parse("x abc\n").bad_lines, 1);
        assert_eq!(parse("x\n").bad_lines, 1);
        assert_eq!(parse("x 1 2 3\n").bad_lines, 1);
    }
}
