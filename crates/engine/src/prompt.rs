//! Prompts of a set length in tokens (`sse.prompt`), as LLM benchmarks make them
//! (vLLM's `benchmark_serving` random dataset, LLMPerf's `--mean-input-tokens` and
//! `--stddev-input-tokens`, genai-perf's synthetic input tokens): each request's
//! length drawn (fixed, or from a normal distribution), then a synthetic prompt of
//! random words, or the user's prompt cut or padded, fitted to exactly that many
//! tokens by pado's rule ([`pado_base::tokens`]).
//!
//! Reproducible: the length and the words of a request come from a generator
//! seeded by the scenario's `seed`, the VU, its iteration and the step, so the same
//! seed gives every VU's iteration the same prompt in every run, whatever the
//! timing. Random words (not one repeated text) keep a server's prefix cache from
//! answering every prompt after the first.

use pado_scenario::{PromptSpread, PromptTokens, SsePrompt, MAX_PROMPT_TOKENS};

use crate::render::Compiled;

/// The words synthetic prompts are made of: common English words (ASCII, so four
/// characters are a token whatever the words).
const WORDS: [&str; 64] = [
    "the", "sea", "wave", "tide", "harbor", "island", "wind", "ship", "light", "house", "city",
    "bridge", "market", "street", "night", "morning", "river", "mountain", "stone", "road",
    "train", "station", "window", "garden", "summer", "winter", "story", "letter", "music",
    "table", "question", "answer", "plan", "travel", "weather", "coffee", "bread", "fish", "rain",
    "cloud", "north", "south", "east", "west", "quiet", "bright", "slow", "quick", "old", "new",
    "small", "large", "blue", "green", "red", "white", "walk", "read", "write", "listen", "think",
    "build", "open", "close",
];

/// How long each request's prompt is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PromptLength {
    /// Always this many tokens.
    Fixed(u64),
    /// Drawn from a normal distribution, rounded, within 1..=[`MAX_PROMPT_TOKENS`].
    Normal {
        /// Mean, tokens.
        mean: f64,
        /// Standard deviation, tokens.
        stddev: f64,
    },
}

impl PromptLength {
    /// The length of one prompt, drawn from `rng` when it is not fixed.
    pub fn draw(self, rng: &mut fastrand::Rng) -> u64 {
        let n = match self {
            PromptLength::Fixed(n) => return n.clamp(1, MAX_PROMPT_TOKENS),
            PromptLength::Normal { mean, stddev } if stddev <= 0.0 => mean,
            // Box–Muller: two uniform draws make one standard normal one.
            PromptLength::Normal { mean, stddev } => {
                let u1 = 1.0 - rng.f64();
                let u2 = rng.f64();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                mean + stddev * z
            }
        };
        (n.round().max(1.0) as u64).min(MAX_PROMPT_TOKENS)
    }
}

/// A step's `sse.prompt`, compiled.
#[derive(Debug)]
pub struct PromptPlan {
    /// The variable the prompt is put in.
    pub var: usize,
    /// Its length.
    pub length: PromptLength,
    /// The scenario's seed.
    pub seed: u64,
    /// The user's prompt to fit (a template), or `None` for a synthetic one.
    pub text: Option<Compiled>,
}

/// SplitMix64's finaliser: spreads one 64-bit value over all bits.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl PromptPlan {
    /// The plan of `p`, its text compiled by the caller (`var` is the variable's id).
    pub fn new(p: &SsePrompt, var: usize, text: Option<Compiled>) -> PromptPlan {
        let length = match &p.tokens {
            PromptTokens::Fixed(n) => PromptLength::Fixed(*n),
            PromptTokens::Spread(PromptSpread { mean, stddev }) => PromptLength::Normal {
                mean: *mean,
                stddev: *stddev,
            },
        };
        PromptPlan {
            var,
            length,
            seed: p.seed,
            text,
        }
    }

    /// The generator of the prompt of `vu`'s iteration `iter` at step `series`.
    pub fn rng(&self, vu: u64, iter: u64, series: u32) -> fastrand::Rng {
        let s = mix(mix(mix(self.seed) ^ vu) ^ iter) ^ u64::from(series);
        fastrand::Rng::with_seed(mix(s))
    }
}

/// Writes into `out` a prompt of exactly `tokens` tokens: `text` (the user's, may
/// be empty) cut on a character boundary or followed by words drawn from `rng`.
pub fn fill(text: &str, tokens: u64, rng: &mut fastrand::Rng, out: &mut String) {
    pado_base::tokens::fit(text, tokens, out, || WORDS[rng.usize(..WORDS.len())]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_follow_the_asked_distribution_and_the_seed_repeats_them() {
        let plan = |tokens| PromptPlan {
            var: 0,
            length: tokens,
            seed: 7,
            text: None,
        };
        let fixed = plan(PromptLength::Fixed(100));
        assert_eq!(fixed.length.draw(&mut fixed.rng(1, 0, 0)), 100);
        let normal = plan(PromptLength::Normal {
            mean: 550.0,
            stddev: 150.0,
        });
        let draws: Vec<f64> = (0..20_000u64)
            .map(|i| normal.length.draw(&mut normal.rng(i % 50 + 1, i / 50, 3)) as f64)
            .collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let sd =
            (draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / draws.len() as f64).sqrt();
        // 20,000 draws: the mean's standard error is ~1 token, the stddev's ~0.75.
        assert!((mean - 550.0).abs() < 5.0, "mean {mean}");
        assert!((sd - 150.0).abs() < 4.0, "stddev {sd}");
        // Same seed, VU, iteration and step: the same prompt; another VU: another.
        let (mut a, mut b) = (String::new(), String::new());
        let mut r = normal.rng(4, 9, 1);
        let n = normal.length.draw(&mut r);
        fill("", n, &mut r, &mut a);
        let mut r = normal.rng(4, 9, 1);
        assert_eq!(normal.length.draw(&mut r), n);
        fill("", n, &mut r, &mut b);
        assert_eq!(a, b);
        let mut r = normal.rng(5, 9, 1);
        let m = normal.length.draw(&mut r);
        fill("", m, &mut r, &mut b);
        assert_ne!(a, b);
        assert_eq!(pado_base::tokens::count(&a), n);
        // A spread that would go below one token stays at one.
        let tiny = plan(PromptLength::Normal {
            mean: 1.0,
            stddev: 50.0,
        });
        assert!((0..1000).all(|i| tiny.length.draw(&mut tiny.rng(i, 0, 0)) >= 1));
    }

    #[test]
    fn a_users_prompt_is_cut_or_padded_to_the_length() {
        let mut rng = fastrand::Rng::with_seed(1);
        let mut out = String::new();
        // 12 Hangul syllables and 5 spaces: 12 + 2 tokens.
        let text = "부산 여행 일정을 짜 줘요 파도";
        assert_eq!(pado_base::tokens::count(text), 14);
        fill(text, 5, &mut rng, &mut out);
        assert_eq!(out, "부산 여행 ");
        assert_eq!(pado_base::tokens::count(&out), 5);
        fill(text, 1_000, &mut rng, &mut out);
        assert!(out.starts_with(text));
        assert_eq!(pado_base::tokens::count(&out), 1_000);
    }
}
