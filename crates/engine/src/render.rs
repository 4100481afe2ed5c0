//! Compiled templates and their rendering. A template is bound once at compile time
//! (names to feed and variable indices, environment variables read) and rendered per
//! request into a VU's reused buffer, escaped for where it lands (URL, header, JSON
//! string, form field). Rendering allocates nothing once the buffers have grown.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use pado_scenario::template::{parse_template, Expr, Segment, Template};

use crate::data::{Feed, FeedCursor, WeightedFeeds};

/// Where a rendered value lands, which decides its escaping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escape {
    /// Path or query of a URL: everything but unreserved characters is
    /// percent-encoded as UTF-8 (`검색 엔진` → `%EA%B2%80%EC%83%89%20…`).
    Url,
    /// A header value: bytes as they are, line breaks replaced by spaces.
    Header,
    /// Inside a JSON string: JSON escaping.
    Json,
    /// A form field: percent-encoding as for URLs.
    Form,
    /// As is (raw bodies, tag values).
    Raw,
}

/// One compiled piece.
#[derive(Clone, Debug)]
pub enum Part {
    /// Literal bytes (already in their final encoding).
    Lit(Box<[u8]>),
    /// VU number.
    Vu,
    /// Iteration number.
    Iter,
    /// Scenario name.
    Scenario,
    /// Unix seconds.
    Timestamp,
    /// Unix milliseconds.
    TimestampMs,
    /// UUID v4.
    Uuid,
    /// Variable by index.
    Var(usize),
    /// Feed column.
    Feed(usize, usize),
    /// Random integer.
    RandomInt(i64, i64),
    /// Random alphanumeric string.
    RandomString(usize),
    /// Weighted feed choice by index into the plan's choices.
    Pick(usize),
}

/// A template bound to a run.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// Pieces.
    pub parts: Vec<Part>,
    /// Escaping of dynamic values.
    pub escape: Escape,
}

impl Compiled {
    /// Whether it renders the same bytes every time.
    pub fn is_static(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Lit(_)))
    }

    /// Static bytes (all literals concatenated).
    pub fn static_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        for p in &self.parts {
            if let Part::Lit(b) = p {
                v.extend_from_slice(b);
            }
        }
        v
    }

    /// Whether it reads this feed (for the once-per-iteration row choice).
    pub fn uses_feed(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Feed(..) | Part::Pick(_)))
    }
}

/// Names a template can bind to.
pub struct Binder<'a> {
    /// Feed names with their column names.
    pub feeds: &'a [Arc<Feed>],
    /// Variable names (index = variable id).
    pub vars: &'a mut Vec<String>,
    /// Weighted feed choices (index = `Part::Pick`).
    pub picks: &'a mut Vec<WeightedFeeds>,
    /// Every `env.NAME` value bound so far, as read and as escaped where it landed:
    /// what debug output and failure samples must redact ([`crate::redact`]).
    pub secrets: &'a mut Vec<Vec<u8>>,
}

/// Why a template could not be bound.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// Syntax (validation normally catches it first).
    #[error("template: {0}")]
    Syntax(String),
    /// A name that is neither a feed nor a variable.
    #[error("`{0}` is neither a data feed nor an extracted variable")]
    UnknownName(String),
    /// A column the feed does not have.
    #[error("feed `{feed}` has no column `{column}` (columns: {known})")]
    UnknownColumn {
        /// Feed.
        feed: String,
        /// Column asked for.
        column: String,
        /// Columns it has.
        known: String,
    },
    /// `env.NAME` not set.
    #[error("environment variable `{0}` is not set")]
    MissingEnv(String),
    /// Bad weights.
    #[error("{0}")]
    Pick(String),
}

