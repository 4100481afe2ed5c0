//! The first pass over a scenario file: the YAML node tree checked against the
//! scenario model's JSON Schema, so that every structural problem (unknown field,
//! misspelled executor, `30 seconds`, a mapping where a list belongs, a key given
//! twice) is reported at once, each at its own line and column and in the user's words.
//!
//! serde alone stops at the first such problem and speaks Rust ("untagged enum
//! RequestSpec", "expected struct Step"), often at the line of the enclosing item.
//! The schema is generated from the same model serde reads ([`crate::json_schema`]),
//! so the two cannot drift apart; serde still has the last word (a problem this pass
//! misses is reported from serde's error, and this pass never refuses a file serde
//! accepts, except for duplicate keys and nesting depth, which serde lets through or
//! handles too slowly).

use std::sync::OnceLock;

use serde_json::Value;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::error::Diagnostic;

/// Deepest nesting of mappings and lists a scenario may have. Real scenarios nest
/// about 8 deep; the limit makes a pathological file (a 200 KB tower of `[[[[`) fail
/// at once instead of taking the parsers tens of seconds.
pub const MAX_DEPTH: usize = 64;

/// A YAML node with where it starts.
#[derive(Debug)]
pub(crate) struct Node {
    kind: Kind,
    line: usize,
    col: usize,
}

#[derive(Debug)]
enum Kind {
    /// Text and whether it was written plain (unquoted, so `10` is a number).
    Scalar(String, bool),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
    /// `*anchor`: whatever it refers to was checked where it was defined.
    Alias,
}

fn pos(m: &Marker) -> (usize, usize) {
    (m.line(), m.col() + 1)
}

fn diag(
    file: &str,
    line: usize,
    col: usize,
    field: &str,
    message: String,
    hint: Option<String>,
) -> Diagnostic {
    Diagnostic {
        file: file.to_string(),
        line: Some(line),
        column: Some(col),
        field: field.to_string(),
        message,
        hint,
    }
}

/// Read the first document into a node tree: syntax errors with an indentation or
/// tab hint, nesting deeper than [`MAX_DEPTH`], and keys given twice in any mapping.
/// `Ok(None)` for an empty document.
pub(crate) fn read(text: &str, file: &str) -> Result<Option<Node>, Vec<Diagnostic>> {
    let mut parser = Parser::new_from_str(text);
    // Open collections: (node under construction, pending key for maps).
    let mut stack: Vec<(Node, Option<Node>)> = Vec::new();
    let mut root: Option<Node> = None;
    let mut dups = Vec::new();
    loop {
        let (ev, mark) = match parser.next_token() {
            Ok(x) => x,
            Err(e) => return Err(vec![syntax_error(text, file, e.marker(), e.info())]),
        };
        let (line, col) = pos(&mark);
        let done = match ev {
            Event::Scalar(v, style, ..) => Some(Node {
                kind: Kind::Scalar(v, style == TScalarStyle::Plain),
                line,
                col,
            }),
            Event::Alias(_) => Some(Node {
                kind: Kind::Alias,
                line,
                col,
            }),
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(vec![too_deep(file, line, col)]);
                }
                let kind = if matches!(ev, Event::SequenceStart(..)) {
                    Kind::Seq(Vec::new())
                } else {
                    Kind::Map(Vec::new())
                };
                stack.push((Node { kind, line, col }, None));
                None
            }
            Event::SequenceEnd | Event::MappingEnd => stack.pop().map(|(n, _)| n),
            Event::DocumentEnd | Event::StreamEnd => break,
            _ => None,
        };
        let Some(node) = done else { continue };
        match stack.last_mut() {
            None => {
                root = Some(node);
            }
            Some((
                Node {
                    kind: Kind::Seq(items),
                    ..
                },
                _,
            )) => items.push(node),
            Some((
                Node {
                    kind: Kind::Map(entries),
                    ..
                },
                key,
            )) => match key.take() {
                None => {
                    if let Kind::Scalar(k, _) = &node.kind {
                        if let Some((first, _)) = entries
                            .iter()
                            .find(|(e, _)| matches!(&e.kind, Kind::Scalar(x, _) if x == k))
                        {
                            dups.push(diag(
                                file,
                                node.line,
                                node.col,
                                "",
                                format!("`{k}` is given twice in this mapping (first at line {})", first.line),
                                Some("keep one; a later value would silently replace the earlier one".into()),
                            ));
                        }
                    }
                    *key = Some(node);
                }
                Some(k) => entries.push((k, node)),
            },
            _ => {}
        }
    }
    if dups.is_empty() {
        Ok(root)
    } else {
        Err(dups)
    }
}

