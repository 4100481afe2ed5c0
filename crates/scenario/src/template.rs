//! The template language of request URLs, headers, bodies and tags: text with
//! `{{ expression }}` holes. Parsed here (so `pado validate` reports template errors
//! with their line); bound to feeds and variables and rendered by the engine.
//!
//! Expressions: `vu`, `iter`, `scenario`, `timestamp`, `timestamp_ms`, `uuid()`,
//! `env.NAME`, `NAME` (a variable or a feed's first column), `feed.column`,
//! `random_int(a, b)`, `random_string(n)`, `pick(feed_a: 80, feed_b: 20)`.
//!
//! A JSON body value that is one whole hole may carry a type, `"{{ iter | int }}"`,
//! so it is sent as a JSON number (or boolean, or JSON as extracted) instead of a
//! string: APIs that validate their input reject `"count": "3"`.

use std::fmt;

/// A parsed template: literal text and expressions in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    /// The pieces.
    pub segments: Vec<Segment>,
}

/// One piece of a template.
#[derive(Clone, Debug, PartialEq)]
pub enum Segment {
    /// Text as written.
    Lit(String),
    /// A `{{ }}` hole.
    Expr(Expr),
    /// A `{{ expr | type }}` hole: the value is written unquoted as this JSON type.
    /// Only allowed as the whole of a JSON body string (validation says so elsewhere).
    Typed(Expr, ValueType),
}

/// The JSON type a typed hole (`{{ n | int }}`) is sent as. The value is checked
/// when the request is built: a value that is not of the type fails the request
/// (error category `template`) rather than sending invalid JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    /// A whole number: `-?[0-9]+`.
    Int,
    /// A JSON number (`3`, `-1.5`, `2e3`).
    Number,
    /// `true` or `false`.
    Bool,
    /// Any JSON value, inserted as it is (e.g. an object extracted from a response).
    Json,
}

impl ValueType {
    /// The name written after `|`.
    pub fn as_str(self) -> &'static str {
        match self {
            ValueType::Int => "int",
            ValueType::Number => "number",
            ValueType::Bool => "bool",
            ValueType::Json => "json",
        }
    }

    fn parse(name: &str) -> Option<ValueType> {
        Some(match name {
            "int" => ValueType::Int,
            "number" | "float" => ValueType::Number,
            "bool" => ValueType::Bool,
            "json" => ValueType::Json,
            _ => return None,
        })
    }

    /// Whether `v` is a value of this type, as JSON text.
    pub fn accepts(self, v: &[u8]) -> bool {
        match self {
            ValueType::Int => {
                let digits = v.strip_prefix(b"-").unwrap_or(v);
                !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
            }
            ValueType::Number => is_json_number(v),
            ValueType::Bool => v == b"true" || v == b"false",
            ValueType::Json => serde_json::from_slice::<serde::de::IgnoredAny>(v).is_ok(),
        }
    }
}

/// The JSON number grammar (RFC 8259 section 6): `-? int frac? exp?`.
fn is_json_number(v: &[u8]) -> bool {
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while v.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    if v.first() == Some(&b'-') {
        i += 1;
    }
    match v.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if v.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return false;
        }
    }
    if matches!(v.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(v.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return false;
        }
    }
    i == v.len()
}

/// The values a hole renders without naming anything of the scenario's: the VU,
/// its iteration, its scenario, the time, a fresh UUID. One list for the parser
/// here and the engine, which keeps the same value in its compiled templates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// The VU's number (1-based, unique in the run).
    Vu,
    /// The VU's iteration number (0-based).
    Iter,
    /// The scenario's name.
    Scenario,
    /// Unix time in seconds.
    Timestamp,
    /// Unix time in milliseconds.
    TimestampMs,
    /// A random UUID (v4).
    Uuid,
}

impl Builtin {
    /// As written canonically in a template.
    pub fn as_str(self) -> &'static str {
        match self {
            Builtin::Vu => "vu",
            Builtin::Iter => "iter",
            Builtin::Scenario => "scenario",
            Builtin::Timestamp => "timestamp()",
            Builtin::TimestampMs => "timestamp_ms()",
            Builtin::Uuid => "uuid()",
        }
    }
}

/// What a hole renders.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A value every VU has ([`Builtin`]).
    Builtin(Builtin),
    /// An environment variable (read once at start).
    Env(String),
    /// A variable (extracted or from setup) or a feed; with a column for feeds.
    Name(String, Option<String>),
    /// A random integer in `[a, b]`.
    RandomInt(i64, i64),
    /// A random alphanumeric string of this length.
    RandomString(usize),
    /// A weighted choice between feeds; renders the chosen feed's first column.
    Pick(Vec<(String, f64)>),
}

