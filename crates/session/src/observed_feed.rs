//! The target's metrics as each scrape reads them, for a live view (the
//! dashboard's charts of the target beside the load): the scraper's sink is
//! teed, so `observe.jsonl` is written exactly as before and each subscriber
//! gets a copy of the scrape's values through a bounded channel (a slow one
//! loses scrapes, never holds the scraper up). Off the load's path entirely: the
//! scraper runs on a thread of its own. A distributed run's coordinator hands the
//! scrapes it follows from the scraping generator to a feed of its own
//! ([`crate::DistributedRun::scrape`]), to the same effect.

use std::sync::{Arc, Mutex};

use crossbeam_channel::{Receiver, Sender};
use pado_metrics::{ScrapeOutcome, ScrapeSink};

use pado_base::lock;

/// The most series one scrape hands a live view: node_exporter exposes about
/// 1,000; a chart of more than a few hundred is not read by anyone.
pub const MAX_LIVE_SERIES: usize = 200;

/// The most samples of one scrape kept for the live bottleneck hint: only the
/// families the bottleneck table reads ([`pado_analysis::attribution::wanted`]),
/// which the chart cap above would cut (a node_exporter's per-CPU counters come
/// after hundreds of others).
pub const MAX_ANALYSED_SERIES: usize = 5000;

/// One scrape's values, as a live view gets them.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedScrape {
    /// When it was sent, seconds since second 0.
    pub t: f64,
    /// The endpoint's name (`app`, `node`...).
    pub endpoint: String,
    /// `name` or `name{label="v",…}` and its value as read (counters are
    /// cumulative), at most [`MAX_LIVE_SERIES`].
    pub values: Vec<(String, f64)>,
    /// From sending the request to the whole answer, ms: with `t`, when the
    /// values were read (`pado_results::observed::answered_at`), as
    /// `observe.jsonl` places them.
    pub ms: f64,
    /// The samples the bottleneck table reads, with their labels and types, at
    /// most [`MAX_ANALYSED_SERIES`]: what the live hint is computed from.
    pub analysed: Vec<pado_metrics::ScrapedSample>,
}

/// The subscribers to a run's scrapes.
#[derive(Clone, Default)]
pub(crate) struct ObservedFeed {
    subs: Arc<Mutex<Vec<Sender<Arc<ObservedScrape>>>>>,
}

impl ObservedFeed {
    /// A new subscription holding up to `capacity` scrapes.
    pub(crate) fn subscribe(&self, capacity: usize) -> Receiver<Arc<ObservedScrape>> {
        let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
        lock(&self.subs).push(tx);
        rx
    }

    /// Hands `s` (a scrape of `endpoint`) to every subscriber that has room; a
    /// failed scrape has nothing to show and goes to none.
    pub(crate) fn send(&self, endpoint: &str, s: &ScrapeOutcome) {
        let mut subs = lock(&self.subs);
        if subs.is_empty() || s.error.is_some() {
            return;
        }
        let values = s
            .samples
            .iter()
            .take(MAX_LIVE_SERIES)
            .map(|x| {
                let key = if x.labels.is_empty() {
                    x.name.clone()
                } else {
                    let mut labels = x.labels.clone();
                    labels.sort();
                    let inner: Vec<String> =
                        labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
                    format!("{}{{{}}}", x.name, inner.join(","))
                };
                (key, x.value)
            })
            .collect();
        let analysed = s
            .samples
            .iter()
            .filter(|x| pado_analysis::attribution::wanted(&x.name))
            .take(MAX_ANALYSED_SERIES)
            .cloned()
            .collect();
        let scrape = Arc::new(ObservedScrape {
            t: s.t,
            endpoint: endpoint.to_string(),
            values,
            ms: s.ms,
            analysed,
        });
        subs.retain(|tx| {
            !matches!(
                tx.try_send(scrape.clone()),
                Err(crossbeam_channel::TrySendError::Disconnected(_))
            )
        });
    }
}

/// A scrape sink that also hands each scrape to the feed's subscribers.
pub(crate) struct Tee<W> {
    pub(crate) inner: W,
    pub(crate) feed: ObservedFeed,
}

