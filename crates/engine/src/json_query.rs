//! JSONPath queries of checks and extraction, answered on the response body.
//!
//! Most paths in scenarios are names and indexes only (`$.total`,
//! `$.data.items[0].id`). Those are answered by walking the body's bytes once and
//! skipping everything off the path, allocating nothing but the value found and the
//! parser's small stack for the containers it skips: parsing a whole body into a
//! tree costs an allocation per string, array and object in it, for every response,
//! and more than twice the CPU (`bench/json_checks.sh`).
//! Any other JSONPath (wildcards, filters, slices, negative indexes, descendants)
//! parses the body into a tree once per response, shared by all of that response's
//! checks, and queries it with `serde_json_path`; so does every query of a response
//! whose tree an earlier check already built.
//!
//! Both ways give the same answer, down to a key given twice (the last one counts,
//! as in the tree) and a body that is not JSON anywhere (nothing matches). One
//! difference is left on purpose: the walk does not check that strings it skips are
//! valid UTF-8 (raw, or as `\u` escapes that pair their surrogates), nor that
//! numbers it skips fit a float (the tree does, and then finds nothing), as
//! checking them cost as much as the walk itself. Several simple paths asked of every event of an LLM
//! stream are walked together, their values' kinds told without building them
//! ([`path_set`]).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use serde_json_path::JsonPath;

use crate::response_view::ResponseView;

pub mod path_set;

/// A compiled JSONPath (cheap to clone: templated checks clone theirs per response).
#[derive(Clone, Debug)]
pub struct JsonQuery(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    path: JsonPath,
    /// The path as names and indexes, when it is only that.
    simple: Option<Box<[Seg]>>,
}

/// One step of a simple path.
#[derive(Clone, Debug, PartialEq)]
enum Seg {
    /// An object's member.
    Key(Box<str>),
    /// An array's element, from the start.
    Index(usize),
}

impl JsonQuery {
    /// Parses a JSONPath (RFC 9535).
    pub fn parse(text: &str) -> Result<JsonQuery, serde_json_path::ParseError> {
        let path = JsonPath::parse(text)?;
        Ok(JsonQuery(Arc::new(Inner {
            path,
            simple: simple(text).map(Vec::into_boxed_slice),
        })))
    }

    /// The JSONPath itself (for messages and queries of a tree at hand).
    pub fn path(&self) -> &JsonPath {
        &self.0.path
    }

    /// Whether the body has anything at the path.
    pub fn exists(&self, r: &ResponseView<'_>) -> bool {
        match (&self.0.simple, r.parsed_json()) {
            (Some(segs), None) => walk(r.body, segs, false).is_some(),
            _ => r.json().is_some_and(|v| !self.0.path.query(v).is_empty()),
        }
    }

    /// The first value at the path.
    pub fn first<'r>(&self, r: &'r ResponseView<'_>) -> Option<Cow<'r, Value>> {
        match (&self.0.simple, r.parsed_json()) {
            (Some(segs), None) => walk(r.body, segs, true).map(Cow::Owned),
            _ => r
                .json()
                .and_then(|v| self.0.path.query(v).first())
                .map(Cow::Borrowed),
        }
    }
}

impl fmt::Display for JsonQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.path.fmt(f)
    }
}

/// `text` (a valid JSONPath) as names and indexes: `$`, then `.name`, `['name']`,
/// `["name"]` or `[N]`; `None` for anything else, and for quoted names with escapes
/// or quotes in them (left to the general query rather than unescaped here).
fn simple(text: &str) -> Option<Vec<Seg>> {
    let mut rest = text.trim().strip_prefix('$')?;
    let mut segs = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii()))
                .unwrap_or(r.len());
            let name = &r[..end];
            if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            segs.push(Seg::Key(name.into()));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let close = r.find(']')?;
            let inner = r[..close].trim();
            let quoted = inner
                .strip_prefix('\'')
                .and_then(|x| x.strip_suffix('\''))
                .or_else(|| inner.strip_prefix('"').and_then(|x| x.strip_suffix('"')));
            if let Some(name) = quoted {
                if name.contains(['\\', '\'', '"']) {
                    return None;
                }
                segs.push(Seg::Key(name.into()));
            } else if !inner.is_empty()
                && inner.bytes().all(|b| b.is_ascii_digit())
                && (inner == "0" || !inner.starts_with('0'))
            {
                segs.push(Seg::Index(inner.parse().ok()?));
            } else {
                return None;
            }
            rest = &r[close + 1..];
        } else {
            return None;
        }
    }
    Some(segs)
}

/// The value at `segs` in the JSON document `body` (`Value::Null` standing for any
/// value when `want` is false, which builds nothing); `None` when nothing is there
/// or the body is not one JSON document.
fn walk(body: &[u8], segs: &[Seg], want: bool) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let found = Walk { segs, want }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    found
}

/// Follows the rest of the path through one JSON value.
#[derive(Clone, Copy)]
struct Walk<'p> {
    segs: &'p [Seg],
    want: bool,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
        match self.segs.split_first() {
            None if self.want => Value::deserialize(d).map(Some),
            None => IgnoredAny::deserialize(d).map(|_| Some(Value::Null)),
            Some((seg, rest)) => d.deserialize_any(Step {
                seg,
                next: Walk {
                    segs: rest,
                    want: self.want,
                },
            }),
        }
    }
}

/// One value met on the path: an object or array is searched for `seg` (every other
/// member skipped), anything else has nothing at it.
struct Step<'p> {
    seg: &'p Seg,
    next: Walk<'p>,
}

impl<'de> Visitor<'de> for Step<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
        let name = match self.seg {
            Seg::Key(k) => Some(&**k),
            Seg::Index(_) => None,
        };
        let mut found = None;
        while let Some(hit) = map.next_key_seed(KeyIs(name))? {
            if hit {
                // A later duplicate replaces an earlier one, as in the tree.
                found = map.next_value_seed(self.next)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Value>, A::Error> {
        let at = match self.seg {
            Seg::Index(i) => Some(*i),
            Seg::Key(_) => None,
        };
        let mut found = None;
        let mut i = 0usize;
        loop {
            if Some(i) == at {
                match seq.next_element_seed(self.next)? {
                    Some(f) => found = f,
                    None => break,
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                break;
            }
            i += 1;
        }
        Ok(found)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Option<Value>, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Option<Value>, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Option<Value>, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Option<Value>, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Option<Value>, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Option<Value>, E> {
        Ok(None)
    }
}

/// Reads an object's key and says whether it is the one looked for (compared where
/// it lies in the body: nothing is built).
struct KeyIs<'p>(Option<&'p str>);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, s: &str) -> Result<bool, E> {
        Ok(self.0 == Some(s))
    }
}

#[cfg(test)]
mod tests;