/// Why a template does not parse; `offset` is the byte offset in the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateError {
    /// Byte offset of the problem.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

/// The expression as written canonically (`keywords.term`, `random_int(1, 10)`),
/// for messages that name a hole without quoting its value.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Builtin(b) => f.write_str(b.as_str()),
            Expr::Env(n) => write!(f, "env.{n}"),
            Expr::Name(n, None) => f.write_str(n),
            Expr::Name(n, Some(c)) => write!(f, "{n}.{c}"),
            Expr::RandomInt(a, b) => write!(f, "random_int({a}, {b})"),
            Expr::RandomString(n) => write!(f, "random_string({n})"),
            Expr::Pick(items) => {
                f.write_str("pick(")?;
                for (i, (feed, w)) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{feed}: {w}")?;
                }
                f.write_str(")")
            }
        }
    }
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at character {})", self.message, self.offset + 1)
    }
}

impl Template {
    /// Whether the template has no holes.
    pub fn is_static(&self) -> bool {
        self.segments.iter().all(|s| matches!(s, Segment::Lit(_)))
    }

    /// The text of a static template.
    pub fn literal(&self) -> Option<String> {
        self.is_static().then(|| {
            self.segments
                .iter()
                .map(|s| match s {
                    Segment::Lit(t) => t.as_str(),
                    Segment::Expr(_) | Segment::Typed(..) => "",
                })
                .collect()
        })
    }

    /// Every expression.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Expr(e) | Segment::Typed(e, _) => Some(e),
            Segment::Lit(_) => None,
        })
    }

    /// Whether any hole has a type (`| int`).
    pub fn has_typed(&self) -> bool {
        self.segments
            .iter()
            .any(|s| matches!(s, Segment::Typed(..)))
    }

    /// The type of a template that is one typed hole and nothing else: the only
    /// form a JSON body value may take to be sent unquoted.
    pub fn whole_typed(&self) -> Option<ValueType> {
        match self.segments.as_slice() {
            [Segment::Typed(_, t)] => Some(*t),
            _ => None,
        }
    }
}

/// Parse a template. Text without `{{` is a single literal.
pub fn parse_template(text: &str) -> Result<Template, TemplateError> {
    let mut segments = Vec::new();
    let mut rest = text;
    let mut base = 0;
    while let Some(open) = rest.find("{{") {
        if open > 0 {
            segments.push(Segment::Lit(rest[..open].to_string()));
        }
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or_else(|| TemplateError {
            offset: base + open,
            message: "`{{` without a closing `}}`".into(),
        })?;
        let inner = &after[..close];
        let at = |m: String| TemplateError {
            offset: base + open,
            message: format!("in `{{{{{inner}}}}}`: {m}"),
        };
        let segment = match inner.split_once('|') {
            Some((e, ty)) => {
                let ty = ty.trim();
                let t = ValueType::parse(ty).ok_or_else(|| {
                    at(format!(
                        "unknown type `{ty}`; known: int, number, bool, json (`{{{{ n | int }}}}`)"
                    ))
                })?;
                Segment::Typed(parse_expr(e).map_err(at)?, t)
            }
            None => Segment::Expr(parse_expr(inner).map_err(at)?),
        };
        segments.push(segment);
        let consumed = open + 2 + close + 2;
        base += consumed;
        rest = &rest[consumed..];
    }
    if !rest.is_empty() {
        segments.push(Segment::Lit(rest.to_string()));
    }
    Ok(Template { segments })
}

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_alphanumeric() || ch == '_' || ch == '-')
}