fn too_deep(file: &str, line: usize, col: usize) -> Diagnostic {
    diag(
        file,
        line,
        col,
        "",
        format!("nested more than {MAX_DEPTH} levels deep"),
        Some("a scenario nests a few levels (scenario, flow, step, request); check the indentation and the brackets".into()),
    )
}

fn syntax_error(text: &str, file: &str, m: &Marker, info: &str) -> Diagnostic {
    let (mut line, mut col) = pos(m);
    if info.contains("recursion limit") {
        return too_deep(file, line, col);
    }
    if m.index() >= text.chars().count() {
        // The parser ran into the end of the file, whose position is the line past
        // the last one when the file ends with a newline: name the bracket left open
        // if there is one, else the last line the file has.
        if let Some((l, c, open)) = unclosed_bracket(text) {
            let close = if open == '[' { ']' } else { '}' };
            return diag(
                file,
                l,
                c,
                "",
                format!("`{open}` is never closed: the file ends before its `{close}`"),
                Some(format!(
                    "close it with `{close}` (or write the list or mapping as indented lines)"
                )),
            );
        }
        let lines: Vec<&str> = text.lines().collect();
        if line > lines.len().max(1) {
            line = lines.len().max(1);
            col = lines.last().map_or(0, |l| l.chars().count()) + 1;
        }
    }
    let here = text.lines().nth(line.saturating_sub(1)).unwrap_or_default();
    let above = text.lines().nth(line.saturating_sub(2)).unwrap_or_default();
    let tab = here.starts_with('\t')
        || here.trim_start_matches(' ').starts_with('\t')
        || above.trim_start_matches(' ').starts_with('\t');
    let hint = if tab {
        "YAML is indented with spaces only: replace the tab with spaces"
    } else {
        "check the indentation: keys of one mapping start in the same column, a nested block is indented further, and `- ` items of a list line up"
    };
    let message = if tab {
        "a tab cannot indent YAML".to_string()
    } else {
        format!("not valid YAML: {info}")
    };
    diag(file, line, col, "", message, Some(hint.into()))
}

/// The last `[` or `{` of a flow list or mapping that is never closed, as (line,
/// column, bracket), 1-based: skipping quoted text and comments, and a bracket
/// inside a plain value of a block (`url: /a[0]`), which opens nothing.
fn unclosed_bracket(text: &str) -> Option<(usize, usize, char)> {
    let mut open: Vec<(usize, usize, char)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let (mut quote, mut prev) = (None::<char>, ' ');
        let mut escaped = false;
        for (i, c) in line.chars().enumerate() {
            match quote {
                Some('"') if escaped => escaped = false,
                Some('"') if c == '\\' => escaped = true,
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None => match c {
                    '#' if prev == ' ' || prev == '\t' || i == 0 => break,
                    '"' | '\'' => quote = Some(c),
                    '[' | '{'
                        if !open.is_empty()
                            || matches!(prev, ' ' | '\t' | ':' | '-' | ',')
                            || i == 0 =>
                    {
                        open.push((n + 1, i + 1, c))
                    }
                    ']' | '}' if !open.is_empty() => {
                        open.pop();
                    }
                    _ => {}
                },
            }
            prev = c;
        }
    }
    open.pop()
}

fn schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(crate::model::json_schema)
}

/// Every structural problem of `root` against the scenario model.
pub(crate) fn check(root: &Node, file: &str) -> Vec<Diagnostic> {
    let s = schema();
    let mut c = Checker {
        file,
        defs: &s["$defs"],
        out: Vec::new(),
    };
    c.node(root, s, "", None);
    c.out
}

