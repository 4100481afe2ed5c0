//! Text as pado prints it in a terminal: how many columns a string takes (Hangul
//! takes two), one table cell cut and padded to its width, and text from elsewhere
//! made safe to print (control characters escaped). One home, so every table of the
//! terminal summary, the comparison and the trend aligns and escapes the same way.

/// Columns `s` takes in a terminal: Hangul and other wide characters take two, so a
/// table padded by character count would lose its alignment on Korean step names.
/// Measured as [`cell`] prints it: control characters escaped
/// ([`terminal_safe_line`]), so a column sized by it fits its cells.
pub fn columns(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(&*terminal_safe_line(s))
}

/// `s` made safe to print on a terminal: every control character except `\n` and
/// `\t` — ESC, BEL, CR, backspace, DEL and the C1 controls (U+0080–U+009F) — is
/// shown as an escape such as `\x1b` or `\u{9b}`, so that text from elsewhere (a
/// run's name, a generator's output, a hostile server's words) can neither move the
/// cursor, rewrite earlier lines, change the title nor hide itself. Every printable
/// character, Hangul included, is kept as it is; text with nothing to escape is
/// borrowed, not copied.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !unsafe_char(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    std::borrow::Cow::Owned(out)
}

/// [`terminal_safe`] for one line: a `\n` or `\t` is escaped too, so a name stays
/// on its row of a table.
pub fn terminal_safe_line(s: &str) -> std::borrow::Cow<'_, str> {
    match terminal_safe(s) {
        std::borrow::Cow::Borrowed(b) if !b.contains(['\n', '\t']) => std::borrow::Cow::Borrowed(b),
        c => std::borrow::Cow::Owned(c.replace('\n', "\\n").replace('\t', "\\t")),
    }
}

/// `s` cut to at most `cols` terminal columns (ending in `…` when cut) and padded
/// with spaces to exactly `cols`: one cell of a text table, aligned whatever script
/// the name is written in. Control characters are escaped ([`terminal_safe_line`]):
/// a cell's text is often a name someone else chose.
pub fn cell(s: &str, cols: usize) -> String {
    let s = &*terminal_safe_line(s);
    let mut out = String::with_capacity(s.len() + cols);
    if columns(s) <= cols {
        out.push_str(s);
    } else {
        let room = cols.saturating_sub(1);
        let mut used = 0;
        for c in s.chars() {
            let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used + w > room {
                break;
            }
            used += w;
            out.push(c);
        }
        if cols > 0 {
            out.push('…');
        }
    }
    let pad = cols.saturating_sub(columns(&out));
    out.extend(std::iter::repeat_n(' ', pad));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_safe_escapes_controls_and_keeps_printable_text() {
        // ESC (a colour and a title change), BEL, CR (rewrites the line), backspace, DEL.
        assert_eq!(
            terminal_safe("a\x1b[31mred\x1b]0;pwn\x07\rb\x08\x7f"),
            "a\\x1b[31mred\\x1b]0;pwn\\x07\\rb\\x08\\x7f".replace("\\r", "\\x0d")
        );
        // C1 controls: CSI (U+009B) and NEL (U+0085).
        assert_eq!(terminal_safe("x\u{9b}2Jy\u{85}"), "x\\u{9b}2Jy\\u{85}");
        // Hangul, emoji, `\n` and `\t` kept, and borrowed when nothing changes.
        let kept = "파도 검색 🌊\tp95\nok";
        assert!(matches!(terminal_safe(kept), std::borrow::Cow::Borrowed(_)));
        assert_eq!(terminal_safe(kept), kept);
        assert_eq!(terminal_safe_line(kept), "파도 검색 🌊\\tp95\\nok");
        assert_eq!(terminal_safe_line("파도\x1b"), "파도\\x1b");
        // A table cell escapes too, and is still padded to its width.
        assert_eq!(cell("a\x1bb", 8), "a\\x1bb  ");
        assert_eq!(columns("a\x1bb"), 6);
        assert_eq!(cell("a\x1bb", columns("a\x1bb")), "a\\x1bb");
    }

    #[test]
    fn cells_align_by_terminal_columns() {
        assert_eq!(columns("검색"), 4);
        assert_eq!(cell("검색", 6), "검색  ");
        assert_eq!(cell("abc", 5), "abc  ");
        assert_eq!(columns(&cell("게시판 목록 조회", 8)), 8);
        assert_eq!(cell("게시판 목록 조회", 8), "게시판 …");
        assert_eq!(cell("abcdef", 4), "abc…");
        assert_eq!(
            columns(&cell("가나다", 4)),
            4,
            "a wide char that does not fit is left out"
        );
    }
}
