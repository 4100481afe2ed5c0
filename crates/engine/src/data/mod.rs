//! Data feeds: the rows templates read as `{{ feed.column }}`.
//!
//! A scenario's `data:` block declares feeds — a CSV/TSV or JSON file, inline `values`,
//! or an integer `range` — and how rows are picked (random, sequential, unique per VU,
//! or Zipf-skewed). Each feed is loaded once, before the run, into a [`Feed`] that is
//! shared read-only (`Arc<Feed>`) by every VU on every worker thread, so a 1 GB CSV
//! costs about 1 GB however many VUs read it (rows live in one byte arena, see
//! `storage.rs`). Ranges are never materialised: row `i` is `first + i`.
//!
//! On the hot path a VU calls [`Feed::pick`] once per feed per iteration (the caller
//! keeps the row so that every column read in that iteration comes from the same row)
//! and [`Feed::write_value`] per template reference. Neither allocates.

mod error;
mod from_csv;
mod from_json;
mod pick;
mod storage;
mod zipf;

#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use pado_scenario::{DataSpec, PickMode};

pub use error::DataError;
pub use pick::{FeedCursor, WeightedFeeds};

use storage::Table;
use zipf::Zipf;

/// Default Zipf exponent when `s` is not given (the classic 1/k law).
pub const DEFAULT_ZIPF_EXPONENT: f64 = 1.0;

/// One loaded feed: its columns, its rows and how they are picked. Immutable except for
/// the shared sequential counter (an atomic), hence `Send + Sync` and meant to be shared
/// as `Arc<Feed>`.
pub struct Feed {
    name: String,
    columns: Vec<String>,
    rows: Rows,
    len: u64,
    pick: PickMode,
    zipf: Option<Zipf>,
    /// Column `{{ feed }}` (no column) reads: `value` if there is one, else the first.
    default_column: usize,
    /// Next row for `pick: sequential`, shared by all VUs on all threads.
    next: Counter,
    /// For a segment of a split test: `pick: sequential` reads only the rows the
    /// stripe gives this segment (set once, before the run).
    stripe: std::sync::OnceLock<SequentialStripe>,
}

/// The rows of a feed one segment reads with `pick: sequential`.
struct SequentialStripe {
    segment: crate::executor::segment::Segment,
    /// How many of the feed's rows are the segment's (≥ 1).
    rows: u64,
}

/// The sequential counter on its own cache line: every VU on every core bumps it, and
/// without padding each bump would also evict the read-only fields beside it (row
/// storage pointers, length) from the other cores' caches.
#[repr(align(128))]
struct Counter(AtomicU64);

enum Rows {
    /// `first + row`, never materialised.
    Range { first: i64 },
    /// Rows from a file or inline values.
    Table(Table),
}

impl Feed {
    /// Loads the feed `name` as `spec` declares it; relative file paths are resolved
    /// against `base_dir` (the scenario file's directory). Files are read here, once.
    ///
    /// Exactly one of `file`, `values`, `range` must be set. A file ending in `.json` is
    /// JSON, `.tsv` is tab-separated, `.csv` is CSV; any other name is JSON when its
    /// first non-blank character is `[`, CSV otherwise.
    pub fn load(name: &str, spec: &DataSpec, base_dir: &Path) -> Result<Feed, DataError> {
        let mut sources = Vec::new();
        if spec.file.is_some() {
            sources.push("`file`");
        }
        if spec.values.is_some() {
            sources.push("`values`");
        }
        if spec.range.is_some() {
            sources.push("`range`");
        }
        if sources.is_empty() {
            return Err(DataError::NoSource { feed: name.into() });
        }
        if sources.len() > 1 {
            return Err(DataError::ManySources {
                feed: name.into(),
                found: sources.join(", "),
            });
        }
        let pick = spec.pick.unwrap_or_default();
        let exponent = match (pick, spec.s) {
            (PickMode::Zipf, s) => {
                let s = s.unwrap_or(DEFAULT_ZIPF_EXPONENT);
                if !(s > 0.0 && s.is_finite()) {
                    return Err(DataError::BadExponent {
                        feed: name.into(),
                        s,
                    });
                }
                s
            }
            (other, Some(_)) => {
                return Err(DataError::ExponentWithoutZipf {
                    feed: name.into(),
                    pick: pick_name(other),
                })
            }
            (_, None) => DEFAULT_ZIPF_EXPONENT,
        };

        let (columns, rows, len) = if let Some([first, last]) = spec.range {
            if first > last {
                return Err(DataError::BadRange {
                    feed: name.into(),
                    first,
                    last,
                });
            }
            let len = u64::try_from(i128::from(last) - i128::from(first) + 1).map_err(|_| {
                DataError::RangeTooLarge {
                    feed: name.into(),
                    first,
                    last,
                }
            })?;
            (vec!["value".to_string()], Rows::Range { first }, len)
        } else {
            let (columns, table) = if let Some(values) = &spec.values {
                from_json::load_values(name, values)?
            } else {
                let file = spec.file.as_deref().unwrap_or_default();
                let path = base_dir.join(file);
                match file_format(file, &path) {
                    Format::Json => from_json::load_file(name, file, &path)?,
                    Format::Csv(delimiter) => from_csv::load(name, file, &path, delimiter)?,
                }
            };
            let len = table.rows();
            (columns, Rows::Table(table), len)
        };
        if len == 0 {
            // The loaders already refuse empty sources; this keeps `pick` total.
            return Err(DataError::Empty {
                feed: name.into(),
                origin: spec.file.clone().unwrap_or_else(|| "values".into()),
            });
        }
        let default_column = columns.iter().position(|c| c == "value").unwrap_or(0);
        Ok(Feed {
            name: name.to_string(),
            columns,
            rows,
            len,
            pick,
            zipf: (pick == PickMode::Zipf).then(|| Zipf::new(len, exponent)),
            default_column,
            next: Counter(AtomicU64::new(0)),
            stripe: std::sync::OnceLock::new(),
        })
    }

