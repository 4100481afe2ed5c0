//! The text form of a histogram in a timeline: HdrHistogram V2 (varint, zero-run
//! encoding of the counts by slot), base64.
//!
//! pado writes the plain V2 form. Before 0.1 it wrote the V2 *deflate* form, which is
//! still read; histograms of other parameters than pado's (another tool's) are read
//! through the `hdrhistogram` crate. Not deflated: a second's histogram is a few
//! hundred bytes, deflate saved about a quarter of them, and inflating a new zlib
//! stream for each was most of the time of reading a timeline.

use base64::Engine as _;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::{layout, LatencyHistogram};

/// HdrHistogram V2 compressed cookie (with the 8-byte word size bits): the form
/// earlier pado wrote.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// The plain V2 cookie: the form pado writes, and the inner one of the compressed form.
pub(super) const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
/// Bytes of the V2 header before the counts.
const V2_HEADER: usize = 40;
/// Significant digits of every pado histogram.
const SIGFIG: u32 = 3;

thread_local! {
    /// Encoding buffers, reused: writing a timeline encodes tens of histograms a
    /// second.
    static ENCODE_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    static DECODER: std::cell::RefCell<HistogramDecoder> =
        std::cell::RefCell::new(HistogramDecoder::default());
}

impl LatencyHistogram {
    /// Compact text form: HdrHistogram V2 plain, base64. Exact, and read by any
    /// HdrHistogram V2 decoder. An error when a count is too large for the format
    /// (above 2^63): never written as an empty histogram, which would silently lose
    /// its samples.
    pub fn encode(&self) -> Result<String, String> {
        ENCODE_BUF.with(|cell| {
            let buf = &mut *cell.borrow_mut();
            self.encode_into(buf)?;
            Ok(base64::engine::general_purpose::STANDARD.encode(&buf[..]))
        })
    }

    /// The V2 bytes (what HdrHistogram's `V2Serializer` writes for the same counts).
    fn encode_into(&self, buf: &mut Vec<u8>) -> Result<(), String> {
        buf.clear();
        buf.extend_from_slice(&V2_COOKIE.to_be_bytes());
        buf.extend_from_slice(&0u32.to_be_bytes()); // payload length, below
        buf.extend_from_slice(&0u32.to_be_bytes()); // normalising offset
        buf.extend_from_slice(&SIGFIG.to_be_bytes());
        buf.extend_from_slice(&1u64.to_be_bytes()); // lowest discernible value
        let len = if self.total == 0 {
            0
        } else {
            layout::len_for(self.max_idx)
        };
        buf.extend_from_slice(&layout::high_for(len).to_be_bytes());
        buf.extend_from_slice(&1.0f64.to_bits().to_be_bytes());
        if self.total == 0 {
            // HdrHistogram writes the one slot its (zero) maximum is counted at.
            buf.push(0);
        } else {
            // The slots below the lowest count are one run of zeros (a single zero
            // is written as a count of 0, as HdrHistogram does).
            match self.min_idx {
                0 => {}
                1 => buf.push(0),
                n => put_varint(buf, zigzag(-(n as i64))),
            }
            let filled = self.filled();
            // Room made once (a varint is at most 9 bytes; most counts take one).
            buf.reserve(9 * filled.len());
            let mut too_large = false;
            let mut at = 0;
            while at < filled.len() {
                let c = filled[at];
                at += 1;
                let zz = if c != 0 {
                    too_large |= i64::try_from(c).is_err();
                    zigzag(c as i64)
                } else {
                    let next = next_count(filled, at);
                    let zeros = (next - at + 1) as i64;
                    at = next;
                    zigzag(if zeros > 1 { -zeros } else { 0 })
                };
                if zz < 0x80 {
                    buf.push(zz as u8);
                } else {
                    put_varint(buf, zz);
                }
            }
            if too_large {
                return Err(format!(
                    "histogram of {} values does not encode: a count above 2^63",
                    self.total
                ));
            }
        }
        let payload = (buf.len() - V2_HEADER) as u32;
        buf[4..8].copy_from_slice(&payload.to_be_bytes());
        Ok(())
    }

