//! The parser against the WHATWG standard's examples (§9.2.6) and the cases its
//! rules spell out: line ends, comments, fields without a colon, the one space
//! dropped, multi-line data, ids that persist, `retry`, the BOM, and every split
//! of a stream into pieces giving the same events.

use std::time::Instant;

use super::{SseEvent, SseHandler, SseParser};

/// What a handler saw: (type, data, last id) per event, and when to stop.
#[derive(Default)]
struct Seen {
    events: Vec<(String, String, String)>,
    stop_after: Option<usize>,
}

impl SseHandler for Seen {
    fn event(&mut self, ev: &SseEvent<'_>, _at: Instant) -> bool {
        let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
        self.events.push((s(ev.event), s(ev.data), s(ev.id)));
        self.stop_after.is_none_or(|n| self.events.len() < n)
    }
}

fn parse_pieces(pieces: &[&[u8]]) -> (Seen, SseParser) {
    let mut p = SseParser::new();
    let mut seen = Seen::default();
    let now = Instant::now();
    for piece in pieces {
        if !p.feed(piece, now, &mut seen) {
            break;
        }
    }
    (seen, p)
}

fn parse(stream: &str) -> Vec<(String, String, String)> {
    parse_pieces(&[stream.as_bytes()]).0.events
}

fn ev(t: &str, d: &str, id: &str) -> (String, String, String) {
    (t.into(), d.into(), id.into())
}

#[test]
fn the_standards_stock_example_joins_data_lines_with_lf() {
    assert_eq!(
        parse("data: YHOO\ndata: +2\ndata: 10\n\n"),
        vec![ev("message", "YHOO\n+2\n10", "")]
    );
}

#[test]
fn comments_ids_and_a_final_event_without_blank_line() {
    // The standard's second example: a comment, an event with an id, one without
    // an `id` field (the last id persists), and a last block the stream never
    // ends with a blank line (discarded).
    let s = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n";
    let (seen, p) = parse_pieces(&[s.as_bytes()]);
    assert_eq!(
        seen.events,
        vec![
            ev("message", "first event", "1"),
            ev("message", "second event", "")
        ]
    );
    assert!(p.pending(), "the unterminated third event is left pending");
}

#[test]
fn empty_data_fields_dispatch_empty_and_lf_events() {
    // The standard's third example: `data` alone is an empty value; two of them
    // make "\n"; the final `data:` without a blank line is discarded.
    let (seen, p) = parse_pieces(&[b"data\n\ndata\ndata\n\ndata:"]);
    assert_eq!(
        seen.events,
        vec![ev("message", "", ""), ev("message", "\n", "")]
    );
    assert!(p.pending());
}

#[test]
fn only_one_leading_space_is_dropped() {
    // The standard's fourth example: both blocks are "test".
    assert_eq!(
        parse("data:test\n\ndata: test\n\n"),
        vec![ev("message", "test", ""), ev("message", "test", "")]
    );
    assert_eq!(parse("data:  two\n\n"), vec![ev("message", " two", "")]);
}

#[test]
fn crlf_lf_and_cr_all_end_lines() {
    let want = vec![ev("message", "a\nb", ""), ev("x", "c", "")];
    assert_eq!(
        parse("data: a\r\ndata: b\r\n\r\nevent: x\r\ndata: c\r\n\r\n"),
        want
    );
    assert_eq!(parse("data: a\ndata: b\n\nevent: x\ndata: c\n\n"), want);
    assert_eq!(parse("data: a\rdata: b\r\revent: x\rdata: c\r\r"), want);
}

#[test]
fn a_name_with_a_space_before_the_colon_is_another_field() {
    // `data : x` names the field "data " (ignored); unknown fields are ignored.
    assert_eq!(
        parse("data : ignored\nfoo: bar\n\ndata: kept\n\n"),
        vec![ev("message", "kept", "")]
    );
}

#[test]
fn event_type_applies_to_one_event_and_ids_persist() {
    let s = "id: 7\nevent: open\ndata: one\n\ndata: two\n\nid: \ndata: three\n\n";
    assert_eq!(
        parse(s),
        vec![
            ev("open", "one", "7"),
            ev("message", "two", "7"),
            ev("message", "three", ""),
        ]
    );
}

#[test]
fn an_id_with_nul_is_ignored() {
    assert_eq!(
        parse("id: 1\n\nid: a\0b\ndata: x\n\n"),
        vec![ev("message", "x", "1")]
    );
}

#[test]
fn retry_takes_only_ascii_digits() {
    let (_, p) = parse_pieces(&[b"retry: 10000\n\n"]);
    assert_eq!(p.retry(), Some(10000));
    let (_, p) = parse_pieces(&[b"retry: 10000\n\nretry: one thousand\n\nretry: 5s\n\n"]);
    assert_eq!(p.retry(), Some(10000));
    let (_, p) = parse_pieces(&[b"retry\n\n"]);
    assert_eq!(p.retry(), None);
}

