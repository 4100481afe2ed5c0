//! The quick way of [`super::PathSet::read`]: a scan of the document's bytes that
//! checks its grammar as it goes (skipped values stepped over with a small stack,
//! nothing decoded) and tells what the paths
//! hold. An LLM's token event is ~200 bytes of JSON, and going through serde's
//! visitors cost several thousand instructions per event, more than the rest of
//! a token's way through pado.
//!
//! It never decides alone that a document is not JSON: whenever it meets what it
//! does not read itself (a `\u` escape in a string it must read, a number that is
//! not a plain non-negative integer where a path runs, an escape in an object's
//! key, deep nesting) or anything it finds wrong, it gives up (`None`) and the
//! caller walks the document with `serde_json`, whose answer stands. What it does
//! accept it checks at least as strictly as `serde_json` (strings without control
//! characters and with valid escapes, UTF-8 in the strings a path reads, numbers
//! and literals by the grammar, no trailing commas, nothing after the value).

use super::{mask_where, Leaf, Seg};

/// Most nested containers a skipped value may have before the scan gives up.
const MAX_SKIP_DEPTH: usize = 64;

/// What `paths` (all active: bit `i` for path `i`) hold in `doc`, into `out`
/// (all [`Leaf::Missing`] on entry); `None` when the scan gives up.
pub(super) fn scan(paths: &[Box<[Seg]>], doc: &[u8], out: &mut [Leaf]) -> Option<()> {
    let mut s = Scanner { doc, i: 0 };
    s.ws();
    s.node(paths, 0, (1u64 << paths.len()) - 1, out)?;
    s.ws();
    (s.i == doc.len()).then_some(())
}

struct Scanner<'d> {
    doc: &'d [u8],
    i: usize,
}

/// Whether `b` ends a string's plain run: its closing quote, an escape, or a
/// control character (which JSON refuses in a string).
#[inline]
fn stops_string(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// Whether `text` is UTF-8 (ASCII, as a rule, checked a word at a time).
#[inline]
fn utf8(text: &[u8]) -> bool {
    text.is_ascii() || std::str::from_utf8(text).is_ok()
}

/// Every path of `mask` holds `leaf`.
fn set(out: &mut [Leaf], mask: u64, leaf: Leaf) {
    let mut m = mask;
    while m != 0 {
        out[m.trailing_zeros() as usize] = leaf;
        m &= m - 1;
    }
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

    /// A value where the `active` paths run, at `depth` of them.
    fn node(
        &mut self,
        paths: &[Box<[Seg]>],
        depth: usize,
        active: u64,
        out: &mut [Leaf],
    ) -> Option<()> {
        let ending = mask_where(paths, active, |p| p.len() == depth);
        let deeper = active & !ending;
        match self.peek()? {
            b'{' => {
                set(out, ending, Leaf::Other);
                self.i += 1;
                self.ws();
                if self.peek()? == b'}' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    let key = self.key()?;
                    self.ws();
                    self.expect(b':')?;
                    self.ws();
                    let hit = mask_where(
                        paths,
                        deeper,
                        |p| matches!(&p[depth], Seg::Key(k) if k.as_bytes() == key),
                    );
                    if hit == 0 {
                        self.skip()?;
                    } else {
                        // A later duplicate key replaces what an earlier one held.
                        set(out, hit, Leaf::Missing);
                        self.node(paths, depth + 1, hit, out)?;
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
            b'[' => {
                set(out, ending, Leaf::Other);
                self.i += 1;
                self.ws();
                if self.peek()? == b']' {
                    self.i += 1;
                    return Some(());
                }
                let mut at = 0usize;
                loop {
                    let hit = mask_where(paths, deeper, |p| p[depth] == Seg::Index(at));
                    if hit == 0 {
                        self.skip()?;
                    } else {
                        self.node(paths, depth + 1, hit, out)?;
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
            b'"' => {
                let empty = self.read_string()?;
                set(out, ending, Leaf::Str { empty });
                Some(())
            }
            b'0'..=b'9' => {
                let n = self.read_uint()?;
                set(out, ending, Leaf::U64(n));
                Some(())
            }
            b't' => self
                .literal(b"true")
                .map(|()| set(out, ending, Leaf::Other)),
            b'f' => self
                .literal(b"false")
                .map(|()| set(out, ending, Leaf::Other)),
            b'n' => self
                .literal(b"null")
                .map(|()| set(out, ending, Leaf::Other)),
            // A negative number (or not JSON): left to serde.
            _ => None,
        }
    }

    /// An object's key that a path may name: its bytes (no escapes, valid UTF-8).
    fn key(&mut self) -> Option<&'d [u8]> {
        let d: &'d [u8] = self.doc;
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.i + 1;
        let end = start + d[start..].iter().position(|&b| stops_string(b))?;
        if d[end] != b'"' {
            return None;
        }
        let key = &d[start..end];
        if !utf8(key) {
            return None;
        }
        self.i = end + 1;
        Some(key)
    }

    /// A string a path reads: whether it is empty. Simple escapes are checked;
    /// a `\u` escape (surrogates to pair) gives up; the rest must be UTF-8.
    fn read_string(&mut self) -> Option<bool> {
        let start = self.i + 1;
        let end = self.string_end(start, false)?;
        if !utf8(&self.doc[start..end]) {
            return None;
        }
        self.i = end + 1;
        Some(end == start)
    }

    /// Steps over a string that no path reads (escapes checked, as serde does,
    /// but the text not decoded).
    fn skip_string(&mut self) -> Option<()> {
        let end = self.string_end(self.i + 1, true)?;
        self.i = end + 1;
        Some(())
    }

    /// The closing quote of the string whose text starts at `from`: no control
    /// character before it, every escape valid (`\uXXXX` only when `unicode`).
    fn string_end(&self, mut from: usize, unicode: bool) -> Option<usize> {
        let d = self.doc;
        loop {
            // Strings here are short (keys, ids, a token): a plain loop beats
            // memchr's set-up.
            let at = from + d[from..].iter().position(|&b| stops_string(b))?;
            match d[at] {
                b'"' => return Some(at),
                b'\\' => {}
                _ => return None,
            }
            match *d.get(at + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => from = at + 2,
                b'u' if unicode => {
                    let hex = d.get(at + 2..at + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    from = at + 6;
                }
                _ => return None,
            }
        }
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

    /// Steps over one value no path reads, its containers kept on a small stack.
    fn skip(&mut self) -> Option<()> {
        let mut closers = [0u8; MAX_SKIP_DEPTH];
        let mut depth = 0usize;
        'value: loop {
            self.ws();
            match self.peek()? {
                open @ (b'{' | b'[') => {
                    self.i += 1;
                    self.ws();
                    let close = if open == b'{' { b'}' } else { b']' };
                    if self.peek()? == close {
                        self.i += 1;
                    } else {
                        if depth == MAX_SKIP_DEPTH {
                            return None;
                        }
                        closers[depth] = close;
                        depth += 1;
                        if open == b'{' {
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
                let close = closers[depth - 1];
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        if close == b'}' {
                            self.member_key()?;
                        }
                        continue 'value;
                    }
                    b if b == close => {
                        self.i += 1;
                        depth -= 1;
                    }
                    _ => return None,
                }
            }
        }
    }
}
