//! JSON files and inline `values`: an array of objects (their keys are the columns) or
//! of scalars (one column, `value`).
//!
//! A file is split into array elements by a small lexical scan and each element is
//! parsed on its own, so only one element at a time exists as a `serde_json::Value`
//! tree (a whole-file tree would take several times the file size). Loading therefore
//! peaks at about the file's bytes plus the arena; CSV, which is streamed, suits feeds of
//! gigabytes better.
//!
//! Values become text the way a template would want them: strings as they are (no
//! quotes), numbers and booleans as written, `null` as the empty string, and nested
//! arrays or objects as compact JSON.

use serde_json::Value;

use super::storage::{Table, TableBuilder};
use super::DataError;

/// Reads a JSON file (`file` as written in the scenario, resolved to `path`).
pub(super) fn load_file(
    feed: &str,
    file: &str,
    path: &std::path::Path,
) -> Result<(Vec<String>, Table), DataError> {
    let bytes = pado_scenario::limits::read_capped(path, pado_scenario::limits::MAX_DATA_BYTES)
        .map_err(|source| DataError::Io {
            feed: feed.to_string(),
            file: file.to_string(),
            path: path.to_path_buf(),
            source,
        })?;
    let syntax = |offset: usize, message: String| {
        let (line, column) = line_col(&bytes, offset);
        DataError::Json {
            feed: feed.to_string(),
            file: file.to_string(),
            line,
            column,
            message,
        }
    };

    let mut pos = if bytes.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    pos = skip_ws(&bytes, pos);
    let found = match bytes.get(pos) {
        Some(b'[') => None,
        None => Some("an empty file"),
        Some(b'{') => Some("an object"),
        Some(b'"') => Some("a string"),
        Some(b't' | b'f') => Some("a boolean"),
        Some(b'n') => Some("null"),
        Some(b'-' | b'0'..=b'9') => Some("a number"),
        Some(_) => return Err(syntax(pos, "expected `[` (a JSON array)".into())),
    };
    if let Some(found) = found {
        return Err(DataError::JsonNotArray {
            feed: feed.to_string(),
            file: file.to_string(),
            found,
        });
    }
    pos = skip_ws(&bytes, pos + 1);

    let mut rows = Rows::new(feed, file, bytes.len() as u64);
    if bytes.get(pos) == Some(&b']') {
        pos += 1;
    } else {
        let mut record = 0u64;
        loop {
            record += 1;
            let start = pos;
            let end = value_end(&bytes, start);
            let elem = &bytes[start..end];
            let value: Value = serde_json::from_slice(elem)
                .map_err(|e| syntax(start + serde_offset(elem, &e), serde_message(&e)))?;
            rows.push(record, &value, || top_level_keys(elem))?;
            pos = skip_ws(&bytes, end);
            match bytes.get(pos) {
                Some(b',') => pos = skip_ws(&bytes, pos + 1),
                Some(b']') => {
                    pos += 1;
                    break;
                }
                Some(_) => return Err(syntax(pos, "expected `,` or `]`".into())),
                None => return Err(syntax(pos, "the array is not closed (`]`)".into())),
            }
        }
    }
    pos = skip_ws(&bytes, pos);
    if pos < bytes.len() {
        return Err(syntax(pos, "unexpected characters after the array".into()));
    }
    rows.finish()
}

/// Inline `values` from the scenario file (already parsed). Object keys come in the
/// order `serde_json::Map` iterates them: alphabetical unless serde_json's
/// `preserve_order` feature is on.
pub(super) fn load_values(feed: &str, values: &[Value]) -> Result<(Vec<String>, Table), DataError> {
    let mut rows = Rows::new(feed, "values", 0);
    for (i, v) in values.iter().enumerate() {
        let keys = || match v {
            Value::Object(m) => m.keys().cloned().collect(),
            _ => Vec::new(),
        };
        rows.push(i as u64 + 1, v, keys)?;
    }
    rows.finish()
}

/// Accumulates rows, checking that they all have the first row's shape.
struct Rows<'a> {
    feed: &'a str,
    origin: &'a str,
    hint: u64,
    /// Set by the first record: its keys, or `["value"]` for scalars.
    columns: Vec<String>,
    objects: bool,
    table: Option<TableBuilder>,
    /// Text of each column of the current record (reused between records).
    scratch: Vec<Vec<u8>>,
}

