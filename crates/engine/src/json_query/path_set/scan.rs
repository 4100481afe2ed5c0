//! The quick way of [`super::PathSet::read`]: a scan of the document's bytes that
//! checks its grammar as it goes (skipped values stepped over with a stack of one
//! bit per container, nothing decoded) and tells what the paths hold. An LLM's
//! token event is ~200 bytes of JSON, read for every token: through serde's
//! visitors it cost several thousand instructions, and so did a byte-at-a-time
//! scan that asked every path about every key. Here the paths are a tree built
//! once ([`Trie`]): an object's key is compared only with the keys its node names,
//! and strings (most of an event's bytes) are searched eight bytes at a time for
//! the bytes that end a plain run (a quote, a backslash, a control character),
//! noting on the way whether they were all ASCII.
//!
//! It never decides alone that a document is not JSON: whenever it meets what it
//! does not read itself (a number that is not a plain non-negative integer where a
//! path runs, an escape in an object's key, deep nesting) or anything it finds
//! wrong, it gives up (`None`) and the caller walks the document with
//! `serde_json`, whose answer stands. What it does accept it checks at least as
//! strictly as `serde_json` (strings without control characters and with valid
//! escapes, `\u` escapes of a string a path reads paired as UTF-16 surrogates,
//! UTF-8 in the strings a path reads and the keys of the objects it walks,
//! numbers and literals by the grammar, no trailing commas, nothing after the
//! value).

use super::trie::{Node, Trie};
use super::Leaf;

/// Most nested containers a skipped value may have before the scan gives up (one
/// bit each in the skip's stack).
const MAX_SKIP_DEPTH: u32 = 64;

/// The one string the paths read in a document: where its text starts, where
/// the bytes after its closing quote start, and the paths that end at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct StringAt {
    pub(super) start: usize,
    pub(super) after: usize,
    pub(super) paths: u64,
}

/// What the paths of `trie` hold in `doc`, into `out` (all [`Leaf::Missing`] on
/// entry); `None` when the scan gives up. `Some(Some(at))` when the paths read
/// exactly one string and no later duplicate key replaced an answer: then the
/// answers depend on that string's text only through its emptiness
/// ([`same_but_string`]).
pub(super) fn scan(trie: &Trie, doc: &[u8], out: &mut [Leaf]) -> Option<Option<StringAt>> {
    let mut s = Scanner {
        doc,
        i: 0,
        strings: 0,
        string: None,
        replaced: false,
    };
    s.ws();
    s.node(trie, trie.root(), out)?;
    s.ws();
    (s.i == doc.len()).then_some(s.string.filter(|_| s.strings == 1 && !s.replaced))
}

/// Whether `doc` is `prev` (a document [`scan`] read, its one string at `at`)
/// with only that string's text changed to other valid text: then the scan of
/// `doc` would go as that of `prev` did up to the string, read the string, and go
/// on as it did from the same bytes after it, so its answers are `prev`'s but for
/// the string's emptiness, returned here. An LLM stream's token events are one
/// such document each, differing in the token only, and this costs two byte
/// comparisons and a scan of the token instead of a scan of the event.
pub(super) fn same_but_string(prev: &[u8], at: StringAt, doc: &[u8]) -> Option<bool> {
    let StringAt { start, after, .. } = at;
    if doc.get(..start)? != prev.get(..start)? {
        return None;
    }
    let s = Scanner {
        doc,
        i: start,
        strings: 0,
        string: None,
        replaced: false,
    };
    let (end, ascii) = s.string_end(start, Escapes::Read)?;
    if !ascii && std::str::from_utf8(&doc[start..end]).is_err() {
        return None;
    }
    (doc.get(end + 1..)? == prev.get(after..)?).then_some(end == start)
}

struct Scanner<'d> {
    doc: &'d [u8],
    i: usize,
    /// Strings a path read so far.
    strings: u32,
    /// The last of them.
    string: Option<StringAt>,
    /// A later duplicate key replaced an answer.
    replaced: bool,
}

