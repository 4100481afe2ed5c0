//! The parser on random input: never a panic, and what it accepts reads back the same.

use super::*;
use crate::metric_catalog;

/// Tiny xorshift64 generator so the fuzz test needs no dependency and is
/// reproducible.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const ALPHABET: &[char] = &[
    'p',
    '(',
    ')',
    '<',
    '>',
    '=',
    '!',
    '{',
    '}',
    ':',
    ',',
    '"',
    '\'',
    '\\',
    ' ',
    '\t',
    '.',
    '0',
    '1',
    '5',
    '9',
    'e',
    'E',
    '+',
    '-',
    '_',
    'a',
    'v',
    'g',
    'm',
    'i',
    'n',
    'x',
    'd',
    'r',
    't',
    'c',
    'o',
    'u',
    's',
    '%',
    '검',
    '색',
    'µ',
    '\u{0}',
    '\u{200b}',
    '\u{10FFFF}',
    '&',
    '|',
];

const SEEDS: &[&str] = &[
    "p(95) < 200",
    "http_req_duration{step:search}: p(99)<300",
    "http_req_failed: rate < 0.01",
    "checks{name:\"a,b\",x:'y'}: rate > 0.99",
    "vus: value <= 1e3",
    "http_reqs{단계:검색}: count >= -5",
    "avg===.5",
];

fn random_string(rng: &mut XorShift) -> String {
    let mut s: String = if rng.below(2) == 0 {
        SEEDS[rng.below(SEEDS.len())].to_string()
    } else {
        String::new()
    };
    // Mutate: insert, delete or replace characters (on char boundaries).
    for _ in 0..rng.below(8) + 1 {
        let mut chars: Vec<char> = s.chars().collect();
        let ch = if rng.below(8) == 0 {
            char::from_u32(rng.below(0x11_0000) as u32).unwrap_or('?')
        } else {
            ALPHABET[rng.below(ALPHABET.len())]
        };
        let at = rng.below(chars.len() + 1);
        match rng.below(3) {
            0 => chars.insert(at, ch),
            1 if at < chars.len() => {
                chars.remove(at);
            }
            _ if at < chars.len() => chars[at] = ch,
            _ => chars.push(ch),
        }
        s = chars.into_iter().collect();
    }
    s
}

#[test]
fn never_panics_on_garbage() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut accepted = 0;
    for _ in 0..10_000 {
        let s = random_string(&mut rng);
        let split = rng.below(s.chars().count() + 1);
        let (a, b) = s.split_at(s.char_indices().nth(split).map_or(s.len(), |(i, _)| i));
        let results = [
            parse_cli(&s),
            parse(a, b),
            parse(DEFAULT_CLI_METRIC, &s),
            parse_object(&s, &s, true),
        ];
        let _ = parse_metric_key(&s).map_err(|e| e.to_string());
        for r in results {
            match r {
                Ok(t) => {
                    accepted += 1;
                    let info = metric_catalog::lookup(&t.metric).expect("known metric");
                    assert!(t.aggregation.applies_to(info.kind), "{s:?}");
                    assert!(t.bound.is_finite(), "{s:?}");
                    assert_eq!(
                        parse_metric_key(&t.metric_key()).unwrap(),
                        (t.metric.clone(), t.tags.clone()),
                        "{s:?}"
                    );
                    let back =
                        parse_cli(&t.to_string()).unwrap_or_else(|e| panic!("{s:?} -> {t}: {e}"));
                    assert_eq!(
                        back,
                        Threshold {
                            abort_on_fail: false,
                            ..t.clone()
                        },
                        "{s:?}"
                    );
                    let _ = t.passes(1.0);
                }
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                }
            }
        }
    }
    assert!(
        accepted > 100,
        "the generator should also produce valid thresholds ({accepted})"
    );
}