    /// The same counts as the `hdrhistogram` crate's histogram (three significant
    /// digits, auto-resizing): what other tools' formats are written from, such as
    /// HdrHistogram's interval log with its deflate-compressed V2 histograms, the
    /// only form HdrHistogram's reference Python decoder reads. pado's layout is the
    /// crate's, so each count lands in the same slot: exact.
    pub fn to_hdrhistogram(&self) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(SIGFIG as u8).expect("three digits are valid");
        h.auto(true);
        for (off, c) in self.filled().iter().enumerate() {
            let v = layout::lowest_at(self.min_idx + off);
            // Auto-resizing, the crate takes any u64; clamped if it ever did not.
            if *c > 0 && h.record_n(v, *c).is_err() {
                h.saturating_record_n(v, *c);
            }
        }
        h
    }

    /// Inverse of [`LatencyHistogram::encode`] (and reads the V2 deflate form). An
    /// empty string is an empty histogram.
    pub fn decode(s: &str) -> Result<Self, String> {
        let mut h = Self::new();
        DECODER.with(|d| d.borrow_mut().add_encoded(s, &mut h))?;
        Ok(h)
    }

    /// The general decode (any HdrHistogram V2 parameters), through the crate.
    ///
    /// A class of the other histogram is counted at its *highest* value, in pado's
    /// slot that holds it: HdrHistogram reports a percentile and the maximum as the
    /// highest value of their class, and adds a histogram into another one by that
    /// value, so a lower-precision histogram (jHiccup's two digits) reads with the
    /// percentiles and maximum HdrHistogram's own tools print for it, and a mean
    /// that counts each value at the middle of pado's class of that value, as
    /// HdrHistogram's does after adding it into a three-digit histogram. Its lowest
    /// value (what the class starts at) read every percentile low by up to the
    /// class's width (0.25–0.55% on jHiccup's logs).
    pub(super) fn decode_general(bytes: &[u8]) -> Result<Self, String> {
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &bytes[..])
            .map_err(|e| format!("histogram does not decode: {e:?}"))?;
        let mut out = Self::new();
        for v in h.iter_recorded() {
            let value = h.highest_equivalent(v.value_iterated_to());
            out.add_at(layout::index_of(value), v.count_at_value());
        }
        Ok(out)
    }
}