/// Whether `b` ends a string's plain run: its closing quote, an escape, or a
/// control character (which JSON refuses in a string).
#[inline]
fn stops_string(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// Each byte of a word (8 bytes).
const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of each byte of a word.
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit set of the bytes of `w` that [`stops_string`]; exact from the
/// lowest such byte up to the next (a borrow may mark bytes above a true one,
/// never below), which is all [`Scanner::plain_run`] reads of it.
#[inline]
fn stops_in(w: u64) -> u64 {
    let quote = w ^ (ONES * u64::from(b'"'));
    let slash = w ^ (ONES * u64::from(b'\\'));
    let zero = |x: u64| x.wrapping_sub(ONES) & !x;
    let control = w.wrapping_sub(ONES * 0x20) & !w;
    (zero(quote) | zero(slash) | control) & HIGHS
}

/// The value of four hex digits, when they are.
#[inline]
fn hex4(digits: &[u8]) -> Option<u16> {
    digits.iter().try_fold(0u16, |n, &b| {
        let v = (b as char).to_digit(16)?;
        Some(n << 4 | v as u16)
    })
}

/// Every path of `mask` holds `leaf`.
#[inline]
fn set(out: &mut [Leaf], mask: u64, leaf: Leaf) {
    let mut m = mask;
    while m != 0 {
        out[m.trailing_zeros() as usize] = leaf;
        m &= m - 1;
    }
}

/// Whether a path of `mask` holds anything yet.
#[inline]
fn answered(out: &[Leaf], mask: u64) -> bool {
    let mut m = mask;
    while m != 0 {
        if out[m.trailing_zeros() as usize] != Leaf::Missing {
            return true;
        }
        m &= m - 1;
    }
    false
}

/// How a string's `\u` escapes are checked: as `serde_json` checks a string it
/// reads (surrogates paired) or one it skips (four hex digits).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escapes {
    Read,
    Skip,
}

