//! Several simple JSONPaths (names and indexes only) answered in one walk of a JSON
//! document, saying what kind of value each path holds without building it: an
//! LLM stream's every event is read for its token text (`choices[0].delta.content`,
//! or the user's `token_path`) and the server's count of tokens (`usage`), and at
//! tens of thousands of events a second the allocation of each token's text (a
//! `serde_json::Value::String`) and a second walk for the count showed in the
//! CPU per token.
//!
//! The answers are those of [`super::JsonQuery::first`] on the same document,
//! down to a key given twice (the last one counts) and a document that is not one
//! JSON value (nothing at any path); only the kinds [`Leaf`] names are told apart.
//! A quick scan of the bytes answers most documents ([`scan`], over the paths
//! merged into a tree once: [`trie`]); what it does not read itself goes through
//! `serde_json`'s visitors. A stream's next event, the last one's bytes but for
//! its token as a rule, is answered from the last one without a scan
//! ([`PathSet::read_after`]).

mod scan;
mod trie;

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{JsonQuery, Seg};

/// Most paths one set walks at once (the paths still to follow are a bit mask).
pub const MAX_PATHS: usize = 8;

/// What a path holds in one document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaf {
    /// Nothing (no such member or element, or the document is not JSON).
    Missing,
    /// A string; whether it is empty (an escape always stands for a character, so
    /// this is read from the string's bytes as they lie in the document).
    Str {
        /// The string is `""`.
        empty: bool,
    },
    /// A non-negative integer that fits in a `u64` (what `Value::as_u64` reads).
    U64(u64),
    /// Any other value: `null`, a boolean, a negative or fractional number, an
    /// object, an array.
    Other,
}

/// The last document a reader's [`PathSet::read_after`] scanned, when the paths
/// read one string in it: its bytes (the buffer kept), where that string lay,
/// the answers, and the set that read it.
#[derive(Debug)]
pub struct LastRead {
    /// The address of the set that read it (compared, never followed).
    set: usize,
    doc: Vec<u8>,
    string: Option<scan::StringAt>,
    out: [Leaf; MAX_PATHS],
}

impl Default for LastRead {
    fn default() -> Self {
        LastRead {
            set: 0,
            doc: Vec::new(),
            string: None,
            out: [Leaf::Missing; MAX_PATHS],
        }
    }
}

impl LastRead {
    /// Forget the last document (a new series begins).
    pub fn clear(&mut self) {
        self.string = None;
    }
}

/// Simple paths compiled to be walked together.
#[derive(Debug)]
pub struct PathSet {
    paths: Box<[Box<[Seg]>]>,
    /// The paths as the quick scan walks them.
    trie: trie::Trie,
}

impl PathSet {
    /// The set of `queries`, in order (their answers come back in this order);
    /// `None` when one of them is not a simple path (names and indexes), or there
    /// are more than [`MAX_PATHS`]: the caller queries those one by one.
    pub fn new(queries: &[&JsonQuery]) -> Option<PathSet> {
        if queries.len() > MAX_PATHS {
            return None;
        }
        let paths = queries
            .iter()
            .map(|q| q.0.simple.as_ref().map(|s| s.iter().cloned().collect()))
            .collect::<Option<Box<[_]>>>()?;
        let trie = trie::Trie::new(&paths);
        Some(PathSet { paths, trie })
    }

    /// How many paths the set holds.
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// What each path holds in `doc`, into `out` (one [`Leaf`] per path, in the
    /// set's order; `out` has at least [`PathSet::len`] places). The quick scan
    /// allocates nothing; the serde way, nothing for strings without escapes.
    pub fn read(&self, doc: &[u8], out: &mut [Leaf]) {
        let out = &mut out[..self.paths.len()];
        out.fill(Leaf::Missing);
        if scan::scan(&self.trie, doc, out).is_some() {
            return;
        }
        out.fill(Leaf::Missing);
        self.read_by_serde(doc, out);
    }

    /// [`PathSet::read`] for one of a series of documents that mostly differ in
    /// one string (an LLM stream's events, differing in their token): `last`
    /// keeps the last document scanned and where its one string lay, and a
    /// document that is it with only that string's text changed is answered from
    /// it ([`scan::same_but_string`]) without a scan. The answers are
    /// [`PathSet::read`]'s. `last` is the reader's own (a VU's), cleared for
    /// each series; its buffer is kept.
    pub fn read_after(&self, doc: &[u8], out: &mut [Leaf], last: &mut LastRead) {
        let out = &mut out[..self.paths.len()];
        let me = self as *const PathSet as usize;
        if let Some(at) = last.string.filter(|_| last.set == me) {
            if let Some(empty) = scan::same_but_string(&last.doc, at, doc) {
                out.copy_from_slice(&last.out[..out.len()]);
                let mut m = at.paths;
                while m != 0 {
                    out[m.trailing_zeros() as usize] = Leaf::Str { empty };
                    m &= m - 1;
                }
                return;
            }
        }
        out.fill(Leaf::Missing);
        match scan::scan(&self.trie, doc, out) {
            // The last document stays the one to compare with when this one
            // cannot be (a stream's last events, an event the scan left to
            // serde): the next token event is like it still.
            Some(Some(at)) => {
                last.set = me;
                last.string = Some(at);
                last.doc.clear();
                last.doc.extend_from_slice(doc);
                last.out[..out.len()].copy_from_slice(out);
            }
            Some(None) => {}
            None => {
                out.fill(Leaf::Missing);
                self.read_by_serde(doc, out);
            }
        }
    }

