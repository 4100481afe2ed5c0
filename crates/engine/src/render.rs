//! Compiled templates and their rendering. A template is bound once at compile time
//! (names to feed and variable indices, environment variables read) and rendered per
//! request into a VU's reused buffer, escaped for where it lands (URL, header, JSON
//! string, form field). Rendering allocates nothing once the buffers have grown.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use pado_scenario::template::{parse_template, Builtin, Expr, Segment, Template, ValueType};

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
    /// A value every VU has (its number, iteration, scenario, the time, a UUID).
    Builtin(Builtin),
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
    /// A hole whose value must have a shape; written unescaped once it has.
    Shaped(Box<(Shape, Part)>),
}

/// What a shaped hole's value must be. Checked per request: a value that is not
/// fails the request (category `template`) with a [`RenderFault`] instead of
/// sending a request the user did not mean.
#[derive(Clone, Debug)]
pub enum Shape {
    /// A whole JSON body value sent as this type (`"{{ n | int }}"` → `3`).
    Json {
        /// The type.
        ty: ValueType,
        /// The hole as written, for messages (`n`).
        label: Box<str>,
    },
    /// The hole a URL starts with (`{{ next }}`, an extracted `Location`): a path,
    /// or a URL on the step's origin, which is stripped off.
    Path {
        /// The step's origin as it may be written (`http://127.0.0.1:8080` and,
        /// with the default port, `http://example.com`), without the trailing `/`.
        origins: Box<[Box<str>]>,
        /// The hole as written, for messages.
        label: Box<str>,
    },
}

/// Why a request could not be built from its templates.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{{{{ {hole} }}}}` rendered `{value}`, which is not {expected}")]
pub struct RenderFault {
    /// The hole as written (`next`, `order.total | number`).
    pub hole: String,
    /// The value it rendered (clipped).
    pub value: String,
    /// What it had to be.
    pub expected: String,
}

/// Longest rendered value a [`RenderFault`] quotes.
const FAULT_VALUE_MAX: usize = 120;

impl Shape {
    /// Write `v` to `out` if it has the shape; otherwise say what it had to be.
    fn write(&self, v: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        match self {
            Shape::Json { ty, .. } => {
                if !ty.accepts(v) {
                    return Err(match ty {
                        ValueType::Int => "a whole number".into(),
                        ValueType::Number => "a JSON number".into(),
                        ValueType::Bool => "`true` or `false`".into(),
                        ValueType::Json => "valid JSON".into(),
                    });
                }
                out.extend_from_slice(v);
                Ok(())
            }
            Shape::Path { origins, .. } => {
                let v = match v.iter().position(|&b| b == b'#') {
                    Some(i) => &v[..i],
                    None => v,
                };
                let path = if v.starts_with(b"/") && !v.starts_with(b"//") {
                    Some(v)
                } else {
                    origins.iter().find_map(|o| {
                        let o = o.as_bytes();
                        let rest = v
                            .get(..o.len())
                            .filter(|head| head.eq_ignore_ascii_case(o))
                            .map(|_| &v[o.len()..])?;
                        (rest.is_empty() || rest[0] == b'/' || rest[0] == b'?').then_some(rest)
                    })
                };
                match path {
                    Some(p) => {
                        if !p.starts_with(b"/") {
                            out.push(b'/');
                        }
                        encode_url_literal_into(p, out);
                        Ok(())
                    }
                    None => Err(format!(
                        "a path starting with `/` or a URL on {}",
                        origins.first().map_or("the step's origin", |o| &**o)
                    )),
                }
            }
        }
    }

    fn label(&self) -> String {
        match self {
            Shape::Json { ty, label } => format!("{label} | {}", ty.as_str()),
            Shape::Path { label, .. } => label.to_string(),
        }
    }
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
    /// Whether variable `var` is one of its holes.
    pub fn uses_var(&self, var: usize) -> bool {
        self.parts.iter().any(|p| match p {
            Part::Var(v) => *v == var,
            Part::Shaped(b) => matches!(b.1, Part::Var(v) if v == var),
            _ => false,
        })
    }

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
    /// `Some` when the plan runs elsewhere (pado k8s: the pods read their own
    /// environment from a Secret): an `env.NAME` unset here binds to nothing and its
    /// name is listed here instead of failing, so the test can be checked and planned
    /// without the value on this machine. `None` for a run here: unset is an error.
    pub deferred_env: Option<&'a mut Vec<String>>,
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
    /// (e.g. percent-encoding spaces and Hangul written literally in a URL). A typed
    /// hole (`{{ n | int }}`) is bound only in JSON (`escape` is [`Escape::Json`]).
    pub fn compile(
        &mut self,
        text: &str,
        escape: Escape,
        literal_encode: impl Fn(&str) -> Vec<u8>,
    ) -> Result<Compiled, BindError> {
        self.compile_with_lead(text, escape, literal_encode, None)
    }

