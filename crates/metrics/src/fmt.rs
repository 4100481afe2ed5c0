//! How pado writes numbers for people: milliseconds, percentages, byte sizes, counts
//! and durations. One home for them so the terminal summary, the HTML report, the
//! exports, the live progress line and the analysis' sentences agree on the same
//! figure, and a change of precision is made once.
//!
//! These are presentation helpers only: result files keep the raw numbers.

/// Microseconds (how samples and histograms store time) as fractional milliseconds
/// (how every report shows it).
pub fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Milliseconds with a precision that fits the magnitude (`0.412`, `12.35`, `240.5`,
/// `12034`), so a column of latencies stays readable from microseconds to minutes.
pub fn ms(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v < 1.0 {
        format!("{v:.3}")
    } else if v < 100.0 {
        format!("{v:.2}")
    } else if v < 10_000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Milliseconds at microsecond precision without trailing zeros (`12.5`, `3`): for
/// machine-read exports, where nothing must be rounded away.
pub fn ms_exact(v: f64) -> String {
    format!("{v:.3}")
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

/// Microseconds as milliseconds with two decimals and the unit (`12.35 ms`): for one
/// request's timings, where every phase gets the same precision.
pub fn ms_of_us(us: u64) -> String {
    format!("{:.2} ms", us_to_ms(us))
}

/// Milliseconds with their unit and at most one decimal (`4.2 ms`, `37 ms`): for
/// sentences, where a rough figure reads better than a precise one.
pub fn ms_short(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.0} ms")
    }
}

/// A number without trailing zeros (`0.0007`, `20.015`, `3`): how a threshold's value
/// or a limit is written back, as close as possible to how the user wrote it.
pub fn plain(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// A value of any unit with precision by magnitude (`1234`, `12.35`, `0.412`), `-`
/// when missing: for tables that put different metrics in one column.
pub fn value(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 1.0 => format!("{x:.2}"),
        Some(x) => format!("{x:.3}"),
    }
}

/// A rate per second: whole above 100 (`1234`), one decimal below (`12.5`).
pub fn rate(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// `part` as a percentage of `whole` (0 when `whole` is 0, never NaN).
pub fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// A fraction (0.42) as a whole percentage (`42%`): for sentences about shares.
pub fn percent(fraction: f64) -> String {
    format!("{:.0}%", fraction * 100.0)
}

/// A fraction (0.0123) as a percentage with two decimals (`1.23%`): for error rates,
/// where 0.01% matters.
pub fn percent2(fraction: f64) -> String {
    format!("{:.2}%", fraction * 100.0)
}

/// `1234567` -> `1,234,567`: counts people compare by eye.
pub fn thousands(n: u64) -> String {
    let mut buf = itoa::Buffer::new();
    let s = buf.format(n);
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

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

/// Bytes in B/kB/MB/GB, decimal units as k6 writes traffic (`512 B`, `4.1 kB`).
pub fn bytes(n: u64) -> String {
    let f = n as f64;
    if f < 1e3 {
        format!("{n} B")
    } else if f < 1e6 {
        format!("{:.1} kB", f / 1e3)
    } else if f < 1e9 {
        format!("{:.1} MB", f / 1e6)
    } else {
        format!("{:.2} GB", f / 1e9)
    }
}

/// A memory size in binary units, whole MiB below a GiB (`512 MiB`, `3.5 GiB`): how
/// heaps and machines' memory are usually read on dashboards.
pub fn memory(bytes: f64) -> String {
    const GI: f64 = 1024.0 * MIB;
    if bytes >= GI {
        format!("{:.1} GiB", bytes / GI)
    } else {
        format!("{:.0} MiB", bytes / MIB)
    }
}

/// Bytes in a mebibyte: memory in charts and comparisons is given in MiB.
pub const MIB: f64 = 1024.0 * 1024.0;

/// A configured size in exact binary units when one divides it (`16 MiB`, `4 KiB`),
/// bytes otherwise (`1000 bytes`): how the scenario file's sizes are written, so a
/// message names the limit the way the user set it.
pub fn size_exact(n: u64) -> String {
    for (unit, m) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if n >= m && n.is_multiple_of(m) {
            return format!("{} {unit}", n / m);
        }
    }
    format!("{n} bytes")
}

/// A VU count in words: `1 VU`, `150 VUs` (rounded to whole VUs; averages are
/// fractional).
pub fn vus(n: f64) -> String {
    let n = n.round();
    if n == 1.0 {
        "1 VU".into()
    } else {
        format!("{n:.0} VUs")
    }
}

/// Seconds as a run length: `12.3s`, `10m05s`, `4h00m00s`.
pub fn duration(s: f64) -> String {
    if s < 60.0 {
        return format!("{s:.1}s");
    }
    let t = s.round() as u64;
    let (h, m, sec) = (t / 3600, (t % 3600) / 60, t % 60);
    if h > 0 {
        format!("{h}h{m:02}m{sec:02}s")
    } else {
        format!("{m}m{sec:02}s")
    }
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
    fn milliseconds() {
        assert_eq!(us_to_ms(1500), 1.5);
        assert_eq!(ms(0.0), "0");
        assert_eq!(ms(0.4123), "0.412");
        assert_eq!(ms(12.345), "12.35");
        assert_eq!(ms(240.53), "240.5");
        assert_eq!(ms(12_034.4), "12034");
        assert_eq!(ms_exact(12.5), "12.5");
        assert_eq!(ms_exact(3.0), "3");
        assert_eq!(ms_exact(0.0004), "0");
        assert_eq!(ms_of_us(12_345), "12.35 ms");
        assert_eq!(ms_of_us(0), "0.00 ms");
        assert_eq!(ms_short(4.23), "4.2 ms");
        assert_eq!(ms_short(37.4), "37 ms");
    }

    #[test]
    fn plain_values_and_rates() {
        assert_eq!(plain(3.0), "3");
        assert_eq!(plain(0.0007), "0.0007");
        assert_eq!(plain(20.015), "20.015");
        assert_eq!(plain(-2.5), "-2.5");
        assert_eq!(value(None), "-");
        assert_eq!(value(Some(1234.4)), "1234");
        assert_eq!(value(Some(-12.345)), "-12.35");
        assert_eq!(value(Some(0.4123)), "0.412");
        assert_eq!(rate(1234.4), "1234");
        assert_eq!(rate(12.54), "12.5");
    }

    #[test]
    fn percentages() {
        assert_eq!(pct(1, 4), 25.0);
        assert_eq!(pct(1, 0), 0.0);
        assert_eq!(percent(0.424), "42%");
        assert_eq!(percent2(0.0123), "1.23%");
        assert_eq!(percent2(0.0), "0.00%");
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

    #[test]
    fn counts_and_sizes() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(4_100), "4.1 kB");
        assert_eq!(bytes(12_300_000), "12.3 MB");
        assert_eq!(bytes(2_500_000_000), "2.50 GB");
        assert_eq!(memory(512.0 * 1024.0 * 1024.0), "512 MiB");
        assert_eq!(memory(3.5 * 1024.0 * 1024.0 * 1024.0), "3.5 GiB");
        assert_eq!(size_exact(16 << 20), "16 MiB");
        assert_eq!(size_exact(4096), "4 KiB");
        assert_eq!(size_exact(1000), "1000 bytes");
        assert_eq!(vus(1.0), "1 VU");
        assert_eq!(vus(149.6), "150 VUs");
        assert_eq!(vus(0.0), "0 VUs");
    }

    #[test]
    fn durations() {
        assert_eq!(duration(12.34), "12.3s");
        assert_eq!(duration(605.0), "10m05s");
        assert_eq!(duration(4.0 * 3600.0), "4h00m00s");
    }
}