    /// [`PathSet::read`] through `serde_json`'s visitors: what the quick scan
    /// leaves to it, and the truth the scan is tested against.
    fn read_by_serde(&self, doc: &[u8], out: &mut [Leaf]) {
        // At most MAX_PATHS (< 64) paths: one bit each.
        let all = (1u64 << self.paths.len()) - 1;
        let mut de = serde_json::Deserializer::from_slice(doc);
        let walked = Node {
            paths: &self.paths,
            depth: 0,
            active: all,
            out: &mut *out,
        }
        .deserialize(&mut de)
        .and_then(|()| de.end());
        if walked.is_err() {
            out.fill(Leaf::Missing);
        }
    }
}

/// One value met at `depth`: the `active` paths run through it (bit `i` for path
/// `i`); those that end here get what it is, the others look into it.
struct Node<'o, 'p> {
    paths: &'p [Box<[Seg]>],
    depth: usize,
    active: u64,
    out: &'o mut [Leaf],
}

impl Node<'_, '_> {
    /// The active paths that end at this value.
    fn ending(&self) -> u64 {
        mask_where(self.paths, self.active, |p| p.len() == self.depth)
    }

    /// Every active path that ends here holds `leaf`.
    fn set(&mut self, leaf: Leaf) {
        let mut m = self.ending();
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            self.out[i] = leaf;
            m &= m - 1;
        }
    }
}

/// The paths among `active` for which `f` holds.
fn mask_where(paths: &[Box<[Seg]>], active: u64, f: impl Fn(&[Seg]) -> bool) -> u64 {
    let mut m = active;
    let mut out = 0;
    while m != 0 {
        let i = m.trailing_zeros() as usize;
        if f(&paths[i]) {
            out |= 1 << i;
        }
        m &= m - 1;
    }
    out
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.set(Leaf::Other);
        let deeper = self.active & !self.ending();
        let depth = self.depth;
        while let Some(hit) = map.next_key_seed(KeyMatch {
            paths: self.paths,
            depth,
            active: deeper,
        })? {
            if hit == 0 {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            // A later duplicate key replaces what an earlier one held, as in the
            // tree: its paths start again from nothing.
            let mut m = hit;
            while m != 0 {
                self.out[m.trailing_zeros() as usize] = Leaf::Missing;
                m &= m - 1;
            }
            map.next_value_seed(Node {
                paths: self.paths,
                depth: depth + 1,
                active: hit,
                out: &mut *self.out,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.set(Leaf::Other);
        let deeper = self.active & !self.ending();
        let depth = self.depth;
        let mut i = 0usize;
        loop {
            let hit = mask_where(self.paths, deeper, |p| p[depth] == Seg::Index(i));
            let more = if hit == 0 {
                seq.next_element::<IgnoredAny>()?.is_some()
            } else {
                seq.next_element_seed(Node {
                    paths: self.paths,
                    depth: depth + 1,
                    active: hit,
                    out: &mut *self.out,
                })?
                .is_some()
            };
            if !more {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_str<E>(mut self, s: &str) -> Result<(), E> {
        self.set(Leaf::Str {
            empty: s.is_empty(),
        });
        Ok(())
    }

    fn visit_u64<E>(mut self, v: u64) -> Result<(), E> {
        self.set(Leaf::U64(v));
        Ok(())
    }

    fn visit_i64<E>(mut self, v: i64) -> Result<(), E> {
        self.set(u64::try_from(v).map_or(Leaf::Other, Leaf::U64));
        Ok(())
    }

    fn visit_f64<E>(mut self, _: f64) -> Result<(), E> {
        self.set(Leaf::Other);
        Ok(())
    }

    fn visit_bool<E>(mut self, _: bool) -> Result<(), E> {
        self.set(Leaf::Other);
        Ok(())
    }

    fn visit_unit<E>(mut self) -> Result<(), E> {
        self.set(Leaf::Other);
        Ok(())
    }
}

/// Reads an object's key and says which of the `active` paths name it at `depth`
/// (compared where it lies in the document: nothing is built).
struct KeyMatch<'p> {
    paths: &'p [Box<[Seg]>],
    depth: usize,
    active: u64,
}

impl<'de> DeserializeSeed<'de> for KeyMatch<'_> {
    type Value = u64;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyMatch<'_> {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, s: &str) -> Result<u64, E> {
        let depth = self.depth;
        Ok(mask_where(
            self.paths,
            self.active,
            |p| matches!(&p[depth], Seg::Key(k) if **k == *s),
        ))
    }
}

#[cfg(test)]
mod tests;