/// The first slot from `at` on that holds a count (`counts.len()` if none): a
/// second's histogram is mostly runs of empty slots, skipped four at a time.
fn next_count(counts: &[u64], at: usize) -> usize {
    let rest = &counts[at..];
    let quads = rest
        .chunks_exact(4)
        .position(|q| (q[0] | q[1] | q[2] | q[3]) != 0)
        .unwrap_or(rest.len() / 4);
    let from = at + 4 * quads;
    from + counts[from..]
        .iter()
        .position(|c| *c != 0)
        .unwrap_or(counts.len() - from)
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// One LEB128 varint as HdrHistogram writes it (at most 9 bytes, the ninth whole).
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    for _ in 0..8 {
        if v < 0x80 {
            buf.push(v as u8);
            return;
        }
        buf.push(0x80 | (v & 0x7f) as u8);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// One LEB128 varint (at most 9 bytes, the last one whole, as HdrHistogram writes).
fn varint(b: &[u8]) -> Result<(u64, usize), String> {
    let mut v = 0u64;
    for (i, byte) in b.iter().take(9).enumerate() {
        if i == 8 {
            return Ok((v | (u64::from(*byte) << 56), 9));
        }
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((v, i + 1));
        }
    }
    Err("histogram does not decode: a count ends early".into())
}

/// Decodes encoded histograms straight into others, reusing its buffers: reading a
/// timeline decodes tens of histograms a second of the run. The counts are walked in
/// their encoded form and added at their slot, which is exactly what decoding then
/// adding gives. Reads the plain V2 form pado writes, the V2 deflate form earlier
/// versions wrote, and (through the `hdrhistogram` crate) V2 histograms of other
/// parameters.
pub struct HistogramDecoder {
    b64: Vec<u8>,
    raw: Vec<u8>,
    inflate: flate2::Decompress,
    /// The decoded (slot, count) pairs of one histogram, added in one go.
    slots: Vec<(u32, u64)>,
}

impl Default for HistogramDecoder {
    fn default() -> Self {
        HistogramDecoder {
            b64: Vec::new(),
            raw: Vec::new(),
            inflate: flate2::Decompress::new(true),
            slots: Vec::new(),
        }
    }
}

impl HistogramDecoder {
    /// Add the histogram `s` ([`LatencyHistogram::encode`]'s form, or the V2 deflate
    /// form) to `into`.
    pub fn add_encoded(&mut self, s: &str, into: &mut LatencyHistogram) -> Result<(), String> {
        self.add_encoded_to(s, into, None)
    }

    /// Add the histogram `s` to `into` and, when given, to `also` too (decoded once).
    /// On an error neither is changed.
    pub fn add_encoded_to(
        &mut self,
        s: &str,
        into: &mut LatencyHistogram,
        also: Option<&mut LatencyHistogram>,
    ) -> Result<(), String> {
        if s.is_empty() {
            return Ok(());
        }
        self.b64.clear();
        base64::engine::general_purpose::STANDARD
            .decode_vec(s, &mut self.b64)
            .map_err(|e| format!("histogram is not base64: {e}"))?;
        let b = &self.b64;
        let word = |at: usize| -> Option<u32> {
            b.get(at..at + 4)
                .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
        };
        let plain = word(0) == Some(V2_COOKIE);
        let len = word(4).unwrap_or(0) as usize;
        let general = |bytes: &[u8], into: &mut LatencyHistogram, also: Option<&mut _>| {
            let h = LatencyHistogram::decode_general(bytes)?;
            into.add(&h);
            if let Some(a) = also {
                LatencyHistogram::add(a, &h);
            }
            Ok(())
        };
        if !plain && (word(0) != Some(V2_COMPRESSED_COOKIE) || b.len() < 8 + len) {
            // Not a form pado writes: the general decoder says what is wrong.
            return general(b, into, also);
        }
        if !plain {
            inflate(&mut self.inflate, &b[8..8 + len], &mut self.raw)?;
        }
        let r: &[u8] = if plain { b } else { &self.raw };
        if r.len() < V2_HEADER {
            return Err("histogram does not decode: shorter than its header".into());
        }
        let be32 = |at: usize| u32::from_be_bytes([r[at], r[at + 1], r[at + 2], r[at + 3]]);
        let be64 = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&r[at..at + 8]);
            u64::from_be_bytes(w)
        };
        if be32(0) != V2_COOKIE {
            return Err("histogram does not decode: bad cookie".into());
        }
        let payload = be32(4) as usize;
        let (offset, digits, low) = (be32(8), be32(12), be64(16));
        let ratio = f64::from_bits(be64(32));
        if offset != 0 || digits != SIGFIG || low != 1 || ratio != 1.0 {
            // Other parameters than pado's: the general way.
            let bytes = if plain { r } else { &b[..8 + len] };
            return general(bytes, into, also);
        }
        let counts = r
            .get(V2_HEADER..V2_HEADER.saturating_add(payload))
            .ok_or("histogram does not decode: payload shorter than its header says")?;
        let slots = &mut self.slots;
        slots.clear();
        let mut index: usize = 0;
        let mut at = 0usize;
        while at < counts.len() {
            // Most counts of a second are below 64: one byte.
            let zz = if counts[at] < 0x80 {
                at += 1;
                u64::from(counts[at - 1])
            } else {
                let (zz, used) = varint(&counts[at..])?;
                at += used;
                zz
            };
            let n = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
            if n < 0 {
                index =
                    index.saturating_add(usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX));
                continue;
            }
            if n > 0 {
                if index >= layout::MAX_LEN {
                    return Err(
                        "histogram does not decode: a count beyond the largest value".into(),
                    );
                }
                slots.push((index as u32, n as u64));
            }
            index = index.saturating_add(1);
        }
        into.add_slots(slots);
        if let Some(a) = also {
            a.add_slots(slots);
        }
        Ok(())
    }
}

/// Inflate one zlib stream (`input`) into `raw`, growing it as needed.
fn inflate(z: &mut flate2::Decompress, input: &[u8], raw: &mut Vec<u8>) -> Result<(), String> {
    z.reset(true);
    raw.clear();
    loop {
        if raw.len() == raw.capacity() {
            raw.reserve(raw.capacity().max(4096));
        }
        let (before, out_before) = (z.total_in() as usize, raw.len());
        // `None`, not `Finish`: with `Finish` the inflater must fit the whole
        // output in the space given at once, and a histogram of many distinct
        // values does not fit the first buffer.
        let status = z
            .decompress_vec(&input[before..], raw, flate2::FlushDecompress::None)
            .map_err(|e| format!("histogram does not decode: {e}"))?;
        if status == flate2::Status::StreamEnd {
            return Ok(());
        }
        let stalled = z.total_in() as usize == before && raw.len() == out_before;
        if stalled && raw.len() < raw.capacity() {
            return Err("histogram does not decode: truncated".into());
        }
    }
}
