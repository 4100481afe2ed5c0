//! HDR histograms of durations in microseconds, and the summary users read in ms.
//!
//! Histograms auto-resize, so one that only ever saw sub-millisecond values stays a few
//! KiB, while a stalled target's 60 s timeouts still fit. Three significant digits keep
//! every percentile within 0.1% of the recorded value.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Significant digits kept by every latency histogram.
const SIGFIG: u8 = 3;

/// A mergeable distribution of durations (µs).
#[derive(Clone)]
pub struct LatencyHistogram {
    h: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for LatencyHistogram {
    /// Equal when they hold the same recorded values (whatever their allocated size).
    fn eq(&self, other: &Self) -> bool {
        self.h.len() == other.h.len()
            && self
                .h
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .eq(other
                    .h
                    .iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value())))
    }
}

impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LatencyHistogram(n={}, min={}us, max={}us)",
            self.count(),
            self.min_us(),
            self.max_us()
        )
    }
}

impl LatencyHistogram {
    /// An empty histogram that grows to whatever values it is given.
    pub fn new() -> Self {
        let mut h = Histogram::<u64>::new(SIGFIG).expect("3 significant digits is valid");
        h.auto(true);
        LatencyHistogram { h }
    }

    /// Record one duration. Never fails: auto-resize covers any u64 value that
    /// HdrHistogram can hold; an absurd value is clamped rather than lost.
    #[inline]
    pub fn record(&mut self, us: u64) {
        if self.h.record(us).is_err() {
            let _ = self.h.record(self.h.high());
        }
    }