fn parse_expr(inner: &str) -> Result<Expr, String> {
    let e = inner.trim();
    if e.is_empty() {
        return Err("empty expression".into());
    }
    if let Some(open) = e.find('(') {
        let name = e[..open].trim();
        let args = e[open + 1..]
            .strip_suffix(')')
            .ok_or_else(|| format!("`{name}(` is missing its `)`"))?;
        let args: Vec<&str> = if args.trim().is_empty() {
            Vec::new()
        } else {
            args.split(',').map(str::trim).collect()
        };
        let int = |s: &str| -> Result<i64, String> {
            s.parse::<i64>()
                .map_err(|_| format!("`{s}` is not a whole number"))
        };
        return match name {
            "uuid" if args.is_empty() => Ok(Expr::Builtin(Builtin::Uuid)),
            "timestamp" if args.is_empty() => Ok(Expr::Builtin(Builtin::Timestamp)),
            "timestamp_ms" if args.is_empty() => Ok(Expr::Builtin(Builtin::TimestampMs)),
            "random_int" => {
                if args.len() != 2 {
                    return Err("random_int takes two numbers: `random_int(1, 100)`".into());
                }
                let (a, b) = (int(args[0])?, int(args[1])?);
                if a > b {
                    return Err(format!("random_int({a}, {b}): the first must not exceed the second"));
                }
                Ok(Expr::RandomInt(a, b))
            }
            "random_string" => {
                if args.len() != 1 {
                    return Err("random_string takes a length: `random_string(8)`".into());
                }
                let n = int(args[0])?;
                if !(1..=4096).contains(&n) {
                    return Err("random_string length must be 1 to 4096".into());
                }
                Ok(Expr::RandomString(n as usize))
            }
            "pick" => {
                if args.is_empty() {
                    return Err("pick needs feeds with weights: `pick(hot_posts: 80, all_posts: 20)`".into());
                }
                let mut out = Vec::new();
                for a in args {
                    let (f, w) = a
                        .split_once(':')
                        .ok_or_else(|| format!("`{a}` is not `feed: weight`"))?;
                    let f = f.trim();
                    if !is_ident(f) {
                        return Err(format!("`{f}` is not a feed name"));
                    }
                    let w: f64 = w
                        .trim()
                        .parse()
                        .map_err(|_| format!("weight `{}` is not a number", w.trim()))?;
                    if !(w.is_finite() && w > 0.0) {
                        return Err(format!("weight of `{f}` must be more than 0"));
                    }
                    out.push((f.to_string(), w));
                }
                Ok(Expr::Pick(out))
            }
            "uuid" | "timestamp" | "timestamp_ms" => Err(format!("{name}() takes no arguments")),
            _ => Err(format!(
                "unknown function `{name}`; known: uuid(), timestamp(), timestamp_ms(), random_int(a, b), random_string(n), pick(feed: weight, ...)"
            )),
        };
    }
    match e {
        "vu" => return Ok(Expr::Builtin(Builtin::Vu)),
        "iter" | "iteration" => return Ok(Expr::Builtin(Builtin::Iter)),
        "scenario" => return Ok(Expr::Builtin(Builtin::Scenario)),
        "timestamp" => return Ok(Expr::Builtin(Builtin::Timestamp)),
        "timestamp_ms" => return Ok(Expr::Builtin(Builtin::TimestampMs)),
        _ => {}
    }
    if let Some(var) = e.strip_prefix("env.") {
        if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`{var}` is not an environment variable name"));
        }
        return Ok(Expr::Env(var.to_string()));
    }
    let (name, col) = match e.split_once('.') {
        Some((n, c)) => (n, Some(c)),
        None => (e, None),
    };
    if !is_ident(name) {
        return Err(format!(
            "`{e}` is not a name; write e.g. `{{{{ token }}}}` or `{{{{ keywords.term }}}}`"
        ));
    }
    if let Some(c) = col {
        if !is_ident(c) {
            return Err(format!("`{c}` is not a column name"));
        }
    }
    Ok(Expr::Name(name.to_string(), col.map(str::to_string)))
}

