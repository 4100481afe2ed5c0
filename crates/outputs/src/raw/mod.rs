//! Raw per-request output (`--output raw-json=FILE`, `raw-csv=FILE`; k6's
//! `--out json=`/`csv=`): one line per request with its timings, status, error,
//! URL (secrets masked), VU, iteration and tags, beside the per-second histograms
//! that stay the run's measurements. The workers hand records over without ever
//! waiting (`pado_metrics::raw`); [`writer`] formats ([`format`]) and writes them.

pub mod format;
pub mod spec;
pub mod writer;

pub use format::{LineFormat, Mask, CSV_HEADER};
pub use spec::{RawFormat, RawSpec, RawSpecError};
pub use writer::{RawStartError, RawWriter};
