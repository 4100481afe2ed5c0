//! Input generation: seed inputs changed by a few stacked random mutations (bit flips,
//! byte inserts and deletes, duplicated and spliced ranges, dictionary tokens,
//! interesting numbers, line-ending changes, long repetitions for deep nesting), all
//! from one seeded [`fastrand::Rng`], so a seed reproduces the same inputs.

/// Tokens every target gets: line endings, NUL, invalid and multi-byte UTF-8, quoting,
/// nesting brackets, JSON and YAML literals.
pub const COMMON_DICT: &[&[u8]] = &[
    b"\r\n",
    b"\n",
    b"\r",
    b"\0",
    b"\r\n\r\n",
    b"\n\n",
    b"\xff\xfe",
    b"\xc3\x28",
    b"\xc3",
    b"\xe2\x82\xac",
    b"\xf0\x9f\x98\x80",
    b"\xed\xa0\x80",
    b"\"",
    b"\\",
    b"\\u0000",
    b"\\ud800",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"=",
    b";",
    b" ",
    b"\t",
    b"null",
    b"true",
    b"false",
    b"ffffffffffffffff",
];

/// Numbers parsers get wrong: boundaries of integer types, hex sizes, huge and
/// non-finite floats, leading zeros, signs.
pub const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "ffffffffffffffff",
    "FFFFFFFFFFFFFFFF",
    "10000000000000000",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "4294967295",
    "4294967296",
    "2147483648",
    "65535",
    "65536",
    "1e308",
    "1e309",
    "-1e309",
    "1e-320",
    "NaN",
    "nan",
    "+Inf",
    "-Inf",
    "inf",
    "0.000001",
    "1.5",
    "000000000000000000001",
    "99999999999999999999999999999",
    "0x10",
    "1_000",
    "",
];

const BYTES: &[u8] = b"\0\r\n\t \"\\{}[]:,#;=-+.0129aAfFzZ\x7f\x80\xbf\xc0\xfe\xff";

/// Makes inputs from a corpus.
pub struct Mutator<'a> {
    rng: fastrand::Rng,
    corpus: &'a [Vec<u8>],
    dict: Vec<&'a [u8]>,
    max_len: usize,
}