/// Render a template that may only hold literal text and `{{ env.NAME }}`
/// (settings read once at start, such as an observe endpoint's headers). An
/// unset variable is an error naming it, never an empty value.
pub fn render_env_only(text: &str) -> Result<String, String> {
    let t = parse_template(text).map_err(|e| e.to_string())?;
    let mut out = String::new();
    for seg in &t.segments {
        match seg {
            Segment::Lit(l) => out.push_str(l),
            Segment::Expr(Expr::Env(name)) => match std::env::var(name) {
                Ok(v) => out.push_str(&v),
                Err(_) => return Err(format!("environment variable `{name}` is not set")),
            },
            Segment::Expr(_) | Segment::Typed(..) => {
                return Err("only `{{ env.NAME }}` may be used here".to_string());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_literals_and_holes() {
        let t = parse_template("/api/search?q={{ keywords.term }}&u=u{{vu}}-{{ iter }}").unwrap();
        assert_eq!(t.segments.len(), 6);
        assert_eq!(
            t.segments[1],
            Segment::Expr(Expr::Name("keywords".into(), Some("term".into())))
        );
        assert_eq!(t.segments[3], Segment::Expr(Expr::Builtin(Builtin::Vu)));
        assert!(!t.is_static());
        let s = parse_template("/static/검색").unwrap();
        assert_eq!(s.literal().unwrap(), "/static/검색");
    }

    #[test]
    fn functions() {
        let t = parse_template("{{ pick(hot_posts: 80, all_posts: 20) }}").unwrap();
        assert_eq!(
            t.segments[0],
            Segment::Expr(Expr::Pick(vec![
                ("hot_posts".into(), 80.0),
                ("all_posts".into(), 20.0)
            ]))
        );
        assert_eq!(
            parse_template("{{random_int(1, 10)}}").unwrap().segments[0],
            Segment::Expr(Expr::RandomInt(1, 10))
        );
        assert_eq!(
            parse_template("{{ env.PASSWORD }}").unwrap().segments[0],
            Segment::Expr(Expr::Env("PASSWORD".into()))
        );
        assert_eq!(
            parse_template("{{ uuid() }}").unwrap().segments[0],
            Segment::Expr(Expr::Builtin(Builtin::Uuid))
        );
    }

    #[test]
    fn errors_say_where_and_what() {
        let e = parse_template("/a/{{ token").unwrap_err();
        assert_eq!(e.offset, 3);
        assert!(e.message.contains("closing"));
        assert!(parse_template("{{ nope(1) }}")
            .unwrap_err()
            .message
            .contains("unknown function"));
        assert!(parse_template("{{ random_int(5, 1) }}").is_err());
        assert!(parse_template("{{ pick(a: 0) }}").is_err());
        assert!(parse_template("{{ }}").is_err());
        assert!(parse_template("{{ a b }}").is_err());
    }

    #[test]
    fn typed_holes() {
        let t = parse_template("{{ iter | int }}").unwrap();
        assert_eq!(
            t.segments,
            vec![Segment::Typed(Expr::Builtin(Builtin::Iter), ValueType::Int)]
        );
        assert_eq!(t.whole_typed(), Some(ValueType::Int));
        assert_eq!(
            parse_template("{{ order.total|number }}").unwrap().segments[0],
            Segment::Typed(
                Expr::Name("order".into(), Some("total".into())),
                ValueType::Number
            )
        );
        // Not the whole value: typed, but not a whole typed value.
        let part = parse_template("n{{ iter | int }}").unwrap();
        assert!(part.has_typed() && part.whole_typed().is_none());
        let e = parse_template("{{ iter | integer }}").unwrap_err();
        assert!(e.message.contains("unknown type `integer`"), "{e}");
        assert!(parse_template("{{ | int }}").is_err());
    }

    #[test]
    fn expressions_display_as_written() {
        for text in [
            "iter",
            "keywords.term",
            "random_int(1, 10)",
            "env.TOKEN",
            "pick(a: 80, b: 20)",
            "uuid()",
        ] {
            let t = parse_template(&format!("{{{{ {text} }}}}")).unwrap();
            assert_eq!(t.exprs().next().unwrap().to_string(), text);
        }
    }

    #[test]
    fn typed_values_are_checked() {
        for ok in ["0", "-12", "1234567890123"] {
            assert!(ValueType::Int.accepts(ok.as_bytes()), "{ok}");
        }
        for bad in ["", "-", "1.5", " 1", "1e3", "abc", "１"] {
            assert!(!ValueType::Int.accepts(bad.as_bytes()), "{bad}");
        }
        for ok in ["0", "-0.5", "1e9", "2.5E-3", "10"] {
            assert!(ValueType::Number.accepts(ok.as_bytes()), "{ok}");
        }
        for bad in ["01", ".5", "1.", "1e", "+1", "NaN", "Infinity", "0x10", ""] {
            assert!(!ValueType::Number.accepts(bad.as_bytes()), "{bad}");
        }
        assert!(ValueType::Bool.accepts(b"true") && ValueType::Bool.accepts(b"false"));
        assert!(!ValueType::Bool.accepts(b"True") && !ValueType::Bool.accepts(b"1"));
        assert!(ValueType::Json.accepts(r#"{"a":[1,"\uAC00 결제"]}"#.as_bytes()));
        assert!(ValueType::Json.accepts(b"null"));
        assert!(!ValueType::Json.accepts(b"{\"a\":"));
        assert!(!ValueType::Json.accepts(b"1 2"));
    }

    #[test]
    fn random_input_never_panics() {
        let alphabet: Vec<char> = "{}() ,:._-abcpickrandom_intuuid0123456789검색\\$\n"
            .chars()
            .collect();
        let mut rng = fastrand::Rng::with_seed(88172645463325252);
        for _ in 0..20_000 {
            let s: String = (0..rng.usize(..40))
                .map(|_| alphabet[rng.usize(..alphabet.len())])
                .collect();
            let _ = parse_template(&s);
        }
    }

    #[test]
    fn env_only_templates() {
        std::env::set_var("PADO_TEST_ENV_ONLY", "s3cret");
        assert_eq!(
            render_env_only("Bearer {{ env.PADO_TEST_ENV_ONLY }}").unwrap(),
            "Bearer s3cret"
        );
        assert!(render_env_only("{{ env.PADO_TEST_UNSET_XYZ }}")
            .unwrap_err()
            .contains("PADO_TEST_UNSET_XYZ"));
        assert!(render_env_only("{{ vu }}").unwrap_err().contains("env"));
    }
}