    /// Bind a URL's path-and-query template. When it starts with a hole, that hole's
    /// value is the path itself (an extracted `Location`): written as URL text (its
    /// `/`, `?` and `&` kept), and it must be a path or a URL on one of `origins`.
    pub fn compile_url_target(
        &mut self,
        text: &str,
        origins: Vec<Box<str>>,
    ) -> Result<Compiled, BindError> {
        let origins = origins.into_boxed_slice();
        self.compile_with_lead(text, Escape::Url, encode_url_literal, Some(origins))
    }

    fn compile_with_lead(
        &mut self,
        text: &str,
        escape: Escape,
        literal_encode: impl Fn(&str) -> Vec<u8>,
        lead_origins: Option<Box<[Box<str>]>>,
    ) -> Result<Compiled, BindError> {
        let t: Template = parse_template(text).map_err(|e| BindError::Syntax(e.to_string()))?;
        let mut parts: Vec<Part> = Vec::new();
        for (i, seg) in t.segments.into_iter().enumerate() {
            let (e, shape) = match seg {
                Segment::Lit(s) => {
                    push_lit(&mut parts, literal_encode(&s));
                    continue;
                }
                // The hole a URL starts with is its path (see `compile_url_target`).
                Segment::Expr(e) => match lead_origins.as_ref().filter(|_| i == 0) {
                    Some(origins) => {
                        let label = e.to_string().into_boxed_str();
                        let origins = origins.clone();
                        (e, Some(Shape::Path { origins, label }))
                    }
                    None => (e, None),
                },
                Segment::Typed(e, ty) if escape == Escape::Json => {
                    let label = e.to_string().into_boxed_str();
                    (e, Some(Shape::Json { ty, label }))
                }
                Segment::Typed(e, ty) => {
                    return Err(BindError::Syntax(format!(
                    "`{{{{ {e} | {} }}}}`: a typed value must be the whole of a JSON body value",
                    ty.as_str()
                )))
                }
            };
            let Some(shape) = shape else {
                match self.bind(e, escape)? {
                    Part::Lit(b) => push_lit(&mut parts, b.into_vec()),
                    p => parts.push(p),
                }
                continue;
            };
            if self.defers(&e) {
                continue;
            }
            // A shaped value is written unescaped once checked: bind it raw.
            match self.bind(e, Escape::Raw)? {
                Part::Lit(raw) => {
                    // `env.NAME`, known now: check it once (without quoting it).
                    let mut out = Vec::new();
                    shape.write(&raw, &mut out).map_err(|expected| {
                        BindError::Syntax(format!(
                            "`{{{{ {} }}}}`: the environment variable is not {expected}",
                            shape.label()
                        ))
                    })?;
                    if !out.is_empty() && !self.secrets.contains(&out) {
                        self.secrets.push(out.clone());
                    }
                    push_lit(&mut parts, out);
                }
                p => parts.push(Part::Shaped(Box::new((shape, p)))),
            }
        }
        Ok(Compiled { parts, escape })
    }

    /// Whether `e` is an `env.NAME` left to the environment where the plan runs
    /// (see [`Binder::deferred_env`]): unset here while deferring. Its name is noted.
    fn defers(&mut self, e: &Expr) -> bool {
        let (Expr::Env(name), Some(names)) = (e, self.deferred_env.as_deref_mut()) else {
            return false;
        };
        if std::env::var(name).is_ok() {
            return false;
        }
        if !names.contains(name) {
            names.push(name.clone());
        }
        true
    }

    /// One expression as a part; `env.NAME` is read now and becomes a literal,
    /// escaped for `escape`, and remembered as a secret in both forms.
    fn bind(&mut self, e: Expr, escape: Escape) -> Result<Part, BindError> {
        if self.defers(&e) {
            return Ok(Part::Lit(Box::default()));
        }
        Ok(match e {
            Expr::Builtin(b) => Part::Builtin(b),
            Expr::RandomInt(a, b) => Part::RandomInt(a, b),
            Expr::RandomString(n) => Part::RandomString(n),
            Expr::Env(name) => {
                let v = std::env::var(&name).map_err(|_| BindError::MissingEnv(name))?;
                let mut out = Vec::new();
                escape_into(escape, v.as_bytes(), &mut out);
                for form in [v.as_bytes(), &out] {
                    if !form.is_empty() && !self.secrets.iter().any(|x| x == form) {
                        self.secrets.push(form.to_vec());
                    }
                }
                Part::Lit(out.into_boxed_slice())
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
                    Part::Feed(fi, ci)
                } else if col.is_none() {
                    let vi = match self.vars.iter().position(|v| *v == name) {
                        Some(i) => i,
                        None => {
                            self.vars.push(name);
                            self.vars.len() - 1
                        }
                    };
                    Part::Var(vi)
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
                let wf = WeightedFeeds::new(idx).map_err(|e| BindError::Pick(e.to_string()))?;
                self.picks.push(wf);
                Part::Pick(self.picks.len() - 1)
            }
        })
    }
}

