//! CSV (and TSV) files: a header row naming the columns, then one row per line (quoted
//! fields may span lines). Streamed record by record into the arena, so loading needs
//! about the file's size in memory, not a multiple of it.

use std::path::Path;

use super::storage::{Table, TableBuilder};
use super::DataError;

/// Reads `path` (written as `file` in the scenario) into columns and rows.
pub(super) fn load(
    feed: &str,
    file: &str,
    path: &Path,
    delimiter: u8,
) -> Result<(Vec<String>, Table), DataError> {
    let io_err = |source| DataError::Io {
        feed: feed.to_string(),
        file: file.to_string(),
        path: path.to_path_buf(),
        source,
    };
    let (f, size) = pado_scenario::limits::open_capped(path, pado_scenario::limits::MAX_DATA_BYTES)
        .map_err(io_err)?;
    let csv_err = |e: csv::Error| {
        // With byte records and flexible rows, only I/O errors are expected here; the
        // rest are reported as the parser words them.
        let line = e.position().map(|p| p.line());
        let message = e.to_string();
        match e.into_kind() {
            csv::ErrorKind::Io(source) => io_err(source),
            _ => DataError::Csv {
                feed: feed.to_string(),
                file: file.to_string(),
                line,
                message,
            },
        }
    };
    let mut rdr = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(false)
        .flexible(true)
        .from_reader(f);

    let mut rec = csv::ByteRecord::new();
    if !rdr.read_byte_record(&mut rec).map_err(csv_err)? {
        return Err(DataError::NoHeader {
            feed: feed.to_string(),
            file: file.to_string(),
        });
    }
    let header_line = rec.position().map_or(1, |p| p.line());
    let columns = header(feed, file, header_line, &rec)?;
    let ncols = columns.len();

    let mut table = TableBuilder::new(ncols, size);
    loop {
        if !rdr.read_byte_record(&mut rec).map_err(csv_err)? {
            break;
        }
        let line = rec.position().map_or(0, |p| p.line());
        if rec.len() != ncols {
            return Err(DataError::RaggedRow {
                feed: feed.to_string(),
                file: file.to_string(),
                line,
                expected: ncols,
                found: rec.len(),
            });
        }
        // Per field: two invalid halves in adjacent fields could concatenate into a
        // valid sequence, so validating the record's bytes as a whole is not enough.
        for (i, field) in rec.iter().enumerate() {
            if std::str::from_utf8(field).is_err() {
                return Err(DataError::InvalidUtf8 {
                    feed: feed.to_string(),
                    file: file.to_string(),
                    line,
                    column: columns[i].clone(),
                });
            }
        }
        table.push_row(rec.iter());
    }
    if table.rows() == 0 {
        return Err(DataError::Empty {
            feed: feed.to_string(),
            origin: file.to_string(),
        });
    }
    Ok((columns, table.finish()))
}

/// Column names from the header record: UTF-8, a leading byte-order mark dropped (Excel
/// writes one), surrounding whitespace trimmed (`term, class` means `class`), no name
/// twice. Empty names are allowed (e.g. an unnamed index column from pandas): they
/// cannot be referenced, which is harmless.
fn header(
    feed: &str,
    file: &str,
    line: u64,
    rec: &csv::ByteRecord,
) -> Result<Vec<String>, DataError> {
    let mut columns: Vec<String> = Vec::with_capacity(rec.len());
    for (i, raw) in rec.iter().enumerate() {
        let raw = if i == 0 {
            raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw)
        } else {
            raw
        };
        let name = std::str::from_utf8(raw)
            .map_err(|_| DataError::InvalidUtf8 {
                feed: feed.to_string(),
                file: file.to_string(),
                line,
                column: format!("#{} of the header", i + 1),
            })?
            .trim()
            .to_string();
        if !name.is_empty() && columns.contains(&name) {
            return Err(DataError::DuplicateColumn {
                feed: feed.to_string(),
                file: file.to_string(),
                line,
                column: name,
            });
        }
        columns.push(name);
    }
    Ok(columns)
}