#[test]
fn a_leading_bom_is_skipped_even_split() {
    let want = vec![ev("message", "x", "")];
    assert_eq!(parse("\u{feff}data: x\n\n"), want);
    let (seen, _) = parse_pieces(&[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"]);
    assert_eq!(seen.events, want);
    // Only the first: a second BOM is part of the field name.
    assert_eq!(parse("\u{feff}\u{feff}data: x\n\n"), vec![]);
}

#[test]
fn every_split_into_two_pieces_gives_the_same_events() {
    // CR then LF across pieces is one line end, not two (which would dispatch).
    let s = b"event: a\r\ndata: 1\r\n\r\n: c\rdata: 2\rdata: 3\r\rid: 9\ndata: \xed\x95\x9c\xea\xb8\x80\n\n";
    let whole = parse_pieces(&[s]).0.events;
    assert_eq!(
        whole,
        vec![
            ev("a", "1", ""),
            ev("message", "2\n3", ""),
            ev("message", "한글", "9")
        ]
    );
    for cut in 0..=s.len() {
        let (seen, p) = parse_pieces(&[&s[..cut], &s[cut..]]);
        assert_eq!(seen.events, whole, "split at {cut}");
        assert!(!p.pending(), "split at {cut}");
    }
}

#[test]
fn a_block_without_data_is_not_dispatched() {
    let (seen, p) = parse_pieces(&[b"event: ping\nid: 3\n\n"]);
    assert!(seen.events.is_empty());
    assert!(!p.pending());
    // ...but its id stays for the next event.
    let (seen, _) = parse_pieces(&[b"id: 3\n\ndata: x\n\n"]);
    assert_eq!(seen.events, vec![ev("message", "x", "3")]);
}

#[test]
fn a_stream_cut_mid_line_or_mid_event_is_pending() {
    let (_, p) = parse_pieces(&[b"data: whole\n\ndata: hal"]);
    assert!(p.pending());
    let (_, p) = parse_pieces(&[b"data: whole\n\nevent: x\n"]);
    assert!(p.pending());
    let (seen, p) = parse_pieces(&[b"data: whole\n\n: keep-alive\n"]);
    assert_eq!(seen.events.len(), 1);
    assert!(
        !p.pending(),
        "a comment between events is not an event begun"
    );
}

#[test]
fn the_handler_stops_the_stream() {
    let mut p = SseParser::new();
    let mut seen = Seen {
        stop_after: Some(2),
        ..Default::default()
    };
    let go = p.feed(
        b"data: 1\n\ndata: 2\n\ndata: 3\n\n",
        Instant::now(),
        &mut seen,
    );
    assert!(!go);
    assert!(p.stopped());
    assert_eq!(seen.events.len(), 2);
    assert!(!p.feed(b"data: 4\n\n", Instant::now(), &mut seen));
    assert_eq!(p.events(), 2);
    p.reset();
    assert!(!p.stopped() && !p.pending() && p.events() == 0);
}

#[test]
fn the_parser_reuses_its_buffers() {
    let mut p = SseParser::new();
    let mut seen = Seen::default();
    let s = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
    p.feed(s, Instant::now(), &mut seen);
    // Split, the event's line is copied (whole in its piece, it is not).
    p.feed(&s[..10], Instant::now(), &mut seen);
    p.feed(&s[10..], Instant::now(), &mut seen);
    let caps = (p.data.capacity(), p.line.capacity(), p.event.capacity());
    for _ in 0..100 {
        p.feed(&s[..10], Instant::now(), &mut seen);
        p.feed(&s[10..], Instant::now(), &mut seen);
    }
    assert_eq!(seen.events.len(), 102);
    assert!(p.data.capacity() <= caps.0.max(64));
    assert!(p.line.capacity() <= caps.1.max(64));
    assert_eq!(p.event.capacity(), caps.2);
}

#[test]
fn every_split_into_three_pieces_gives_the_same_events() {
    // One-line events (lent from the piece when whole in it), a two-line one, a
    // Hangul token, and one split between CR and LF.
    let s = "data: {\"t\":\"a\"}\n\ndata: x\ndata: y\n\nevent: e\r\ndata: 파도\r\n\r\ndata:\n\ndata: z\r\r";
    let whole = parse(s);
    assert_eq!(
        whole,
        vec![
            ev("message", "{\"t\":\"a\"}", ""),
            ev("message", "x\ny", ""),
            ev("e", "파도", ""),
            ev("message", "", ""),
            ev("message", "z", ""),
        ]
    );
    let b = s.as_bytes();
    for i in 0..=b.len() {
        for j in i..=b.len() {
            let (seen, p) = parse_pieces(&[&b[..i], &b[i..j], &b[j..]]);
            assert_eq!(seen.events, whole, "split at {i}, {j}");
            assert!(!p.pending(), "split at {i}, {j}");
        }
    }
}

#[test]
fn a_one_line_event_whole_in_its_piece_is_not_copied() {
    let mut p = SseParser::new();
    let mut seen = Seen::default();
    let s = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
    for _ in 0..10 {
        p.feed(s, Instant::now(), &mut seen);
    }
    assert_eq!(seen.events.len(), 10);
    assert_eq!(p.data.capacity(), 0, "handed over from the piece");
    // Cut across pieces, it is kept until its blank line arrives.
    p.feed(&s[..20], Instant::now(), &mut seen);
    assert!(p.pending());
    p.feed(&s[20..], Instant::now(), &mut seen);
    assert_eq!(seen.events.len(), 11);
    assert_eq!(seen.events[10].1, seen.events[0].1);
}
