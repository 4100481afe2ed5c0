//! The scraper's Prometheus / OpenMetrics parser fed any bytes as a scrape's page.

use pado_metrics::ScrapeOutcome;
use pado_results::ObserveWriter;

use super::with_scratch;

pub(crate) const EXPOSITION_DICT: &[&[u8]] = &[
    b"# TYPE ",
    b"# HELP ",
    b"# UNIT ",
    b"# EOF",
    b" counter\n",
    b" gauge\n",
    b" histogram\n",
    b" summary\n",
    b" gaugehistogram\n",
    b" info\n",
    b"_total",
    b"_bucket",
    b"_created",
    b"_gcount",
    b"{le=\"+Inf\"}",
    b"{\"quoted.name\",a=\"b\"}",
    b"=\"",
    b"\\n",
    b"\\\"",
    b" # {trace_id=\"x\"} 1 2",
];

// ---- exposition --------------------------------------------------------------------

/// The scraper's parser, then what the scraper does with its samples: written to
/// `observe.jsonl` (twice, the second only changes) and read back as reports do.
/// What pado writes, pado must read.
pub fn exposition(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let e = pado_observe::exposition::parse(&text);
    assert!(
        e.samples.len() + e.bad_lines as usize <= text.lines().count(),
        "more samples and bad lines than lines"
    );
    if let Some(first) = &e.first_bad {
        assert!(first.len() < 1024, "first_bad detail is not bounded");
    }
    if e.samples.is_empty() {
        return;
    }
    with_scratch(|dir| {
        let mut w = ObserveWriter::create(dir).expect("create observe.jsonl");
        w.endpoint("app", "http://127.0.0.1/metrics", 1.0)
            .expect("write endpoint");
        for t in [0.0, 1.0] {
            w.scrape(
                "app",
                ScrapeOutcome {
                    t,
                    ms: 1.0,
                    error: None,
                    samples: e.samples.clone(),
                    bad_lines: e.bad_lines,
                },
            )
            .expect("write scrape");
        }
        w.flush().expect("flush observe.jsonl");
        drop(w);
        let obs = pado_results::read_observations(dir, &|_| true)
            .unwrap_or_else(|err| panic!("observe.jsonl written by pado is unreadable: {err}"));
        assert_eq!(obs.endpoints.len(), 1);
        assert_eq!(obs.endpoints[0].scrapes, 2);
    });
}