struct Checker<'a> {
    file: &'a str,
    defs: &'static Value,
    out: Vec<Diagnostic>,
}

/// A plain scalar's YAML 1.2 core type.
fn plain_type(v: &str) -> &'static str {
    match v {
        "" | "~" | "null" | "Null" | "NULL" => "null",
        "true" | "True" | "TRUE" | "false" | "False" | "FALSE" => "boolean",
        _ if v.parse::<i64>().is_ok() || v.parse::<u64>().is_ok() => "integer",
        _ if v.parse::<f64>().is_ok()
            || matches!(v.trim_start_matches(['+', '-']), ".inf" | ".Inf" | ".INF")
            || matches!(v, ".nan" | ".NaN" | ".NAN") =>
        {
            "number"
        }
        _ => "string",
    }
}

fn describe(n: &Node) -> String {
    match &n.kind {
        Kind::Scalar(v, _) => format!("`{v}`"),
        Kind::Seq(_) => "a list".into(),
        Kind::Map(_) => "a mapping".into(),
        Kind::Alias => "an alias".into(),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The closest of `known` to `word`, if close enough to be a likely typo (Jaro-Winkler
/// above 0.8): for "did you mean" hints on fields, executors, step names and tags.
pub fn did_you_mean<'k>(word: &str, known: impl IntoIterator<Item = &'k str>) -> Option<&'k str> {
    known
        .into_iter()
        .map(|k| (strsim::jaro_winkler(word, k), k))
        .filter(|(s, _)| *s > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// What a value of a named definition looks like, for messages.
fn def_hint(def: &str) -> Option<&'static str> {
    Some(match def {
        "RequestSpec" => "a request is `\"GET /path\"` or `{ method: POST, url: /path, json: {...} }`",
        "Think" => "think time is `1s`, `{ uniform: [0.5s, 2s] }`, `{ normal: { mean: 1s, stddev: 200ms } }` or `{ pacing: 5s }`",
        "StatusMatch" => "status is `200`, `[200, 201]` or `\"2xx\"`",
        "ThresholdEntry" => "a threshold is `\"p(95) < 200\"` or `{ threshold: \"p(95) < 200\", abort_on_fail: true }`",
        "ExtractSpec" => "extract with a JSONPath `$.token`, or `{ regex: ... }`, `{ header: Location }`, `{ cookie: SESSION }`",
        "Duration" => "write a duration such as `30s`, `1m30s` or `250ms`",
        "Step" => "a step is `{ name: list, request: \"GET /api/posts\" }`, `{ think: 1s }`, `{ group: login, steps: [...] }` or `{ name: chat, ws: { url: /ws, actions: [...] } }`",
        "ObserveEndpoint" => "an endpoint is a URL or `{ name: app, url: http://127.0.0.1:8080/metrics }`",
        _ => return None,
    })
}

fn type_words(t: &str) -> &'static str {
    match t {
        "object" => "a mapping",
        "array" => "a list",
        "string" => "text",
        "integer" => "a whole number",
        "number" => "a number",
        "boolean" => "`true` or `false`",
        "null" => "nothing",
        _ => "something else",
    }
}

impl Checker<'_> {
    fn push(&mut self, n: &Node, path: &str, message: String, hint: Option<String>) {
        self.out
            .push(diag(self.file, n.line, n.col, path, message, hint));
    }

    fn resolve(&self, s: &'static Value) -> (&'static Value, Option<&'static str>) {
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let name = r.rsplit('/').next().unwrap_or_default();
            (&self.defs[name], Some(name))
        } else {
            (s, None)
        }
    }

    /// Check `n` against schema `s` at `path`; `def` names the definition `s` came
    /// from (for hints).
    fn node(&mut self, n: &Node, s: &'static Value, path: &str, def: Option<&'static str>) {
        if matches!(n.kind, Kind::Alias) || s == &Value::Bool(true) {
            return;
        }
        let (s, d) = self.resolve(s);
        let def = d.or(def);
        if def == Some("Duration") {
            self.duration(n, path);
            return;
        }
        let alts = s
            .get("anyOf")
            .or_else(|| s.get("oneOf"))
            .and_then(Value::as_array);
        if let Some(alts) = alts {
            self.alternatives(n, alts, path, def);
            return;
        }
        if let Some(c) = s.get("const") {
            if let (Kind::Scalar(v, _), Some(c)) = (&n.kind, c.as_str()) {
                if v != c {
                    self.push(n, path, format!("`{v}` is not `{c}`"), None);
                }
            }
            return;
        }
        if !self.type_fits(n, s) {
            let want: Vec<&str> = types(s)
                .iter()
                .filter(|t| **t != "null")
                .map(|t| type_words(t))
                .collect();
            let hint = def.and_then(def_hint).map(str::to_string);
            self.push(
                n,
                path,
                format!("expected {}, found {}", want.join(" or "), describe(n)),
                hint,
            );
            return;
        }
        match &n.kind {
            Kind::Map(entries) => self.map(n, entries, s, path, def),
            Kind::Seq(items) => {
                let (min, max) = (
                    s.get("minItems").and_then(Value::as_u64),
                    s.get("maxItems").and_then(Value::as_u64),
                );
                let len = items.len() as u64;
                if min == max && min.is_some_and(|m| m != len) {
                    self.push(
                        n,
                        path,
                        format!("expected a list of {} items, found {len}", min.unwrap_or(0)),
                        def.and_then(def_hint).map(str::to_string),
                    );
                }
                if let Some(item) = s.get("items") {
                    for (i, x) in items.iter().enumerate() {
                        self.node(x, item, &format!("{path}[{i}]"), None);
                    }
                }
            }
            Kind::Scalar(v, plain) => {
                if *plain && plain_type(v) == "integer" {
                    let out_of_range = match (
                        s.get("minimum").and_then(Value::as_f64),
                        s.get("maximum").and_then(Value::as_f64),
                        v.parse::<f64>(),
                    ) {
                        (Some(lo), _, Ok(x)) if x < lo => true,
                        (_, Some(hi), Ok(x)) if x > hi => true,
                        _ => false,
                    };
                    if out_of_range && types(s).contains(&"integer") {
                        self.push(n, path, format!("`{v}` is out of range"), None);
                    }
                }
            }
            Kind::Alias => {}
        }
    }

    fn type_fits(&self, n: &Node, s: &Value) -> bool {
        let ts = types(s);
        if ts.is_empty() {
            return true;
        }
        match &n.kind {
            Kind::Map(_) => ts.contains(&"object"),
            Kind::Seq(_) => ts.contains(&"array"),
            Kind::Alias => true,
            Kind::Scalar(v, plain) => {
                let t = if *plain { plain_type(v) } else { "string" };
                ts.iter().any(|want| match *want {
                    // serde reads any scalar as text.
                    "string" => t != "null" || ts.len() == 1,
                    "number" => t == "number" || t == "integer",
                    w => w == t,
                })
            }
        }
    }

    fn duration(&mut self, n: &Node, path: &str) {
        match &n.kind {
            Kind::Scalar(v, plain) => {
                if *plain && matches!(plain_type(v), "integer" | "number") {
                    return;
                }
                if let Err(e) = pado_base::units::parse_duration(v) {
                    let compact: String = v.split_whitespace().collect::<Vec<_>>().join("");
                    let suggestion = pado_base::units::parse_duration(&compact)
                        .ok()
                        .map(|_| compact)
                        .or_else(|| {
                            let num: String = v
                                .chars()
                                .take_while(|c| c.is_ascii_digit() || *c == '.')
                                .collect();
                            let rest = v[num.len()..].trim().to_ascii_lowercase();
                            let unit = match rest.as_str() {
                                r if r.starts_with("ms") || r.starts_with("milli") => "ms",
                                r if r.starts_with('s') => "s",
                                r if r.starts_with('m') => "m",
                                r if r.starts_with('h') => "h",
                                _ => return None,
                            };
                            (!num.is_empty()).then(|| format!("{num}{unit}"))
                        });
                    let hint = match suggestion {
                        Some(s) => {
                            format!("write `{s}` (units: h, m, s, ms, us, ns; e.g. `1m30s`)")
                        }
                        None => "write e.g. `30s`, `1m30s` or `250ms` (units: h, m, s, ms, us, ns)"
                            .into(),
                    };
                    self.push(n, path, format!("`{v}` is not a duration: {e}"), Some(hint));
                }
            }
            _ => self.push(
                n,
                path,
                format!("expected a duration, found {}", describe(n)),
                Some("write e.g. `30s`, `1m30s` or `250ms`".into()),
            ),
        }
    }

    fn alternatives(
        &mut self,
        n: &Node,
        alts: &'static [Value],
        path: &str,
        def: Option<&'static str>,
    ) {
        // An enumeration of words (executor, pick mode).
        let words: Vec<&str> = alts
            .iter()
            .filter_map(|a| a.get("const").and_then(Value::as_str))
            .collect();
        if !words.is_empty() && words.len() == alts.len() {
            match &n.kind {
                Kind::Scalar(v, _) if words.contains(&v.as_str()) => {}
                Kind::Scalar(v, _) => {
                    let what = path.rsplit('.').next().unwrap_or("value");
                    let hint = match did_you_mean(v, words.iter().copied()) {
                        Some(w) => format!(
                            "did you mean `{w}`? ({what} is one of: {})",
                            words.join(", ")
                        ),
                        None => format!("{what} is one of: {}", words.join(", ")),
                    };
                    self.push(n, path, format!("unknown {what} `{v}`"), Some(hint));
                }
                _ => self.push(
                    n,
                    path,
                    format!(
                        "expected one of {}, found {}",
                        words.join(", "),
                        describe(n)
                    ),
                    None,
                ),
            }
            return;
        }
        // Try each alternative; the first that fits wins.
        let mut tries: Vec<(usize, Vec<Diagnostic>)> = Vec::new();
        for (i, a) in alts.iter().enumerate() {
            let mut sub = Checker {
                file: self.file,
                defs: self.defs,
                out: Vec::new(),
            };
            sub.node(n, a, path, def);
            if sub.out.is_empty() {
                return;
            }
            // Alternatives of another shape (text where a mapping was given) say
            // least about what went wrong.
            let shallow = {
                let (r, _) = self.resolve(a);
                r.get("anyOf").is_some() || r.get("oneOf").is_some() || self.type_fits(n, r)
            };
            if shallow {
                tries.push((i, sub.out));
            }
        }
        match tries.len() {
            0 => {
                let hint = def.and_then(def_hint).map(str::to_string).or_else(|| {
                    alts.iter()
                        .find_map(|a| self.resolve(a).1.and_then(def_hint).map(str::to_string))
                });
                self.push(n, path, format!("{} does not fit here", describe(n)), hint);
            }
            _ => {
                // The closest alternative: fewest problems.
                let best = tries
                    .into_iter()
                    .min_by_key(|(_, d)| d.len())
                    .map(|(_, d)| d)
                    .unwrap_or_default();
                self.out.extend(best);
            }
        }
    }

    fn map(
        &mut self,
        n: &Node,
        entries: &[(Node, Node)],
        s: &'static Value,
        path: &str,
        def: Option<&'static str>,
    ) {
        let props = s.get("properties").and_then(Value::as_object);
        let extra = s.get("additionalProperties");
        for (k, v) in entries {
            let Kind::Scalar(key, _) = &k.kind else {
                if !matches!(k.kind, Kind::Alias) {
                    self.push(k, path, "a key must be a plain name".into(), None);
                }
                continue;
            };
            let p = join(path, key);
            if let Some(sub) = props.and_then(|m| m.get(key)) {
                self.node(v, sub, &p, None);
            } else {
                match extra {
                    Some(Value::Bool(false)) => {
                        let known: Vec<&str> = props
                            .map(|m| m.keys().map(String::as_str).collect())
                            .unwrap_or_default();
                        let hint = match did_you_mean(key, known.iter().copied()) {
                            Some(w) => format!("did you mean `{w}`?"),
                            None => format!("known fields here: {}", known.join(", ")),
                        };
                        self.push(k, &p, format!("unknown field `{key}`"), Some(hint));
                    }
                    Some(sub) if sub.is_object() => self.node(v, sub, &p, None),
                    _ => {}
                }
            }
        }
        if let Some(req) = s.get("required").and_then(Value::as_array) {
            for r in req.iter().filter_map(Value::as_str) {
                let has = entries
                    .iter()
                    .any(|(k, _)| matches!(&k.kind, Kind::Scalar(x, _) if x == r));
                if !has {
                    self.push(
                        n,
                        path,
                        format!("missing `{r}`"),
                        def.and_then(def_hint).map(str::to_string),
                    );
                }
            }
        }
    }
}