    /// The feed's name (the key under `data:`), for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of rows (for a range, `last - first + 1`). Never 0 for a loaded feed.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are no rows; always false, since loading refuses empty sources.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Column names in order: the CSV header, the first JSON object's keys as written,
    /// or `["value"]` for scalars and ranges.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The index of column `name`. `value` also names column 0 of a single-column feed
    /// (so `{{ kw.value }}` works on a one-column CSV whose header says `term`).
    /// Resolve names once, when templates are compiled; the hot path uses the index.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c == name)
            .or_else(|| (name == "value" && self.columns.len() == 1).then_some(0))
    }

    /// [`Feed::column`], or an error naming the feed and listing its columns — what a
    /// template compiler reports for `{{ feed.typo }}`.
    pub fn require_column(&self, name: &str) -> Result<usize, DataError> {
        self.column(name).ok_or_else(|| DataError::UnknownColumn {
            feed: self.name.clone(),
            column: name.to_string(),
            available: self.columns.join(", "),
        })
    }

    /// The column a bare `{{ feed }}` reads: `value` when the feed has one, otherwise
    /// the first column.
    pub fn default_column(&self) -> usize {
        self.default_column
    }

    /// How rows are picked.
    pub fn pick_mode(&self) -> PickMode {
        self.pick
    }

    /// Per-VU state for [`Feed::pick`]. `vu` is the VU's global index in
    /// `0..total_vus`, where `total_vus` is the most VUs that can ever pick from this
    /// feed (for arrival-rate executors, `max_vus`; across scenarios sharing the feed,
    /// their sum with indices numbered globally) — for `pick: unique` the split into
    /// disjoint shares depends on it. Other modes ignore both.
    ///
    /// With `pick: unique` VU `v` gets rows `v, v + total, v + 2·total, ...`, so no two
    /// VUs ever share a row. If the feed has fewer rows than VUs, that is impossible:
    /// VU `v` then gets row `v % len` and some VUs share rows.
    pub fn cursor(&self, vu: u64, total_vus: u64) -> FeedCursor {
        FeedCursor::unique_share(vu, total_vus, self.len)
    }

    /// For segment `segment` of a split test: `pick: sequential` then reads only the
    /// rows the segment's stripe holds, in order, wrapping within them, so the
    /// segments read disjoint rows. A feed with fewer rows than it takes for the
    /// segment to get one is left whole (its rows are then shared). Other modes are
    /// unchanged (`unique` is split by global VU ids instead).
    pub fn partition_sequential(&self, segment: &crate::executor::segment::Segment) {
        let rows = segment.count_before(self.len);
        if rows > 0 {
            let _ = self.stripe.set(SequentialStripe {
                segment: segment.clone(),
                rows,
            });
        }
    }

    /// Chooses a row (`< len()`); call once per feed per iteration and reuse the row for
    /// every column read in that iteration. No allocation.
    ///
    /// - random: uniform, independent per call.
    /// - sequential: one counter shared by all VUs on all threads (`fetch_add`, relaxed:
    ///   only the count matters, not ordering against other memory), modulo `len`, so
    ///   each lap gives every row exactly once across all VUs.
    /// - unique: the next row of this VU's share (see [`Feed::cursor`]), wrapping within
    ///   the share ([`FeedCursor::share_len`] rows).
    /// - zipf: row 0 (rank 1) most often, P(rank k) ∝ 1/k^s, by rejection-inversion
    ///   (O(1) time and memory for any length).
    #[inline]
    pub fn pick(&self, cursor: &mut FeedCursor, rng: &mut fastrand::Rng) -> u64 {
        match self.pick {
            PickMode::Random => rng.u64(0..self.len),
            PickMode::Sequential => {
                let n = self.next.0.fetch_add(1, Ordering::Relaxed);
                match self.stripe.get() {
                    None => n % self.len,
                    Some(s) => s.segment.position(n % s.rows),
                }
            }
            PickMode::Unique => {
                if cursor.share == 0 {
                    // A default cursor, not made by `cursor()`: fall back to uniform.
                    rng.u64(0..self.len)
                } else {
                    cursor.next_unique() % self.len
                }
            }
            PickMode::Zipf => match &self.zipf {
                Some(z) => z.sample(rng) - 1,
                None => rng.u64(0..self.len),
            },
        }
    }

    /// Appends the value at (`row`, `col`) to `out`: raw UTF-8, no escaping (the caller
    /// escapes for URL, JSON or header context). Allocates only if `out` must grow.
    ///
    /// `row` must come from [`Feed::pick`] (`< len()`) and `col` from
    /// [`Feed::column`]; a row or column out of range panics for stored rows.
    #[inline]
    pub fn write_value(&self, row: u64, col: usize, out: &mut Vec<u8>) {
        match &self.rows {
            Rows::Range { first } => {
                debug_assert!(row < self.len && col == 0);
                crate::render::push_int(out, first.wrapping_add_unsigned(row));
            }
            Rows::Table(t) => out.extend_from_slice(t.field(row, col)),
        }
    }

    /// The value at (`row`, `col`) as text: borrowed for stored rows, formatted for
    /// ranges. For setup-time and diagnostic use; the hot path uses
    /// [`Feed::write_value`].
    pub fn value_str(&self, row: u64, col: usize) -> Cow<'_, str> {
        match &self.rows {
            Rows::Range { first } => {
                debug_assert!(row < self.len && col == 0);
                Cow::Owned(first.wrapping_add_unsigned(row).to_string())
            }
            // Validated as UTF-8 when loaded, so this borrows (the check is a fast scan).
            Rows::Table(t) => String::from_utf8_lossy(t.field(row, col)),
        }
    }

    /// Heap bytes this feed holds (row storage and names): what one copy costs, shared
    /// by all VUs. About the file size for files, next to nothing for ranges.
    pub fn heap_bytes(&self) -> usize {
        let table = match &self.rows {
            Rows::Range { .. } => 0,
            Rows::Table(t) => t.heap_bytes(),
        };
        table
            + self.name.capacity()
            + self.columns.capacity() * std::mem::size_of::<String>()
            + self.columns.iter().map(String::capacity).sum::<usize>()
    }
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Rows are left out: a feed may hold gigabytes.
        f.debug_struct("Feed")
            .field("name", &self.name)
            .field("columns", &self.columns)
            .field("len", &self.len)
            .field("pick", &self.pick)
            .finish_non_exhaustive()
    }
}

/// The mode as written in a scenario, for messages.
fn pick_name(p: PickMode) -> &'static str {
    match p {
        PickMode::Random => "random",
        PickMode::Sequential => "sequential",
        PickMode::Unique => "unique",
        PickMode::Zipf => "zipf",
    }
}

enum Format {
    Json,
    Csv(u8),
}

/// The format by extension, or by the first non-blank byte for other names.
fn file_format(file: &str, path: &Path) -> Format {
    let ext = Path::new(file)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("json") => Format::Json,
        Some("csv") => Format::Csv(b','),
        Some("tsv") => Format::Csv(b'\t'),
        _ => {
            use std::io::Read;
            let mut head = [0u8; 512];
            let n = std::fs::File::open(path)
                .and_then(|mut f| f.read(&mut head))
                .unwrap_or(0);
            let head = &head[..n];
            let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
            match head.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'[') => Format::Json,
                _ => Format::Csv(b','),
            }
        }
    }
}