    /// Add another histogram's counts (exact merge).
    pub fn add(&mut self, other: &LatencyHistogram) {
        if other.h.is_empty() {
            return;
        }
        // Both auto-resize, so adding cannot run out of range.
        let _ = self.h.add(&other.h);
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    /// Value at quantile `q` (0..=1) in µs.
    pub fn quantile_us(&self, q: f64) -> u64 {
        self.h.value_at_quantile(q)
    }

    /// Mean in µs.
    pub fn mean_us(&self) -> f64 {
        self.h.mean()
    }

    /// Smallest recorded value in µs.
    pub fn min_us(&self) -> u64 {
        self.h.min()
    }

    /// Largest recorded value (highest equivalent value) in µs.
    pub fn max_us(&self) -> u64 {
        if self.h.is_empty() {
            0
        } else {
            self.h.highest_equivalent(self.h.max())
        }
    }

    /// Share of recorded values strictly above `us` (0..=1).
    pub fn share_above_us(&self, us: u64) -> f64 {
        if self.h.is_empty() {
            return 0.0;
        }
        let below = self.h.count_between(0, us);
        1.0 - below as f64 / self.h.len() as f64
    }

    /// The summary users read, in milliseconds.
    pub fn summary(&self) -> LatencySummary {
        if self.h.is_empty() {
            return LatencySummary::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        LatencySummary {
            min: ms(self.min_us()),
            mean: self.mean_us() / 1000.0,
            p50: ms(self.quantile_us(0.50)),
            p90: ms(self.quantile_us(0.90)),
            p95: ms(self.quantile_us(0.95)),
            p99: ms(self.quantile_us(0.99)),
            p99_9: ms(self.quantile_us(0.999)),
            max: ms(self.max_us()),
        }
    }

    /// Compact text form (HdrHistogram V2 deflate, base64): the form HdrHistogram
    /// interval logs use, so the per-second files stay small and exact.
    /// An error when the histogram cannot be serialised: never written as an empty
    /// histogram, which would silently lose its samples.
    pub fn encode(&self) -> Result<String, String> {
        let text = ENCODER.with(|cell| cell.borrow_mut().encode(&self.h));
        text.map_err(|e| format!("histogram of {} values does not encode: {e}", self.h.len()))
    }

    /// Inverse of [`LatencyHistogram::encode`]. An empty string is an empty histogram.
    pub fn decode(s: &str) -> Result<Self, String> {
        let mut h = Self::new();
        DECODER.with(|d| d.borrow_mut().add_encoded(s, &mut h))?;
        Ok(h)
    }

    /// The slow, general decode (any HdrHistogram V2 parameters).
    fn decode_general(bytes: &[u8]) -> Result<Self, String> {
        let mut h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &bytes[..])
            .map_err(|e| format!("histogram does not decode: {e:?}"))?;
        h.auto(true);
        Ok(LatencyHistogram { h })
    }

    /// Add `n` values at `value` (clamped like [`LatencyHistogram::record`]).
    fn record_n(&mut self, value: u64, n: u64) {
        if self.h.record_n(value, n).is_err() {
            let _ = self.h.record_n(self.h.high(), n);
        }
    }
}

thread_local! {
    /// The encoder and its buffers, reused: writing a timeline encodes tens of
    /// histograms a second.
    static ENCODER: std::cell::RefCell<HistogramEncoder> =
        std::cell::RefCell::new(HistogramEncoder::default());
    static DECODER: std::cell::RefCell<HistogramDecoder> =
        std::cell::RefCell::new(HistogramDecoder::default());
}

/// `HdrHistogram` V2 compressed cookie (with the 8-byte word size bits).
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// The inner, uncompressed V2 cookie.
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
/// Bytes of the V2 header before the counts.
const V2_HEADER: usize = 40;
/// log2 of half the sub-bucket count of a 3-significant-digit histogram whose
/// lowest discernible value is 1 (pado's): 2048 sub-buckets.
const SUB_BUCKET_HALF_MAGNITUDE: u32 = 10;

/// Decodes encoded histograms straight into another one, reusing its buffers:
/// reading a timeline decodes tens of histograms a second of the run, and the
/// general decoder allocates an inflater, a payload buffer and a full counts array
/// for each. The counts are walked in their sparse encoded form and added where they
/// belong, which is exactly what decoding then adding gives.
pub struct HistogramDecoder {
    b64: Vec<u8>,
    raw: Vec<u8>,
    inflate: flate2::Decompress,
}

impl Default for HistogramDecoder {
    fn default() -> Self {
        HistogramDecoder {
            b64: Vec::new(),
            raw: Vec::new(),
            inflate: flate2::Decompress::new(true),
        }
    }
}

impl HistogramDecoder {
    /// Add the histogram `s` ([`LatencyHistogram::encode`]'s form) to `into`.
    pub fn add_encoded(&mut self, s: &str, into: &mut LatencyHistogram) -> Result<(), String> {
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
        let len = word(4).unwrap_or(0) as usize;
        if word(0) != Some(V2_COMPRESSED_COOKIE) || b.len() < 8 + len {
            // Not the form pado writes: the general decoder says what is wrong.
            into.add(&LatencyHistogram::decode_general(b)?);
            return Ok(());
        }
        self.inflate.reset(true);
        self.raw.clear();
        let input = &b[8..8 + len];
        loop {
            if self.raw.len() == self.raw.capacity() {
                self.raw.reserve(self.raw.capacity().max(4096));
            }
            let (before, out_before) = (self.inflate.total_in() as usize, self.raw.len());
            // `None`, not `Finish`: with `Finish` the inflater must fit the whole
            // output in the space given at once, and a histogram of many distinct
            // values does not fit the first buffer.
            let status = self
                .inflate
                .decompress_vec(
                    &input[before..],
                    &mut self.raw,
                    flate2::FlushDecompress::None,
                )
                .map_err(|e| format!("histogram does not decode: {e}"))?;
            if status == flate2::Status::StreamEnd {
                break;
            }
            let stalled =
                self.inflate.total_in() as usize == before && self.raw.len() == out_before;
            if stalled && self.raw.len() < self.raw.capacity() {
                return Err("histogram does not decode: truncated".into());
            }
        }
        let r = &self.raw;
        let be32 = |at: usize| u32::from_be_bytes([r[at], r[at + 1], r[at + 2], r[at + 3]]);
        let be64 = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&r[at..at + 8]);
            u64::from_be_bytes(w)
        };
        if r.len() < V2_HEADER || be32(0) != V2_COOKIE {
            return Err("histogram does not decode: bad cookie".into());
        }
        let payload = be32(4) as usize;
        let (offset, digits, low) = (be32(8), be32(12), be64(16));
        let ratio = f64::from_bits(be64(32));
        if offset != 0 || digits != u32::from(SIGFIG) || low != 1 || ratio != 1.0 {
            // Other parameters than pado's: the general way.
            let mut whole = Vec::with_capacity(8 + len);
            whole.extend_from_slice(&b[..8 + len]);
            into.add(&LatencyHistogram::decode_general(&whole)?);
            return Ok(());
        }
        let counts = r
            .get(V2_HEADER..V2_HEADER + payload)
            .ok_or("histogram does not decode: payload shorter than its header says")?;
        let mut index: u64 = 0;
        let mut at = 0usize;
        while at < counts.len() {
            let (zz, used) = varint(&counts[at..])?;
            at += used;
            let n = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
            if n < 0 {
                index = index.saturating_add(n.unsigned_abs());
                continue;
            }
            if n > 0 {
                into.record_n(value_at_index(index)?, n as u64);
            }
            index += 1;
        }
        Ok(())
    }
}