fn types(s: &Value) -> Vec<&str> {
    match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use crate::Diagnostic;

    fn errs(src: &str) -> Vec<Diagnostic> {
        match crate::parse_str(src, "t.yaml") {
            Ok(_) => vec![],
            Err(e) => e.diagnostics().to_vec(),
        }
    }

    fn all(e: &[Diagnostic]) -> String {
        e.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn four_mistakes_are_all_reported_with_their_lines() {
        let e = errs("target: http://127.0.0.1:1\nscenarios:\n  a:\n    executor: constant-users\n    vus: 2\n    duraton: 10s\n    flow:\n      - request: \"GET /\"\n        think: 30 seconds\n  b:\n    executor: constant-vus\n    duration: 5s\n    flow: { request: \"GET /\" }\n");
        let text = all(&e);
        assert_eq!(e.len(), 4, "{text}");
        assert!(
            text.contains("t.yaml:4:15: scenarios.a.executor: unknown executor `constant-users`"),
            "{text}"
        );
        assert!(text.contains("did you mean `constant-vus`"), "{text}");
        assert!(
            text.contains("t.yaml:6:5: scenarios.a.duraton: unknown field `duraton`"),
            "{text}"
        );
        assert!(text.contains("did you mean `duration`?"), "{text}");
        assert!(
            text.contains("t.yaml:9:16: scenarios.a.flow[0].think: `30 seconds` is not a duration"),
            "{text}"
        );
        assert!(text.contains("write `30s`"), "{text}");
        assert!(
            text.contains("t.yaml:13:11: scenarios.b.flow: expected a list, found a mapping"),
            "{text}"
        );
    }

    #[test]
    fn messages_speak_the_users_words_at_the_right_line() {
        for (src, line, says) in [
            // A request of the wrong shape: at the request, not the step.
            (
                "    flow:\n      - name: x\n        request: [1, 2]\n",
                9,
                "a request is",
            ),
            // An unknown field inside a request.
            (
                "    flow:\n      - request: { method: GET, url: /, hedaers: { A: b } }\n",
                8,
                "did you mean `headers`?",
            ),
            // A misspelled step field.
            (
                "    flow:\n      - reqest: \"GET /\"\n",
                8,
                "did you mean `request`?",
            ),
            // A status of the wrong kind.
            (
                "    flow:\n      - { request: \"GET /\", check: { status: { code: 200 } } }\n",
                8,
                "status is `200`",
            ),
        ] {
            let e = errs(&format!("target: http://127.0.0.1:1\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n{src}"));
            let text = all(&e);
            assert!(!e.is_empty(), "accepted {src}");
            assert_eq!(e[0].line, Some(line), "{text}");
            assert!(text.contains(says), "{text}");
            for rust in ["untagged", "enum", "struct", "variant", "RequestSpec"] {
                assert!(!text.contains(rust), "{rust} in {text}");
            }
        }
    }

    #[test]
    fn indentation_and_tabs_get_a_hint() {
        let e = errs("target: http://h\nscenarios:\n  a:\n    executor: constant-vus\n   vus: 1\n");
        assert_eq!(e.len(), 1, "{}", all(&e));
        assert_eq!(e[0].line, Some(5), "{}", e[0]);
        assert!(
            e[0].hint
                .as_deref()
                .unwrap_or_default()
                .contains("indentation"),
            "{}",
            e[0]
        );
        let e = errs("target: http://h\nscenarios:\n  a:\n\texecutor: constant-vus\n");
        assert_eq!(e.len(), 1, "{}", all(&e));
        assert!(e[0].message.contains("tab"), "{}", e[0]);
        assert!(
            e[0].hint.as_deref().unwrap_or_default().contains("spaces"),
            "{}",
            e[0]
        );
    }

    #[test]
    fn duplicate_keys_are_refused_at_any_depth() {
        let e = errs("target: http://h\nscenarios:\n  a:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow:\n      - request:\n          url: /\n          headers: { X-A: 1, X-A: 2 }\n");
        let text = all(&e);
        assert_eq!(e.len(), 1, "{text}");
        assert!(
            text.contains("t.yaml:10:30:")
                && text.contains("`X-A` is given twice")
                && text.contains("line 10"),
            "{text}"
        );
        let e = errs(
            "target: http://h\ndata:\n  k: { values: [a] }\n  k: { values: [b] }\nscenarios: {}\n",
        );
        assert!(all(&e).contains("t.yaml:4:3:"), "{}", all(&e));
    }

    #[test]
    fn deep_nesting_fails_fast() {
        let depth = 100_000;
        let src = format!("target: {}{}", "[".repeat(depth), "]".repeat(depth));
        let t0 = std::time::Instant::now();
        let e = errs(&src);
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(e.len(), 1);
        assert!(e[0].message.contains("nested more than 64"), "{}", e[0]);
        let src = (0..200)
            .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
            .collect::<String>();
        let t0 = std::time::Instant::now();
        let e = errs(&src);
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            t0.elapsed()
        );
        assert!(e[0].message.contains("nested more than 64"), "{}", e[0]);
    }

    #[test]
    fn every_example_and_the_init_template_pass_the_structure_check() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut n = 0;
        for f in std::fs::read_dir(&dir).unwrap() {
            let p = f.unwrap().path();
            if !matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")) {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let tree = super::read(&text, "x").unwrap().unwrap();
            let e = super::check(&tree, "x");
            assert!(e.is_empty(), "{}: {}", p.display(), all(&e));
            n += 1;
        }
        assert!(n > 0);
        let tree = super::read(crate::init::example_scenario(), "x")
            .unwrap()
            .unwrap();
        let e = super::check(&tree, "x");
        assert!(e.is_empty(), "init: {}", all(&e));
    }
}