impl Binder<'_> {
    /// Parse and bind `text`; `literal_encode` turns literal text into its final form
    /// (e.g. percent-encoding spaces and Hangul written literally in a URL).
    pub fn compile(
        &mut self,
        text: &str,
        escape: Escape,
        literal_encode: impl Fn(&str) -> Vec<u8>,
    ) -> Result<Compiled, BindError> {
        let t: Template = parse_template(text).map_err(|e| BindError::Syntax(e.to_string()))?;
        let mut parts: Vec<Part> = Vec::new();
        let push_lit = |parts: &mut Vec<Part>, bytes: Vec<u8>| {
            if bytes.is_empty() {
                return;
            }
            if let Some(Part::Lit(prev)) = parts.last_mut() {
                let mut v = prev.to_vec();
                v.extend_from_slice(&bytes);
                *prev = v.into_boxed_slice();
            } else {
                parts.push(Part::Lit(bytes.into_boxed_slice()));
            }
        };
        for seg in t.segments {
            match seg {
                Segment::Lit(s) => push_lit(&mut parts, literal_encode(&s)),
                Segment::Expr(e) => match e {
                    Expr::Vu => parts.push(Part::Vu),
                    Expr::Iter => parts.push(Part::Iter),
                    Expr::Scenario => parts.push(Part::Scenario),
                    Expr::Timestamp => parts.push(Part::Timestamp),
                    Expr::TimestampMs => parts.push(Part::TimestampMs),
                    Expr::Uuid => parts.push(Part::Uuid),
                    Expr::RandomInt(a, b) => parts.push(Part::RandomInt(a, b)),
                    Expr::RandomString(n) => parts.push(Part::RandomString(n)),
                    Expr::Env(name) => {
                        let v = std::env::var(&name).map_err(|_| BindError::MissingEnv(name))?;
                        let mut out = Vec::new();
                        escape_into(escape, v.as_bytes(), &mut out);
                        for form in [v.as_bytes(), &out] {
                            if !form.is_empty() && !self.secrets.iter().any(|x| x == form) {
                                self.secrets.push(form.to_vec());
                            }
                        }
                        push_lit(&mut parts, out);
                    }
                    Expr::Name(name, col) => {
                        if let Some(fi) = self.feeds.iter().position(|f| f.name() == name) {
                            let f = &self.feeds[fi];
                            let ci = match &col {
                                None => f.default_column(),
                                Some(c) => f.column(c).ok_or_else(|| BindError::UnknownColumn {
                                    feed: name.clone(),
                                    column: c.clone(),
                                    known: f.columns().join(", "),
                                })?,
                            };
                            parts.push(Part::Feed(fi, ci));
                        } else if col.is_none() {
                            let vi = match self.vars.iter().position(|v| *v == name) {
                                Some(i) => i,
                                None => {
                                    self.vars.push(name);
                                    self.vars.len() - 1
                                }
                            };
                            parts.push(Part::Var(vi));
                        } else {
                            return Err(BindError::UnknownName(name));
                        }
                    }
                    Expr::Pick(items) => {
                        let mut idx = Vec::new();
                        for (f, w) in items {
                            let fi = self
                                .feeds
                                .iter()
                                .position(|x| x.name() == f)
                                .ok_or_else(|| BindError::UnknownName(f.clone()))?;
                            idx.push((fi, w));
                        }
                        let wf =
                            WeightedFeeds::new(idx).map_err(|e| BindError::Pick(e.to_string()))?;
                        self.picks.push(wf);
                        parts.push(Part::Pick(self.picks.len() - 1));
                    }
                },
            }
        }
        Ok(Compiled { parts, escape })
    }
}

/// Per-request inputs of rendering, borrowed from the VU.
pub struct RenderCtx<'a> {
    /// VU number (1-based).
    pub vu: u64,
    /// Iteration number.
    pub iter: u64,
    /// Scenario name.
    pub scenario: &'a str,
    /// Variables.
    pub vars: &'a [Option<Vec<u8>>],
    /// Feeds.
    pub feeds: &'a [Arc<Feed>],
    /// Row chosen per feed this iteration.
    pub rows: &'a mut [Option<u64>],
    /// Per-VU feed cursors.
    pub cursors: &'a mut [FeedCursor],
    /// Weighted choices.
    pub picks: &'a [WeightedFeeds],
    /// Random numbers.
    pub rng: &'a mut fastrand::Rng,
    /// Scratch for a value before escaping.
    pub scratch: &'a mut Vec<u8>,
}

impl RenderCtx<'_> {
    fn row(&mut self, feed: usize) -> u64 {
        if let Some(r) = self.rows[feed] {
            return r;
        }
        let r = self.feeds[feed].pick(&mut self.cursors[feed], self.rng);
        self.rows[feed] = Some(r);
        r
    }

    /// Append the rendering of `t` to `out`.
    pub fn render(&mut self, t: &Compiled, out: &mut Vec<u8>) {
        for p in &t.parts {
            if let Part::Lit(b) = p {
                out.extend_from_slice(b);
                continue;
            }
            self.scratch.clear();
            match *p {
                Part::Lit(_) => {}
                Part::Vu => push_int(self.scratch, self.vu as i64),
                Part::Iter => push_int(self.scratch, self.iter as i64),
                Part::Scenario => self.scratch.extend_from_slice(self.scenario.as_bytes()),
                Part::Timestamp | Part::TimestampMs => {
                    let d = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .unwrap_or_default();
                    let v = if matches!(p, Part::Timestamp) {
                        d.as_secs() as i64
                    } else {
                        d.as_millis() as i64
                    };
                    push_int(self.scratch, v);
                }
                Part::Uuid => push_uuid(self.scratch, self.rng),
                Part::Var(i) => {
                    if let Some(Some(v)) = self.vars.get(i) {
                        self.scratch.extend_from_slice(v);
                    }
                }
                Part::Feed(f, c) => {
                    let row = self.row(f);
                    self.feeds[f].write_value(row, c, self.scratch);
                }
                Part::RandomInt(a, b) => {
                    let v = self.rng.i64(a..=b);
                    push_int(self.scratch, v);
                }
                Part::RandomString(n) => {
                    for _ in 0..n {
                        self.scratch.push(self.rng.alphanumeric() as u8);
                    }
                }
                Part::Pick(i) => {
                    let f = self.picks[i].choose(self.rng);
                    let row = self.row(f);
                    let col = self.feeds[f].default_column();
                    self.feeds[f].write_value(row, col, self.scratch);
                }
            }
            escape_into(t.escape, self.scratch, out);
        }
    }
}

