//! pado's one rule for how many tokens a text is, without a tokenizer: about four
//! characters of ASCII text make a token, and every other character (a Hangul
//! syllable, a CJK character, an accented letter) is a token of its own, close to
//! what common LLM vocabularies give. The load side sizes prompts with it
//! (`sse.prompt`, `llm_input_tokens`) and the demo target's LLM counts prompts with
//! it, so the tokens pado says it sent are the tokens the demo target saw. A real
//! server's tokenizer differs by some percent; what matters in a load test is that
//! a prompt twice as long costs twice the prefill.
//!
//! Fitting a text to a length ([`fit`]) keeps whole characters (UTF-8 is never cut
//! inside a character) and pads with ASCII words, which move the count by exactly
//! one token every four characters, so any length can be hit exactly.

/// Characters of ASCII text per token.
pub const ASCII_CHARS_PER_TOKEN: u64 = 4;

/// Tokens of `text`: `⌈ASCII characters / 4⌉ + other characters` (0 for an empty
/// text).
pub fn count(text: &str) -> u64 {
    let (ascii, other) = split(text);
    ascii.div_ceil(ASCII_CHARS_PER_TOKEN) + other
}

/// ASCII and other characters of `text`.
fn split(text: &str) -> (u64, u64) {
    text.chars().fold(
        (0, 0),
        |(a, o), c| {
            if c.is_ascii() {
                (a + 1, o)
            } else {
                (a, o + 1)
            }
        },
    )
}

/// Writes into `out` (cleared first) `text` fitted to exactly `tokens` tokens by
/// [`count`]: a longer text is cut after its last whole character that keeps it
/// within `tokens`, a shorter one is followed by a space and words from `pad`
/// (called for each next word, e.g. a seeded random pick) cut to the exact
/// length. `pad` must give non-empty ASCII words.
pub fn fit(text: &str, tokens: u64, out: &mut String, mut pad: impl FnMut() -> &'static str) {
    out.clear();
    let (mut ascii, mut other) = (0u64, 0u64);
    for c in text.chars() {
        let (a, o) = if c.is_ascii() {
            (ascii + 1, other)
        } else {
            (ascii, other + 1)
        };
        if a.div_ceil(ASCII_CHARS_PER_TOKEN) + o > tokens {
            break;
        }
        (ascii, other) = (a, o);
        out.push(c);
    }
    let have = ascii.div_ceil(ASCII_CHARS_PER_TOKEN) + other;
    if have >= tokens {
        return;
    }
    // ASCII characters the text needs in all to reach `tokens`: the other
    // characters count one each, so that is 4 × (tokens − other), more than it has.
    let want = ASCII_CHARS_PER_TOKEN * (tokens - other);
    let mut sep = !out.is_empty();
    while ascii < want {
        let word = if sep { " " } else { pad() };
        sep = !sep;
        let room = (want - ascii) as usize;
        let take = word.len().min(room);
        out.push_str(&word[..take]);
        ascii += take as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> impl FnMut() -> &'static str {
        let mut i = 0;
        move || {
            i += 1;
            ["wave", "sea", "tide", "harbor"][i % 4]
        }
    }

    #[test]
    fn four_ascii_characters_or_one_other_make_a_token() {
        assert_eq!(count(""), 0);
        assert_eq!(count("abcd"), 1);
        assert_eq!(count("abcde"), 2);
        assert_eq!(count("파도가 온다"), 5 + 1);
        assert_eq!(count(&"a".repeat(4_000)), 1_000);
    }

    #[test]
    fn a_text_fits_any_length_exactly_and_keeps_whole_characters() {
        let mut out = String::new();
        for text in [
            "",
            "Plan a trip to Busan",
            "부산 여행 일정을 짜 줘, please, with 3 days in Haeundae",
            "파도파도파도파도파도파도",
        ] {
            for n in [1u64, 3, 7, 12, 100, 1_000] {
                fit(text, n, &mut out, words());
                assert_eq!(count(&out), n, "{text:?} → {n}: {out:?}");
                // Trimmed: a prefix of the text; padded: the text, then words.
                if count(text) >= n {
                    assert!(text.starts_with(out.as_str()), "{text:?} {n} {out:?}");
                } else {
                    assert!(out.starts_with(text), "{text:?} {n} {out:?}");
                }
            }
        }
        // Hangul cut on a character boundary, never inside one.
        fit("파도가 온다", 2, &mut out, words());
        assert_eq!(out, "파도");
        fit("", 3, &mut out, words());
        assert_eq!(out, "sea tide har");
    }
}
