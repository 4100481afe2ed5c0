//! A char-safe cursor the key and expression parsers share.

/// A byte position in a string that only ever moves over whole chars.
pub(super) struct Cursor<'a> {
    s: &'a str,
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(s: &'a str) -> Self {
        Cursor { s, pos: 0 }
    }

    pub(super) fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    pub(super) fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    pub(super) fn bump(&mut self) -> Option<char> {
        let ch = self.peek()?;
        self.pos += ch.len_utf8();
        Some(ch)
    }

    pub(super) fn take_while(&mut self, mut pred: impl FnMut(char) -> bool) -> &'a str {
        let start = self.pos;
        while let Some(ch) = self.peek() {
            if !pred(ch) {
                break;
            }
            self.pos += ch.len_utf8();
        }
        &self.s[start..self.pos]
    }

    pub(super) fn skip_ws(&mut self) {
        self.take_while(char::is_whitespace);
    }
}