impl<W: ScrapeSink> ScrapeSink for Tee<W> {
    type Error = W::Error;

    fn endpoint(&mut self, name: &str, url: &str, interval_s: f64) -> Result<(), Self::Error> {
        self.inner.endpoint(name, url, interval_s)
    }

    fn scrape(&mut self, endpoint: &str, s: ScrapeOutcome) -> Result<(), Self::Error> {
        self.feed.send(endpoint, &s);
        self.inner.scrape(endpoint, s)
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pado_metrics::{MetricType, ScrapedSample};

    /// A sink that keeps what it is given.
    #[derive(Default)]
    struct Kept(Vec<(String, usize)>);

    impl ScrapeSink for Kept {
        type Error = String;
        fn endpoint(&mut self, _: &str, _: &str, _: f64) -> Result<(), String> {
            Ok(())
        }
        fn scrape(&mut self, endpoint: &str, s: ScrapeOutcome) -> Result<(), String> {
            self.0.push((endpoint.to_string(), s.samples.len()));
            Ok(())
        }
        fn flush(&mut self) -> Result<(), String> {
            Ok(())
        }
    }

    fn sample(name: &str, labels: &[(&str, &str)], value: f64) -> ScrapedSample {
        ScrapedSample {
            name: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value,
            kind: MetricType::Gauge,
        }
    }

    #[test]
    fn the_file_gets_every_scrape_and_a_subscriber_a_copy() {
        let feed = ObservedFeed::default();
        let mut tee = Tee {
            inner: Kept::default(),
            feed: feed.clone(),
        };
        // Before anyone subscribes: written, handed to no one.
        let one = ScrapeOutcome {
            t: 1.0,
            samples: vec![sample("up", &[], 1.0)],
            ..Default::default()
        };
        tee.scrape("app", one.clone()).unwrap();
        let rx = feed.subscribe(1);
        let two = ScrapeOutcome {
            t: 3.0,
            samples: vec![
                sample("db_pool_in_use", &[("pool", "주문"), ("db", "main")], 7.0),
                sample("up", &[], 1.0),
            ],
            ..Default::default()
        };
        tee.scrape("app", two.clone()).unwrap();
        // A full channel loses the scrape; the file still gets it.
        tee.scrape("app", one).unwrap();
        assert_eq!(tee.inner.0.len(), 3);
        let got = rx.try_recv().unwrap();
        assert_eq!(got.t, 3.0);
        assert_eq!(got.endpoint, "app");
        assert_eq!(
            got.values,
            vec![
                ("db_pool_in_use{db=\"main\",pool=\"주문\"}".to_string(), 7.0),
                ("up".to_string(), 1.0)
            ]
        );
        assert!(rx.try_recv().is_err());
        // A failed scrape has no values to show.
        let failed = ScrapeOutcome {
            t: 5.0,
            error: Some(("timeout".into(), "no answer".into())),
            ..Default::default()
        };
        tee.scrape("app", failed).unwrap();
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn the_bottleneck_hint_gets_the_families_it_reads_past_the_charts_cap() {
        let feed = ObservedFeed::default();
        let rx = feed.subscribe(4);
        // 250 series the table never reads come first (a chart takes 200), then
        // the pool the hint must see.
        let mut samples: Vec<ScrapedSample> = (0..250)
            .map(|i| {
                sample(
                    "http_server_requests_seconds_bucket",
                    &[("le", &i.to_string())],
                    1.0,
                )
            })
            .collect();
        samples.push(sample(
            "hikaricp_connections_active",
            &[("pool", "주문-풀")],
            4.0,
        ));
        let s = ScrapeOutcome {
            t: 2.0,
            ms: 150.0,
            samples,
            ..Default::default()
        };
        feed.send("app", &s);
        let got = rx.try_recv().unwrap();
        assert_eq!(got.values.len(), MAX_LIVE_SERIES);
        assert!(!got.values.iter().any(|(k, _)| k.starts_with("hikaricp")));
        assert_eq!(got.ms, 150.0);
        assert_eq!(
            got.analysed,
            vec![sample(
                "hikaricp_connections_active",
                &[("pool", "주문-풀")],
                4.0
            )]
        );
    }
}
