//! Why a data feed could not be loaded (or a column or weighted choice resolved).
//! Every message starts with `data.<feed>:` and names the file and line or record, so
//! a user can fix the input without guessing which of several feeds was meant.

use std::path::PathBuf;

/// Everything that can go wrong while loading a feed or resolving a reference to it.
/// Loading happens once, before the run, so these are start-up errors shown to the
/// user; none of them can occur on the hot path.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// None of `file`, `values`, `range` was set: the feed would have no rows.
    #[error("data.{feed}: set one of `file`, `values` or `range`")]
    NoSource {
        /// Feed name.
        feed: String,
    },
    /// More than one source was set; silently preferring one would hide a mistake.
    #[error("data.{feed}: set only one of `file`, `values` or `range` (found {found})")]
    ManySources {
        /// Feed name.
        feed: String,
        /// The sources that were set, e.g. "`file`, `range`".
        found: String,
    },
    /// The file could not be opened or read (missing, permissions, ...).
    #[error("data.{feed}: cannot read {file} ({}): {source}", path.display())]
    Io {
        /// Feed name.
        feed: String,
        /// The file as written in the scenario.
        file: String,
        /// The path it was resolved to.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A CSV file without even a header row: its columns cannot be named.
    #[error("data.{feed}: {file} is empty; a CSV feed needs a header row naming its columns")]
    NoHeader {
        /// Feed name.
        feed: String,
        /// The file as written in the scenario.
        file: String,
    },
    /// Two columns with the same name: `{{ feed.name }}` would be ambiguous.
    #[error("data.{feed}: {file} line {line}: column `{column}` is named twice")]
    DuplicateColumn {
        /// Feed name.
        feed: String,
        /// The file (or `values`).
        file: String,
        /// Line (1-based) of the header, or the record number for JSON.
        line: u64,
        /// The repeated name.
        column: String,
    },
    /// A CSV row with more or fewer fields than the header.
    #[error("data.{feed}: {file} line {line}: {found} field(s), but the header has {expected}")]
    RaggedRow {
        /// Feed name.
        feed: String,
        /// The file as written in the scenario.
        file: String,
        /// Line (1-based) where the row starts.
        line: u64,
        /// Fields in the header.
        expected: usize,
        /// Fields in this row.
        found: usize,
    },
    /// A CSV field that is not UTF-8 (e.g. a file saved as CP949/EUC-KR or Latin-1).
    /// Values are sent as UTF-8, so guessing an encoding would corrupt them silently.
    #[error("data.{feed}: {file} line {line}: column `{column}` is not valid UTF-8 (save the file as UTF-8)")]
    InvalidUtf8 {
        /// Feed name.
        feed: String,
        /// The file as written in the scenario.
        file: String,
        /// Line (1-based) where the row starts.
        line: u64,
        /// The column's name (or its 1-based number in the header).
        column: String,
    },
    /// The CSV parser rejected the file.
    #[error("data.{feed}: {file}{}: {message}", line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Csv {
        /// Feed name.
        feed: String,
        /// The file as written in the scenario.
        file: String,
        /// Line (1-based) when known.
        line: Option<u64>,
        /// The parser's message.
        message: String,
    },
    /// The JSON file is not valid JSON.
    #[error("data.{feed}: {file} line {line} column {column}: {message}")]
    Json {
        /// Feed name.
        feed: String,
        /// The file as written in the scenario.
        file: String,
        /// Line (1-based).
        line: usize,
        /// Column (1-based, in bytes).
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// Valid JSON, but not an array: there are no rows to pick from.
    #[error("data.{feed}: {file}: expected a JSON array of objects or of scalars, found {found}")]
    JsonNotArray {
        /// Feed name.
        feed: String,
        /// The file as written in the scenario.
        file: String,
        /// What was found instead ("an object", "a string", ...).
        found: &'static str,
    },
    /// A JSON (or inline `values`) row that does not fit the others: an object among
    /// scalars, a missing or extra key, an empty object.
    #[error("data.{feed}: {origin} record {record}: {message}")]
    Record {
        /// Feed name.
        feed: String,
        /// The file, or `values` for inline rows.
        origin: String,
        /// Record number (1-based position in the array).
        record: u64,
        /// What is wrong.
        message: String,
    },
    /// The source has no rows: picking would be impossible.
    #[error("data.{feed}: {origin} has no rows")]
    Empty {
        /// Feed name.
        feed: String,
        /// The file, or `values`.
        origin: String,
    },
    /// `range: [first, last]` with first > last.
    #[error("data.{feed}: range [{first}, {last}]: the first value is greater than the last")]
    BadRange {
        /// Feed name.
        feed: String,
        /// First value.
        first: i64,
        /// Last value.
        last: i64,
    },
    /// A range with 2^64 values (the whole i64 domain): its length does not fit a u64.
    #[error("data.{feed}: range [{first}, {last}] has too many values")]
    RangeTooLarge {
        /// Feed name.
        feed: String,
        /// First value.
        first: i64,
        /// Last value.
        last: i64,
    },
    /// A Zipf exponent that is not a finite number greater than 0.
    #[error("data.{feed}: zipf exponent s = {s} must be a number greater than 0")]
    BadExponent {
        /// Feed name.
        feed: String,
        /// The exponent given.
        s: f64,
    },
    /// `s` given with a pick mode other than zipf: it would be ignored, which
    /// usually means the user forgot `pick: zipf`.
    #[error("data.{feed}: `s` only applies to `pick: zipf` (pick is {pick})")]
    ExponentWithoutZipf {
        /// Feed name.
        feed: String,
        /// The pick mode in effect.
        pick: &'static str,
    },
    /// A template names a column the feed does not have.
    #[error("data.{feed}: no column `{column}` (columns: {available})")]
    UnknownColumn {
        /// Feed name.
        feed: String,
        /// The column asked for.
        column: String,
        /// The feed's columns, comma-separated.
        available: String,
    },
    /// A weighted choice between feeds with a weight that is not > 0.
    #[error("pick(): weight {weight} of entry {index} must be a number greater than 0")]
    BadWeight {
        /// 0-based position of the entry.
        index: usize,
        /// The weight given.
        weight: f64,
    },
    /// A weighted choice between no feeds at all.
    #[error("pick(): needs at least one feed")]
    NoWeights,
}