#[cfg(test)]
mod unclosed_tests {
    use crate::Diagnostic;

    fn first(src: &str) -> Diagnostic {
        crate::parse_str(src, "t.yaml").unwrap_err().diagnostics()[0].clone()
    }

    /// A `[` or `{` left open on the last line: the parser finds out at the end of
    /// the file, and the error names the line of the opening bracket, a line the
    /// file has (with and without a newline at its end), not the one past its end.
    #[test]
    fn an_unclosed_bracket_at_the_end_names_a_line_of_the_file() {
        let cases = [
            (
                "target: http://127.0.0.1:1\nscenarios:\n  a:\n    flow: [\n",
                4,
                11,
            ),
            (
                "target: http://127.0.0.1:1\nscenarios:\n  a:\n    flow: [",
                4,
                11,
            ),
            ("target: http://127.0.0.1:1\ntags: [a, b\n", 2, 7),
            ("target: http://127.0.0.1:1\ntags: [a, b", 2, 7),
            (
                "target: http://127.0.0.1:1\nheaders: { X-A: \"[\", X-B: 1\n\n\n",
                2,
                10,
            ),
            (
                "# 시나리오\ntarget: http://127.0.0.1:1\nscenarios: [\n  { a: 1 },\n",
                3,
                12,
            ),
            ("[", 1, 1),
        ];
        for (src, line, col) in cases {
            let d = first(src);
            let lines = src.lines().count();
            assert!(d.line.unwrap() <= lines, "{src:?}: {d}");
            assert_eq!((d.line, d.column), (Some(line), Some(col)), "{src:?}: {d}");
            assert!(d.message.contains("never closed"), "{src:?}: {d}");
        }
    }

    /// A syntax error elsewhere keeps the parser's own line.
    #[test]
    fn other_syntax_errors_keep_their_line() {
        let d = first("target: http://127.0.0.1:1\nscenarios:\n  a: [1, 2]]\n");
        assert_eq!(d.line, Some(3), "{d}");
        assert!(!d.message.contains("never closed"), "{d}");
    }
}