impl<'d> Scanner<'d> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.doc.get(self.i).copied()
    }

    /// Steps over JSON whitespace.
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// Steps over `byte`, which must come next.
    #[inline]
    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.i += 1)
    }

    /// Steps over `word` (a literal), which must come next.
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.doc[self.i..]
            .starts_with(word)
            .then(|| self.i += word.len())
    }

    /// A value at node `n` of the tree: the paths that end there get what it is,
    /// those that go on look into it.
    fn node(&mut self, t: &Trie, n: &Node, out: &mut [Leaf]) -> Option<()> {
        match self.peek()? {
            b'{' => {
                set(out, n.ends, Leaf::Other);
                self.i += 1;
                self.object(t, n, out)
            }
            b'[' => {
                set(out, n.ends, Leaf::Other);
                self.i += 1;
                self.array(t, n, out)
            }
            b'"' => {
                let start = self.i + 1;
                let empty = self.read_string()?;
                if n.ends != 0 {
                    self.strings += 1;
                    self.string = Some(StringAt {
                        start,
                        after: self.i,
                        paths: n.ends,
                    });
                }
                set(out, n.ends, Leaf::Str { empty });
                Some(())
            }
            b'0'..=b'9' => {
                let v = self.read_uint()?;
                set(out, n.ends, Leaf::U64(v));
                Some(())
            }
            b't' => self
                .literal(b"true")
                .map(|()| set(out, n.ends, Leaf::Other)),
            b'f' => self
                .literal(b"false")
                .map(|()| set(out, n.ends, Leaf::Other)),
            b'n' => self
                .literal(b"null")
                .map(|()| set(out, n.ends, Leaf::Other)),
            // A negative number (or not JSON): left to serde.
            _ => None,
        }
    }

    /// The rest of an object (after its `{`) at node `n`.
    fn object(&mut self, t: &Trie, n: &Node, out: &mut [Leaf]) -> Option<()> {
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let child = self.key(n)?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            match child {
                None => self.skip()?,
                Some(c) => {
                    let c = t.node(c);
                    // A later duplicate key replaces what an earlier one held.
                    self.replaced |= answered(out, c.under);
                    set(out, c.under, Leaf::Missing);
                    self.node(t, c, out)?;
                }
            }
            self.ws();
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    self.ws();
                }
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The rest of an array (after its `[`) at node `n`.
    fn array(&mut self, t: &Trie, n: &Node, out: &mut [Leaf]) -> Option<()> {
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        // The elements paths name, by index: the next one still ahead first.
        let mut named = n.elements();
        let mut at = 0usize;
        loop {
            match named.first() {
                Some(&(x, c)) if x == at => {
                    named = &named[1..];
                    self.node(t, t.node(c), out)?;
                }
                _ => self.skip()?,
            }
            self.ws();
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    self.ws();
                    at += 1;
                }
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A key of an object the paths walk (at node `n`): the node of the member it
    /// names, if a path names it. Keys with escapes are left to serde; the rest
    /// must be UTF-8, as serde reads them.
    fn key(&mut self, n: &Node) -> Option<Option<u32>> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.i + 1;
        let (end, ascii) = self.plain_run(start)?;
        if self.doc[end] != b'"' {
            return None;
        }
        let key = &self.doc[start..end];
        self.i = end + 1;
        let child = n.member(key);
        // A key a path names is its name's bytes: UTF-8 already.
        if child.is_none() && !ascii && std::str::from_utf8(key).is_err() {
            return None;
        }
        Some(child)
    }

    /// Where the plain run of string text starting at `from` ends (the first byte
    /// that [`stops_string`]), and whether the text before it is all ASCII;
    /// `None` when the document ends first. Eight bytes at a time.
    #[inline]
    fn plain_run(&self, mut from: usize) -> Option<(usize, bool)> {
        let d = self.doc;
        let mut highs = 0u64;
        while let Some(word) = d.get(from..from + 8) {
            let w = u64::from_le_bytes(word.try_into().ok()?);
            let stops = stops_in(w);
            if stops != 0 {
                // The first stop is the lowest marked byte; the bytes below it
                // are the run's.
                let first = stops & stops.wrapping_neg();
                let below = (first >> 7).wrapping_sub(1);
                highs |= w & below;
                let at = from + (stops.trailing_zeros() / 8) as usize;
                return Some((at, highs & HIGHS == 0));
            }
            highs |= w;
            from += 8;
        }
        let mut ascii = highs & HIGHS == 0;
        for (k, &b) in d.get(from..)?.iter().enumerate() {
            if stops_string(b) {
                return Some((from + k, ascii));
            }
            ascii &= b.is_ascii();
        }
        None
    }

    /// The closing quote of the string whose text starts at `from` (no control
    /// character before it, every escape valid as `escapes` says), and whether
    /// its raw bytes are all ASCII.
    #[inline]
    fn string_end(&self, from: usize, escapes: Escapes) -> Option<(usize, bool)> {
        let (at, ascii) = self.plain_run(from)?;
        if self.doc[at] == b'"' {
            return Some((at, ascii));
        }
        self.string_end_escaped(at, ascii, escapes)
    }

    /// [`Scanner::string_end`] from `at`, a byte that stopped a plain run and is
    /// not the closing quote (an escape, as a rule).
    fn string_end_escaped(
        &self,
        mut at: usize,
        mut all_ascii: bool,
        escapes: Escapes,
    ) -> Option<(usize, bool)> {
        let d = self.doc;
        loop {
            match d[at] {
                b'"' => return Some((at, all_ascii)),
                b'\\' => {}
                _ => return None,
            }
            let from = match *d.get(at + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => at + 2,
                b'u' => {
                    let unit = hex4(d.get(at + 2..at + 6)?)?;
                    match escapes {
                        Escapes::Read => Self::pair_surrogate(d, unit, at + 6)?,
                        Escapes::Skip => at + 6,
                    }
                }
                _ => return None,
            };
            let (next, ascii) = self.plain_run(from)?;
            all_ascii &= ascii;
            at = next;
        }
    }

    /// After a `\u` escape of `unit` in a string a path reads, ending at `from`:
    /// where the text goes on. A high surrogate must be followed by a `\u` low
    /// surrogate and a low one must not stand alone, as `serde_json` reads a
    /// string (anything else gives up: serde refuses the document).
    #[inline]
    fn pair_surrogate(d: &[u8], unit: u16, from: usize) -> Option<usize> {
        match unit {
            0xD800..=0xDBFF => {
                if d.get(from..from + 2)? != b"\\u" {
                    return None;
                }
                let low = hex4(d.get(from + 2..from + 6)?)?;
                (0xDC00..=0xDFFF).contains(&low).then_some(from + 6)
            }
            0xDC00..=0xDFFF => None,
            _ => Some(from),
        }
    }

    /// A string a path reads: whether it is empty. Escapes are checked as serde
    /// reads them; the rest must be UTF-8.
    fn read_string(&mut self) -> Option<bool> {
        let start = self.i + 1;
        let (end, ascii) = self.string_end(start, Escapes::Read)?;
        if !ascii && std::str::from_utf8(&self.doc[start..end]).is_err() {
            return None;
        }
        self.i = end + 1;
        Some(end == start)
    }

    /// Steps over a string that no path reads (escapes checked, as serde does,
    /// but the text not decoded).
    #[inline]
    fn skip_string(&mut self) -> Option<()> {
        let (end, _) = self.string_end(self.i + 1, Escapes::Skip)?;
        self.i = end + 1;
        Some(())
    }

    /// A number a path reads: a plain non-negative integer that fits a `u64`
    /// (anything else gives up: serde reads it as a float, or refuses it).
    fn read_uint(&mut self) -> Option<u64> {
        let d = self.doc;
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(&b @ b'0'..=b'9') = d.get(self.i) {
            n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            self.i += 1;
        }
        let digits = self.i - start;
        if (d[start] == b'0' && digits > 1) || matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(n)
    }

    /// Steps over a number no path reads, by JSON's grammar.
    fn skip_number(&mut self) -> Option<()> {
        if self.peek()? == b'-' {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => {
                self.i += 1;
                if self.peek().is_some_and(|b| b.is_ascii_digit()) {
                    return None;
                }
            }
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.one_or_more_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            self.one_or_more_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
    }

    fn one_or_more_digits(&mut self) -> Option<()> {
        let start = self.i;
        self.digits();
        (self.i > start).then_some(())
    }

    /// Steps over `"key"`, whitespace and the colon of an object's member.
    fn member_key(&mut self) -> Option<()> {
        self.ws();
        if self.peek()? != b'"' {
            return None;
        }
        self.skip_string()?;
        self.ws();
        self.expect(b':')
    }

    /// Steps over one value no path reads: a scalar here (most skipped values of an
    /// event are), a container by [`Scanner::skip_container`].
    #[inline]
    fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'-' | b'0'..=b'9' => self.skip_number(),
            b'n' => self.literal(b"null"),
            _ => self.skip_container(),
        }
    }

    /// Steps over one value no path reads, its containers kept on a stack of one
    /// bit each (set: an object).
    fn skip_container(&mut self) -> Option<()> {
        let mut objects = 0u64;
        let mut depth = 0u32;
        'value: loop {
            self.ws();
            match self.peek()? {
                open @ (b'{' | b'[') => {
                    self.i += 1;
                    self.ws();
                    let object = open == b'{';
                    let close = if object { b'}' } else { b']' };
                    if self.peek()? == close {
                        self.i += 1;
                    } else {
                        if depth == MAX_SKIP_DEPTH {
                            return None;
                        }
                        objects = objects & !(1 << depth) | u64::from(object) << depth;
                        depth += 1;
                        if object {
                            self.member_key()?;
                        }
                        continue 'value;
                    }
                }
                b'"' => self.skip_string()?,
                b'-' | b'0'..=b'9' => self.skip_number()?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                _ => return None,
            }
            // A value is done: a comma goes on, closers end their containers.
            loop {
                if depth == 0 {
                    return Some(());
                }
                self.ws();
                let object = objects >> (depth - 1) & 1 == 1;
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        if object {
                            self.member_key()?;
                        }
                        continue 'value;
                    }
                    b'}' if object => {
                        self.i += 1;
                        depth -= 1;
                    }
                    b']' if !object => {
                        self.i += 1;
                        depth -= 1;
                    }
                    _ => return None,
                }
            }
        }
    }
}