/// Encodes histograms in HdrHistogram's V2 deflate form, as its
/// `V2DeflateSerializer` does but with one deflater and its buffers reused (the
/// library's serializer sets up a new zlib stream, hundreds of KB of tables, for
/// every histogram) and the fast compression level.
struct HistogramEncoder {
    v2: V2Serializer,
    plain: Vec<u8>,
    out: Vec<u8>,
    deflate: flate2::Compress,
}

impl Default for HistogramEncoder {
    fn default() -> Self {
        HistogramEncoder {
            v2: V2Serializer::new(),
            plain: Vec::new(),
            out: Vec::new(),
            // Fast: a second's histogram is a few hundred bytes, and the level
            // changes the bytes, not what they decode to.
            deflate: flate2::Compress::new(flate2::Compression::fast(), true),
        }
    }
}

impl HistogramEncoder {
    fn encode(&mut self, h: &Histogram<u64>) -> Result<String, String> {
        self.plain.clear();
        self.v2
            .serialize(h, &mut self.plain)
            .map_err(|e| format!("{e:?}"))?;
        self.out.clear();
        self.out
            .extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        self.out.extend_from_slice(&[0; 4]);
        self.deflate.reset();
        let mut consumed = 0usize;
        loop {
            if self.out.len() == self.out.capacity() {
                self.out.reserve(self.out.capacity().max(256));
            }
            let before = self.deflate.total_in() as usize;
            let status = self
                .deflate
                .compress_vec(
                    &self.plain[consumed..],
                    &mut self.out,
                    flate2::FlushCompress::Finish,
                )
                .map_err(|e| e.to_string())?;
            consumed += self.deflate.total_in() as usize - before;
            if status == flate2::Status::StreamEnd {
                break;
            }
        }
        let len = (self.out.len() - 8) as u32;
        self.out[4..8].copy_from_slice(&len.to_be_bytes());
        Ok(base64::engine::general_purpose::STANDARD.encode(&self.out))
    }
}