impl<'a> Rows<'a> {
    fn new(feed: &'a str, origin: &'a str, hint: u64) -> Rows<'a> {
        Rows {
            feed,
            origin,
            hint,
            columns: Vec::new(),
            objects: false,
            table: None,
            scratch: Vec::new(),
        }
    }

    fn record_err(&self, record: u64, message: String) -> DataError {
        DataError::Record {
            feed: self.feed.to_string(),
            origin: self.origin.to_string(),
            record,
            message,
        }
    }

    /// Adds one record; `keys` gives the keys of an object in document order (asked
    /// for the first record only, which defines the columns).
    fn push(
        &mut self,
        record: u64,
        value: &Value,
        keys: impl FnOnce() -> Vec<String>,
    ) -> Result<(), DataError> {
        if self.table.is_none() {
            self.objects = value.is_object();
            self.columns = if self.objects {
                keys()
            } else {
                vec!["value".to_string()]
            };
            if self.columns.is_empty() {
                return Err(self.record_err(record, "an object without keys has no columns".into()));
            }
            for (i, c) in self.columns.iter().enumerate() {
                if self.columns[..i].contains(c) {
                    return Err(DataError::DuplicateColumn {
                        feed: self.feed.to_string(),
                        file: self.origin.to_string(),
                        line: record,
                        column: c.clone(),
                    });
                }
            }
            self.scratch = vec![Vec::new(); self.columns.len()];
            self.table = Some(TableBuilder::new(self.columns.len(), self.hint));
        }
        match (self.objects, value) {
            (true, Value::Object(map)) => {
                if let Some(k) = map.keys().find(|k| !self.columns.contains(k)) {
                    let msg = format!(
                        "key `{k}` is not in the first record (columns: {})",
                        self.columns.join(", ")
                    );
                    return Err(self.record_err(record, msg));
                }
                for (c, out) in self.columns.iter().zip(self.scratch.iter_mut()) {
                    out.clear();
                    match map.get(c) {
                        Some(v) => value_text(v, out),
                        None => {
                            let msg = format!(
                                "missing key `{c}` (every record needs the first record's keys: {}; use null for no value)",
                                self.columns.join(", ")
                            );
                            return Err(DataError::Record {
                                feed: self.feed.to_string(),
                                origin: self.origin.to_string(),
                                record,
                                message: msg,
                            });
                        }
                    }
                }
            }
            (false, v) if !v.is_object() => {
                self.scratch[0].clear();
                value_text(v, &mut self.scratch[0]);
            }
            (true, _) => {
                return Err(self.record_err(record, "a scalar among objects".into()));
            }
            (false, _) => {
                return Err(self.record_err(record, "an object among scalars".into()));
            }
        }
        if let Some(t) = self.table.as_mut() {
            t.push_row(self.scratch.iter().map(Vec::as_slice));
        }
        Ok(())
    }

    fn finish(self) -> Result<(Vec<String>, Table), DataError> {
        match self.table {
            Some(t) if t.rows() > 0 => Ok((self.columns, t.finish())),
            _ => Err(DataError::Empty {
                feed: self.feed.to_string(),
                origin: self.origin.to_string(),
            }),
        }
    }
}

/// The text a template gets for a JSON value.
fn value_text(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => {}
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => out.extend_from_slice(s.as_bytes()),
        nested => {
            // Serialising a `Value` into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, nested);
        }
    }
}

fn skip_ws(b: &[u8], mut pos: usize) -> usize {
    while matches!(b.get(pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        pos += 1;
    }
    pos
}

/// Where the JSON value starting at `start` ends, found lexically (strings and
/// bracket depth); serde_json then checks the slice properly. Never reads past `b`.
fn value_end(b: &[u8], start: usize) -> usize {
    let mut i = start;
    match b.get(i) {
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut in_str = false;
            let mut esc = false;
            while i < b.len() {
                let c = b[i];
                if in_str {
                    if esc {
                        esc = false;
                    } else if c == b'\\' {
                        esc = true;
                    } else if c == b'"' {
                        in_str = false;
                    }
                } else {
                    match c {
                        b'"' => in_str = true,
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return i + 1;
                            }
                        }
                        _ => {}
                    }
                }
                i += 1;
            }
            b.len()
        }
        Some(b'"') => {
            i += 1;
            let mut esc = false;
            while i < b.len() {
                let c = b[i];
                if esc {
                    esc = false;
                } else if c == b'\\' {
                    esc = true;
                } else if c == b'"' {
                    return i + 1;
                }
                i += 1;
            }
            b.len()
        }
        _ => {
            while i < b.len() && !matches!(b[i], b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
            {
                i += 1;
            }
            i
        }
    }
}

/// The keys of a JSON object (already known to parse), in document order — so that the
/// first column of a JSON feed is the first key as written.
fn top_level_keys(obj: &[u8]) -> Vec<String> {
    let mut keys = Vec::new();
    let mut i = 0;
    let mut depth = 0usize;
    while i < obj.len() {
        match obj[i] {
            b'"' => {
                let end = value_end(obj, i);
                if depth == 1 {
                    let after = skip_ws(obj, end);
                    if obj.get(after) == Some(&b':') {
                        if let Ok(k) = serde_json::from_slice::<String>(&obj[i..end]) {
                            keys.push(k);
                        }
                    }
                }
                i = end;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    keys
}

/// 1-based line and byte column of `offset`.
fn line_col(b: &[u8], offset: usize) -> (usize, usize) {
    let before = &b[..offset.min(b.len())];
    let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    (line, before.len() - line_start + 1)
}

/// Byte offset within `elem` of a serde_json error's line/column.
fn serde_offset(elem: &[u8], e: &serde_json::Error) -> usize {
    if e.line() == 0 {
        return 0;
    }
    let mut line = 1;
    let mut i = 0;
    while line < e.line() && i < elem.len() {
        if elem[i] == b'\n' {
            line += 1;
        }
        i += 1;
    }
    (i + e.column().saturating_sub(1)).min(elem.len())
}

/// serde_json's message without its own " at line L column C" (which would be
/// relative to the element, not the file).
fn serde_message(e: &serde_json::Error) -> String {
    let mut m = e.to_string();
    if let Some(i) = m.rfind(" at line ") {
        m.truncate(i);
    }
    m
}