/// Append literal bytes, merging with a literal just before.
fn push_lit(parts: &mut Vec<Part>, bytes: Vec<u8>) {
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

    /// Append the rendering of `t` to `out`. A shaped hole whose value is not of its
    /// shape stops the rendering with the reason (`out` is then incomplete).
    pub fn render(&mut self, t: &Compiled, out: &mut Vec<u8>) -> Result<(), RenderFault> {
        for p in &t.parts {
            match p {
                Part::Lit(b) => out.extend_from_slice(b),
                Part::Shaped(sp) => {
                    let (shape, inner) = &**sp;
                    self.value(inner);
                    if let Err(expected) = shape.write(self.scratch, out) {
                        return Err(self.fault(shape, expected));
                    }
                }
                p => {
                    self.value(p);
                    escape_into(t.escape, self.scratch, out);
                }
            }
        }
        Ok(())
    }

    /// Only failures pay for this.
    #[cold]
    fn fault(&self, shape: &Shape, expected: String) -> RenderFault {
        let text = String::from_utf8_lossy(self.scratch);
        let mut value: String = text.chars().take(FAULT_VALUE_MAX).collect();
        if text.chars().count() > FAULT_VALUE_MAX {
            value.push('…');
        }
        RenderFault {
            hole: shape.label(),
            value,
            expected: if self.scratch.is_empty() {
                format!("{expected} (is it extracted or set before this step?)")
            } else {
                expected
            },
        }
    }

    /// Put a dynamic part's value, unescaped, in the scratch buffer.
    fn value(&mut self, p: &Part) {
        self.scratch.clear();
        match *p {
            Part::Lit(ref b) => self.scratch.extend_from_slice(b),
            Part::Shaped(_) => {}
            Part::Builtin(Builtin::Vu) => push_int(self.scratch, self.vu as i64),
            Part::Builtin(Builtin::Iter) => push_int(self.scratch, self.iter as i64),
            Part::Builtin(Builtin::Scenario) => {
                self.scratch.extend_from_slice(self.scenario.as_bytes())
            }
            Part::Builtin(b @ (Builtin::Timestamp | Builtin::TimestampMs)) => {
                let d = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                let v = if b == Builtin::Timestamp {
                    d.as_secs() as i64
                } else {
                    d.as_millis() as i64
                };
                push_int(self.scratch, v);
            }
            Part::Builtin(Builtin::Uuid) => push_uuid(self.scratch, self.rng),
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
    }
}

/// Append a decimal integer without allocating.
pub(crate) fn push_int(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
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
            for chunk in percent_encoding::percent_encode(v, NOT_UNRESERVED) {
                out.extend_from_slice(chunk.as_bytes());
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
    let mut out = Vec::with_capacity(s.len());
    encode_url_literal_into(s.as_bytes(), &mut out);
    out
}

/// [`encode_url_literal`] appending to `out` (for values rendered per request).
pub fn encode_url_literal_into(s: &[u8], out: &mut Vec<u8>) {
    for chunk in percent_encoding::percent_encode(s, NOT_URL_TEXT) {
        out.extend_from_slice(chunk.as_bytes());
    }
}

/// What a template value escapes in a URL or form: everything but the unreserved
/// characters (`A-Z a-z 0-9 - . _ ~`, RFC 3986), so a value never adds syntax.
const NOT_UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// What URL text written by the user escapes: what cannot appear raw in a request
/// target (controls, space, `" < > \ ^ ` { | }`, and every non-ASCII byte); URL
/// syntax (`/ ? & = % + : @`) is kept.
const NOT_URL_TEXT: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'<')
    .add(b'>')
    .add(b'\\')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

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

    /// Bind `text` with variables `vars` (no feeds) and render it with their values.
    fn rendered(
        compile: impl FnOnce(&mut Binder<'_>) -> Result<Compiled, BindError>,
        values: &[(&str, &str)],
    ) -> Result<String, RenderFault> {
        let mut vars = Vec::new();
        let (mut picks, mut secrets) = (Vec::new(), Vec::new());
        let c = compile(&mut Binder {
            feeds: &[],
            vars: &mut vars,
            picks: &mut picks,
            secrets: &mut secrets,
            deferred_env: None,
        })
        .expect("binds");
        let vals: Vec<Option<Vec<u8>>> = vars
            .iter()
            .map(|n| {
                values
                    .iter()
                    .find(|(k, _)| k == n)
                    .map(|(_, v)| v.as_bytes().to_vec())
            })
            .collect();
        let (mut rng, mut scratch) = (fastrand::Rng::with_seed(1), Vec::new());
        let mut rc = RenderCtx {
            vu: 3,
            iter: 7,
            scenario: "s",
            vars: &vals,
            feeds: &[],
            rows: &mut [],
            cursors: &mut [],
            picks: &[],
            rng: &mut rng,
            scratch: &mut scratch,
        };
        let mut out = Vec::new();
        rc.render(&c, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    fn json(text: &str, values: &[(&str, &str)]) -> Result<String, RenderFault> {
        rendered(
            |b| b.compile(text, Escape::Json, |l| l.as_bytes().to_vec()),
            values,
        )
    }

    fn url(text: &str, values: &[(&str, &str)]) -> Result<String, RenderFault> {
        let origins = vec![
            Box::from("http://127.0.0.1:8080"),
            Box::from("http://127.0.0.1"),
        ];
        rendered(|b| b.compile_url_target(text, origins), values)
    }

    #[test]
    fn typed_json_values_are_written_unquoted_once_checked() {
        assert_eq!(json("{{ iter | int }}", &[]).unwrap(), "7");
        assert_eq!(
            json("{{ n | number }}", &[("n", "-2.5e3")]).unwrap(),
            "-2.5e3"
        );
        assert_eq!(json("{{ ok | bool }}", &[("ok", "true")]).unwrap(), "true");
        assert_eq!(
            json("{{ o | json }}", &[("o", r#"{"이름":"결제","n":[1,2]}"#)]).unwrap(),
            r#"{"이름":"결제","n":[1,2]}"#
        );
        let f = json("{{ n | int }}", &[("n", "12a")]).unwrap_err();
        assert_eq!(
            f.to_string(),
            "`{{ n | int }}` rendered `12a`, which is not a whole number"
        );
        let f = json("{{ n | int }}", &[]).unwrap_err();
        assert!(f.expected.contains("extracted"), "{f}");
        assert!(json("{{ b | bool }}", &[("b", "yes")]).is_err());
        assert!(json("{{ o | json }}", &[("o", "{\"a\":")]).is_err());
        // An untyped hole in JSON is still escaped text.
        assert_eq!(json("{{ n }}", &[("n", "a\"b")]).unwrap(), "a\\\"b");
    }

    #[test]
    fn typed_values_bind_only_in_json() {
        let mut vars = Vec::new();
        let (mut picks, mut secrets) = (Vec::new(), Vec::new());
        let mut b = Binder {
            feeds: &[],
            vars: &mut vars,
            picks: &mut picks,
            secrets: &mut secrets,
            deferred_env: None,
        };
        let e = b
            .compile("/a/{{ iter | int }}", Escape::Url, encode_url_literal)
            .unwrap_err();
        assert!(e.to_string().contains("whole of a JSON body value"), "{e}");
    }

    #[test]
    fn a_url_that_starts_with_a_hole_takes_a_path_or_a_same_origin_url() {
        assert_eq!(
            url("{{ next }}", &[("next", "/orders/7?x=a&y=/b")]).unwrap(),
            "/orders/7?x=a&y=/b"
        );
        // Hangul and spaces are encoded; `/`, `?`, `%` kept; the fragment dropped.
        assert_eq!(
            url("{{ next }}", &[("next", "/검색 결과?q=%20a#top")]).unwrap(),
            "/%EA%B2%80%EC%83%89%20%EA%B2%B0%EA%B3%BC?q=%20a"
        );
        // A URL on the step's own origin (with or without the default port) is its path.
        assert_eq!(
            url("{{ next }}", &[("next", "http://127.0.0.1:8080/a/b")]).unwrap(),
            "/a/b"
        );
        assert_eq!(
            url("{{ next }}", &[("next", "HTTP://127.0.0.1:8080?p=1")]).unwrap(),
            "/?p=1"
        );
        assert_eq!(
            url("{{ next }}", &[("next", "http://127.0.0.1/x")]).unwrap(),
            "/x"
        );
        // Holes after the first are still escaped as values.
        assert_eq!(
            url(
                "{{ next }}&page={{ p }}",
                &[("next", "/list?a=1"), ("p", "2/3")]
            )
            .unwrap(),
            "/list?a=1&page=2%2F3"
        );
        for bad in [
            "https://evil.example/x",
            "//evil.example/x",
            "http://127.0.0.1:80801/x",
            "orders/7",
            "",
        ] {
            let f = url("{{ next }}", &[("next", bad)]).unwrap_err();
            assert!(
                f.expected
                    .starts_with("a path starting with `/` or a URL on http://127.0.0.1:8080"),
                "{bad}: {f}"
            );
        }
        // A URL whose start is literal is not affected.
        assert_eq!(url("/a/{{ id }}", &[("id", "x/y")]).unwrap(), "/a/x%2Fy");
    }
}