/// The lowest value counted at `index` of a pado histogram (HdrHistogram's
/// `value_for` for 2048 sub-buckets and a unit of 1).
fn value_at_index(index: u64) -> Result<u64, String> {
    let half = 1u64 << SUB_BUCKET_HALF_MAGNITUDE;
    let mut bucket = (index >> SUB_BUCKET_HALF_MAGNITUDE) as i64 - 1;
    let mut sub = (index & (half - 1)) + half;
    if bucket < 0 {
        sub -= half;
        bucket = 0;
    }
    if bucket > 52 {
        return Err("histogram does not decode: index out of range".into());
    }
    Ok(sub << bucket)
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

/// Latency statistics in milliseconds, with the exact key names of `summary.json`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Smallest value.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// Largest value.
    pub max: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = LatencyHistogram::new();
        for v in 1..=10_000u64 {
            h.record(v * 100); // 0.1 ms .. 1000 ms
        }
        let s = h.summary();
        assert!((s.p50 - 500.0).abs() / 500.0 < 0.002, "{s:?}");
        assert!((s.p99 - 990.0).abs() / 990.0 < 0.002, "{s:?}");
        assert!((s.min - 0.1).abs() < 1e-9);
        assert!((s.max - 1000.0).abs() / 1000.0 < 0.002);
        assert!((s.mean - 500.05).abs() < 1.0);
    }

    #[test]
    fn encode_decode_round_trip_and_merge_is_exact() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        for v in 0..1000u64 {
            a.record(v);
            b.record(v * 7 + 3_000_000);
        }
        let a2 = LatencyHistogram::decode(&a.encode().unwrap()).unwrap();
        assert_eq!(a, a2);
        let mut m = a2.clone();
        m.add(&LatencyHistogram::decode(&b.encode().unwrap()).unwrap());
        assert_eq!(m.count(), 2000);
        assert_eq!(m.max_us(), b.max_us());
        assert!(LatencyHistogram::decode("").unwrap().is_empty());
        assert!(LatencyHistogram::decode("not base64!").is_err());
    }

    /// The fast decoder walks the encoded counts itself: it must give exactly what
    /// HdrHistogram's own deserializer gives, for every shape of histogram, and an
    /// error (never a panic) for damaged input.
    #[test]
    fn a_histogram_wider_than_the_first_buffer_decodes() {
        // Tens of thousands of distinct buckets (an overloaded run's latencies, from
        // microseconds to a minute): the inflated form is far larger than the
        // decoder's first buffer, which must grow rather than fail.
        let mut h = LatencyHistogram::new();
        for i in 0..60_000u64 {
            h.record(1 + i * 997);
        }
        let enc = h.encode().unwrap();
        let mut fresh = HistogramDecoder::default();
        let mut acc = LatencyHistogram::new();
        fresh.add_encoded(&enc, &mut acc).unwrap();
        assert_eq!(acc, h);
        assert_eq!(LatencyHistogram::decode(&enc).unwrap(), h);
    }

    #[test]
    fn fast_decode_equals_the_general_decoder() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let shapes: Vec<Vec<u64>> = vec![
            vec![0],
            vec![1, 1, 1],
            vec![2047, 2048, 2049, 4095, 4096],
            (0..5000).map(|_| next() % 3_000).collect(),
            (0..5000).map(|_| 100 + next() % 200_000).collect(),
            (0..300).map(|_| next() % 60_000_000).collect(),
            vec![u64::from(u32::MAX), 1 << 40, 7],
        ];
        let mut dec = HistogramDecoder::default();
        let mut acc = LatencyHistogram::new();
        let mut reference = LatencyHistogram::new();
        for values in shapes {
            let mut h = LatencyHistogram::new();
            for v in &values {
                h.record(*v);
            }
            let enc = h.encode().unwrap();
            let mut lib = Vec::new();
            hdrhistogram::serialization::V2DeflateSerializer::new()
                .serialize(&h.h, &mut lib)
                .unwrap();
            // Another compression level, the same histogram.
            let lib = base64::engine::general_purpose::STANDARD.encode(&lib);
            assert_eq!(LatencyHistogram::decode(&lib).unwrap(), h);
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(&enc)
                .unwrap();
            let general = LatencyHistogram::decode_general(&bytes).unwrap();
            assert_eq!(general, h);
            let fast = LatencyHistogram::decode(&enc).unwrap();
            assert_eq!(fast, h, "{values:?}");
            assert_eq!(fast.summary(), h.summary());
            dec.add_encoded(&enc, &mut acc).unwrap();
            reference.add(&h);
            assert_eq!(acc, reference);
            // Every cut of the encoding is an error or a histogram, never a panic.
            for cut in (0..enc.len()).step_by(7) {
                let _ = LatencyHistogram::decode(&enc[..cut]);
            }
        }
    }

    #[test]
    fn share_above() {
        let mut h = LatencyHistogram::new();
        for v in 1..=100u64 {
            h.record(v * 1000);
        }
        let s = h.share_above_us(80_000);
        assert!((s - 0.2).abs() < 0.011, "{s}");
    }
}
