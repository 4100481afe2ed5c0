//! What one scrape of a target's metrics endpoint produced, in memory: the samples
//! the scraper parsed and how the scrape went. The scraper (`pado-observe`) hands
//! each [`ScrapeOutcome`] to a [`ScrapeSink`]; the result directory's
//! `observe.jsonl` writer (`pado-results`) is the sink a run uses. The trait lives
//! here so the scraper depends on these types only, not on the result-directory
//! code.

use serde::{Deserialize, Serialize};

/// How a metric family behaves, from its `# TYPE` line. Rates are taken of
/// monotonic samples (counters, and the `_count`/`_sum`/`_bucket` samples of
/// histograms and summaries); other samples are read as levels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricType {
    /// Monotonic total.
    Counter,
    /// A level that goes up and down.
    Gauge,
    /// Buckets, count and sum.
    Histogram,
    /// Quantiles, count and sum.
    Summary,
    /// OpenMetrics gauge histogram.
    Gaugehistogram,
    /// OpenMetrics info (value 1, the information is in the labels).
    Info,
    /// OpenMetrics state set.
    Stateset,
    /// No `# TYPE` line, or `untyped`/`unknown`.
    #[default]
    Untyped,
}

impl MetricType {
    /// From the word of a `# TYPE` line (unknown words are untyped).
    pub fn from_word(w: &str) -> MetricType {
        match w {
            "counter" => MetricType::Counter,
            "gauge" => MetricType::Gauge,
            "histogram" => MetricType::Histogram,
            "summary" => MetricType::Summary,
            "gaugehistogram" => MetricType::Gaugehistogram,
            "info" => MetricType::Info,
            "stateset" => MetricType::Stateset,
            _ => MetricType::Untyped,
        }
    }

    /// Whether a sample called `name` of a family of this type only ever grows
    /// (so its rate, not its level, is the signal).
    pub fn is_monotonic_sample(self, name: &str) -> bool {
        match self {
            MetricType::Counter => !name.ends_with("_created"),
            MetricType::Histogram | MetricType::Summary => {
                name.ends_with("_count") || name.ends_with("_sum") || name.ends_with("_bucket")
            }
            // Untyped samples named like counters are read as counters.
            MetricType::Untyped => name.ends_with("_total"),
            _ => false,
        }
    }
}

/// One parsed sample handed to the writer.
#[derive(Clone, Debug, PartialEq)]
pub struct ScrapedSample {
    /// Sample name.
    pub name: String,
    /// Labels (any order; the writer sorts them).
    pub labels: Vec<(String, String)>,
    /// Value.
    pub value: f64,
    /// Type of its family.
    pub kind: MetricType,
}

/// The outcome of one scrape, as the scraper hands it to the writer.
#[derive(Clone, Debug, Default)]
pub struct ScrapeOutcome {
    /// When the request was sent, seconds since second 0.
    pub t: f64,
    /// From sending the request to the whole answer (or the failure), ms: with
    /// `t`, when the values were read (`pado_results::observed::answered_at`).
    pub ms: f64,
    /// Error category and detail, when the scrape failed.
    pub error: Option<(String, String)>,
    /// Samples (empty on failure).
    pub samples: Vec<ScrapedSample>,
    /// Unparseable lines.
    pub bad_lines: u32,
}

/// Where a scraper's outcomes go (the result directory's `observe.jsonl` writer in a
/// run, a plain collector in tests). Errors are shown, never fatal: a scrape that
/// could not be stored does not stop the run.
pub trait ScrapeSink: Send + 'static {
    /// Why an outcome could not be stored.
    type Error: std::fmt::Display;

    /// Declare an endpoint (once, before its scrapes).
    fn endpoint(&mut self, name: &str, url: &str, interval_s: f64) -> Result<(), Self::Error>;

    /// Store one scrape of `endpoint`.
    fn scrape(&mut self, endpoint: &str, s: ScrapeOutcome) -> Result<(), Self::Error>;

    /// Write out whatever is buffered.
    fn flush(&mut self) -> Result<(), Self::Error>;
}