impl<'a> Mutator<'a> {
    /// A mutator over `corpus` (at least one entry; an empty corpus starts from empty
    /// input) with the target's extra dictionary, making inputs of at most `max_len`.
    pub fn new(seed: u64, corpus: &'a [Vec<u8>], dict: &'a [&'a [u8]], max_len: usize) -> Self {
        let mut all: Vec<&[u8]> = COMMON_DICT.to_vec();
        all.extend_from_slice(dict);
        Mutator {
            rng: fastrand::Rng::with_seed(seed),
            corpus,
            dict: all,
            max_len: max_len.max(1),
        }
    }

    /// The next input: a corpus entry with one to eight mutations.
    pub fn next_input(&mut self) -> Vec<u8> {
        let mut data = if self.corpus.is_empty() {
            Vec::new()
        } else {
            self.corpus[self.rng.usize(..self.corpus.len())].clone()
        };
        let n = 1usize << self.rng.u32(0..4);
        for _ in 0..n {
            self.mutate(&mut data);
        }
        data.truncate(self.max_len);
        data
    }

    fn pos(&mut self, data: &[u8]) -> usize {
        self.rng.usize(..=data.len())
    }

    fn range(&mut self, data: &[u8]) -> (usize, usize) {
        if data.is_empty() {
            return (0, 0);
        }
        let a = self.rng.usize(..data.len());
        // Mostly short ranges, sometimes long ones.
        let max = if self.rng.u8(..4) == 0 {
            data.len() - a
        } else {
            (data.len() - a).min(16)
        };
        (a, a + self.rng.usize(..=max))
    }

    fn mutate(&mut self, data: &mut Vec<u8>) {
        match self.rng.u8(..13) {
            0 if !data.is_empty() => {
                let i = self.rng.usize(..data.len());
                data[i] ^= 1 << self.rng.u8(..8);
            }
            1 if !data.is_empty() => {
                let i = self.rng.usize(..data.len());
                data[i] = self.byte();
            }
            2 => {
                let at = self.pos(data);
                let n = self.rng.usize(1..=8);
                let bytes: Vec<u8> = (0..n).map(|_| self.byte()).collect();
                data.splice(at..at, bytes);
            }
            3 => {
                let (a, b) = self.range(data);
                data.drain(a..b);
            }
            4 => {
                // Duplicate a range somewhere (repeated fields, lines, chunks).
                let (a, b) = self.range(data);
                let piece = data[a..b].to_vec();
                let at = self.pos(data);
                data.splice(at..at, piece);
            }
            5 => {
                // Splice in a range of another corpus entry.
                if self.corpus.is_empty() {
                    return;
                }
                let other = &self.corpus[self.rng.usize(..self.corpus.len())];
                let (a, b) = self.range(other);
                let at = self.pos(data);
                if self.rng.bool() {
                    data.splice(at..at, other[a..b].iter().copied());
                } else {
                    let end = (at + (b - a)).min(data.len());
                    data.splice(at..end, other[a..b].iter().copied());
                }
            }
            6 | 7 => {
                let tok = self.dict[self.rng.usize(..self.dict.len())];
                let at = self.pos(data);
                data.splice(at..at, tok.iter().copied());
            }
            8 => self.replace_number(data),
            9 => {
                // Line endings: all CRLF to LF, or all LF to CRLF.
                if self.rng.bool() {
                    let mut out = Vec::with_capacity(data.len());
                    let mut i = 0;
                    while i < data.len() {
                        if data[i] == b'\r' && data.get(i + 1) == Some(&b'\n') {
                            i += 1;
                            continue;
                        }
                        out.push(data[i]);
                        i += 1;
                    }
                    *data = out;
                } else {
                    let mut out = Vec::with_capacity(data.len() + data.len() / 8);
                    for (i, b) in data.iter().enumerate() {
                        if *b == b'\n' && (i == 0 || data[i - 1] != b'\r') {
                            out.push(b'\r');
                        }
                        out.push(*b);
                    }
                    *data = out;
                }
            }
            10 => {
                let at = self.pos(data);
                data.truncate(at);
            }
            11 => {
                // A long repetition: deep nesting (`[[[[`, `{{`), huge lines, many fields.
                let tok: Vec<u8> = if self.rng.bool() {
                    self.dict[self.rng.usize(..self.dict.len())].to_vec()
                } else {
                    let (a, b) = self.range(data);
                    data[a..b.min(a + 8)].to_vec()
                };
                if tok.is_empty() {
                    return;
                }
                let room = self.max_len.saturating_sub(data.len()) / tok.len();
                let times = self.rng.usize(..=room.min(5000));
                let at = self.pos(data);
                let rep = tok.repeat(times);
                data.splice(at..at, rep);
            }
            _ => {
                // A whole input from another corpus entry's head and this one's tail.
                if self.corpus.is_empty() {
                    return;
                }
                let other = &self.corpus[self.rng.usize(..self.corpus.len())];
                let cut_other = self.rng.usize(..=other.len());
                let cut = self.pos(data);
                let mut out = other[..cut_other].to_vec();
                out.extend_from_slice(&data[cut..]);
                *data = out;
            }
        }
    }

    fn byte(&mut self) -> u8 {
        if self.rng.bool() {
            BYTES[self.rng.usize(..BYTES.len())]
        } else {
            self.rng.u8(..)
        }
    }

    /// Replace a run of digits (or insert where there is none) with a number from
    /// [`NUMBERS`].
    fn replace_number(&mut self, data: &mut Vec<u8>) {
        let num = NUMBERS[self.rng.usize(..NUMBERS.len())].as_bytes();
        let start = self.pos(data);
        let found = data[start..]
            .iter()
            .position(|b| b.is_ascii_hexdigit())
            .map(|p| start + p);
        match found {
            Some(a) => {
                let len = data[a..]
                    .iter()
                    .position(|b| !(b.is_ascii_hexdigit() || *b == b'.'))
                    .unwrap_or(data.len() - a);
                data.splice(a..a + len, num.iter().copied());
            }
            None => data
                .splice(start..start, num.iter().copied())
                .for_each(drop),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_inputs_and_bounded_length() {
        let corpus = vec![
            b"GET / HTTP/1.1\r\n\r\n".to_vec(),
            b"{\"a\": [1, 2]}".to_vec(),
        ];
        let a: Vec<_> = {
            let mut m = Mutator::new(7, &corpus, &[], 300);
            (0..500).map(|_| m.next_input()).collect()
        };
        let mut m = Mutator::new(7, &corpus, &[], 300);
        for x in &a {
            assert_eq!(&m.next_input(), x);
        }
        assert!(a.iter().all(|x| x.len() <= 300));
        // It does change things: most inputs differ from every seed.
        let changed = a.iter().filter(|x| !corpus.contains(x)).count();
        assert!(changed > 400, "{changed} of 500 changed");
    }
}
