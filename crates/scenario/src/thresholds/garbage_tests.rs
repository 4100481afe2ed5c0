//! The parser on random input: never a panic, and what it accepts reads back the same.

use super::*;
use crate::metric_catalog;

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

fn random_string(rng: &mut fastrand::Rng) -> String {
    let mut s: String = if rng.usize(..2) == 0 {
        SEEDS[rng.usize(..SEEDS.len())].to_string()
    } else {
        String::new()
    };
    // Mutate: insert, delete or replace characters (on char boundaries).
    for _ in 0..rng.usize(1..=8) {
        let mut chars: Vec<char> = s.chars().collect();
        let ch = if rng.usize(..8) == 0 {
            char::from_u32(rng.u32(..0x11_0000)).unwrap_or('?')
        } else {
            ALPHABET[rng.usize(..ALPHABET.len())]
        };
        let at = rng.usize(..=chars.len());
        match rng.usize(..3) {
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
    let mut rng = fastrand::Rng::with_seed(0x9E37_79B9_7F4A_7C15);
    let mut accepted = 0;
    for _ in 0..10_000 {
        let s = random_string(&mut rng);
        let split = rng.usize(..=s.chars().count());
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