/// Append a decimal integer without allocating.
pub(crate) fn push_int(out: &mut Vec<u8>, v: i64) {
    let (buf, start) = itoa_buf(v);
    out.extend_from_slice(&buf[start..]);
}

/// Integer to decimal without allocating a String (returns a stack buffer and start).
fn itoa_buf(v: i64) -> ([u8; 20], usize) {
    let mut b = [0u8; 20];
    let mut i = b.len();
    let neg = v < 0;
    let mut n = v.unsigned_abs();
    loop {
        i -= 1;
        b[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if neg {
        i -= 1;
        b[i] = b'-';
    }
    (b, i)
}

fn push_uuid(out: &mut Vec<u8>, rng: &mut fastrand::Rng) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut bytes = rng.u128(..).to_be_bytes();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Escape `v` for `e` into `out`.
pub fn escape_into(e: Escape, v: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    match e {
        Escape::Raw => out.extend_from_slice(v),
        Escape::Header => out.extend(v.iter().map(|&b| {
            if matches!(b, b'\r' | b'\n' | 0) {
                b' '
            } else {
                b
            }
        })),
        Escape::Url | Escape::Form => {
            for &b in v {
                if unreserved(b) {
                    out.push(b);
                } else {
                    out.push(b'%');
                    out.push(HEX[(b >> 4) as usize]);
                    out.push(HEX[(b & 15) as usize]);
                }
            }
        }
        Escape::Json => {
            for &b in v {
                match b {
                    b'"' => out.extend_from_slice(b"\\\""),
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    0..=0x1f => {
                        out.extend_from_slice(b"\\u00");
                        out.push(HEX[(b >> 4) as usize]);
                        out.push(HEX[(b & 15) as usize]);
                    }
                    _ => out.push(b),
                }
            }
        }
    }
}

/// Literal URL text into its wire form: keeps URL syntax (`/ ? & = % + : @ ...`) and
/// percent-encodes what cannot appear raw (spaces, non-ASCII such as Hangul, quotes).
pub fn encode_url_literal(s: &str) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_graphic()
            && !matches!(
                b,
                b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
            )
        {
            out.push(b);
        } else {
            out.push(b'%');
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 15) as usize]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        let mut o = Vec::new();
        escape_into(Escape::Url, "검색 엔진/a&b".as_bytes(), &mut o);
        assert_eq!(
            String::from_utf8(o).unwrap(),
            "%EA%B2%80%EC%83%89%20%EC%97%94%EC%A7%84%2Fa%26b"
        );
        let mut o = Vec::new();
        escape_into(Escape::Json, "a\"b\\c\n안녕".as_bytes(), &mut o);
        assert_eq!(String::from_utf8(o).unwrap(), "a\\\"b\\\\c\\n안녕");
        let mut o = Vec::new();
        escape_into(Escape::Header, b"x\r\nInjected: 1\0", &mut o);
        assert_eq!(o, b"x  Injected: 1 ");
        assert_eq!(
            encode_url_literal("/s?q=검 a"),
            b"/s?q=%EA%B2%80%20a".to_vec()
        );
    }

    #[test]
    fn ints_and_uuids() {
        let mut o = Vec::new();
        push_int(&mut o, -1234567);
        push_int(&mut o, 0);
        assert_eq!(o, b"-12345670");
        let mut rng = fastrand::Rng::with_seed(3);
        let mut u = Vec::new();
        push_uuid(&mut u, &mut rng);
        let s = String::from_utf8(u).unwrap();
        assert_eq!(s.len(), 36);
        assert_eq!(&s[14..15], "4");
        assert!(matches!(&s[19..20], "8" | "9" | "a" | "b"));
    }
}
