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
    /// Σ (median equivalent value × count) when it is known without a walk over the
    /// counts: kept by decoding and by adding histograms that know theirs, dropped
    /// by [`LatencyHistogram::record`] (the engine's hot path stays one add). The
    /// report asks for means of tens of decoded histograms a second, and
    /// HdrHistogram's `mean` walks every count slot with its general iterator.
    sum: Option<u128>,
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
        LatencyHistogram { h, sum: Some(0) }
    }

    /// Record one duration. Never fails: auto-resize covers any u64 value that
    /// HdrHistogram can hold; an absurd value is clamped rather than lost.
    #[inline]
    pub fn record(&mut self, us: u64) {
        self.sum = None;
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
        self.sum = match (self.sum, other.sum) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
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

    /// Mean in µs: HdrHistogram's (each value at the middle of its bucket), summed
    /// exactly in integers, so it is the same number whichever way the histogram
    /// was built.
    pub fn mean_us(&self) -> f64 {
        if self.h.is_empty() {
            return 0.0;
        }
        let sum = self.sum.unwrap_or_else(|| {
            self.h
                .iter_recorded()
                .map(|v| {
                    u128::from(self.h.median_equivalent(v.value_iterated_to()))
                        * u128::from(v.count_at_value())
                })
                .fold(0u128, u128::saturating_add)
        });
        sum as f64 / self.h.len() as f64
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

    /// Compact text form: HdrHistogram V2 (its varint, zero-run encoding of the
    /// counts), base64. Exact, and read by any HdrHistogram V2 decoder (pado before
    /// 0.1 wrote the V2 *deflate* form, which [`LatencyHistogram::decode`] still
    /// reads). Not deflated: a second's histogram is a few hundred bytes, deflate
    /// saved about a quarter of them, and inflating a new zlib stream for each was
    /// most of the time of reading a timeline.
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
        Ok(LatencyHistogram { h, sum: None })
    }

    /// Add `n` values at `value` (clamped like [`LatencyHistogram::record`]).
    fn record_n(&mut self, value: u64, n: u64) {
        if self.h.record_n(value, n).is_err() {
            self.sum = None;
            let _ = self.h.record_n(self.h.high(), n);
        } else if let Some(sum) = self.sum.as_mut() {
            let mid = u128::from(self.h.median_equivalent(value));
            *sum = sum.saturating_add(mid * u128::from(n));
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

/// `HdrHistogram` V2 compressed cookie (with the 8-byte word size bits): the form
/// earlier pado wrote.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// The plain V2 cookie: the form pado writes, and the inner one of the compressed form.
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
/// belong, which is exactly what decoding then adding gives. Reads both the plain V2
/// form pado writes and the V2 deflate form earlier versions wrote.
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
    /// Add the histogram `s` ([`LatencyHistogram::encode`]'s form, or the V2 deflate
    /// form) to `into`.
    pub fn add_encoded(&mut self, s: &str, into: &mut LatencyHistogram) -> Result<(), String> {
        self.add_encoded_to(s, into, None)
    }

    /// Add the histogram `s` to `into` and, when given, to `also` too (decoded once).
    pub fn add_encoded_to(
        &mut self,
        s: &str,
        into: &mut LatencyHistogram,
        mut also: Option<&mut LatencyHistogram>,
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
        if !plain && (word(0) != Some(V2_COMPRESSED_COOKIE) || b.len() < 8 + len) {
            // Not a form pado writes: the general decoder says what is wrong.
            let h = LatencyHistogram::decode_general(b)?;
            into.add(&h);
            if let Some(a) = also {
                a.add(&h);
            }
            return Ok(());
        }
        if !plain {
            inflate(&mut self.inflate, &b[8..8 + len], &mut self.raw)?;
        }
        let r: &[u8] = if plain { b } else { &self.raw };
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
            let h = if plain {
                LatencyHistogram::decode_general(r)?
            } else {
                LatencyHistogram::decode_general(&b[..8 + len])?
            };
            into.add(&h);
            if let Some(a) = also {
                a.add(&h);
            }
            return Ok(());
        }
        let counts = r
            .get(V2_HEADER..V2_HEADER.saturating_add(payload))
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
                let v = value_at_index(index)?;
                into.record_n(v, n as u64);
                if let Some(a) = also.as_deref_mut() {
                    a.record_n(v, n as u64);
                }
            }
            index += 1;
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

/// Encodes histograms in HdrHistogram's plain V2 form, base64, with the
/// serializer and its buffers reused.
struct HistogramEncoder {
    v2: V2Serializer,
    plain: Vec<u8>,
}

impl Default for HistogramEncoder {
    fn default() -> Self {
        HistogramEncoder {
            v2: V2Serializer::new(),
            plain: Vec::new(),
        }
    }
}

impl HistogramEncoder {
    fn encode(&mut self, h: &Histogram<u64>) -> Result<String, String> {
        self.plain.clear();
        self.v2
            .serialize(h, &mut self.plain)
            .map_err(|e| format!("{e:?}"))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(&self.plain))
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

    /// Result directories written before the plain form hold V2 *deflate*
    /// histograms: they still read, to the values they hold (this one is a real
    /// `blocked` histogram of 150 requests from such a timeline: 149 × 1 µs, 1 × 300 µs).
    #[test]
    fn the_older_deflate_form_still_decodes() {
        let old = "HISTFAAAACZ4AZNpmSzMwMDABsQgxAwigJgRiEGIyf4DiALiVUyXWZgAT9oEBw==";
        let mut want = LatencyHistogram::new();
        for _ in 0..149 {
            want.record(1);
        }
        want.record(300);
        assert_eq!(LatencyHistogram::decode(old).unwrap(), want);
        let mut dec = HistogramDecoder::default();
        let (mut a, mut b) = (LatencyHistogram::new(), LatencyHistogram::new());
        dec.add_encoded_to(old, &mut a, Some(&mut b)).unwrap();
        assert_eq!((a.count(), b.count()), (150, 150));
        assert_eq!((&a, &b), (&want, &want));
        // What pado writes now is another form of the same histogram.
        let new = want.encode().unwrap();
        assert_ne!(new, old);
        assert!(!new.starts_with("HISTF"), "{new}");
        assert_eq!(LatencyHistogram::decode(&new).unwrap(), want);
    }

    /// The plain form pado writes is standard HdrHistogram V2: the library's own
    /// deserializer (what earlier pado fell back to for a form it did not know)
    /// reads it to the same histogram, so older pado versions read new files.
    #[test]
    fn the_plain_form_is_read_by_the_general_v2_decoder() {
        let mut h = LatencyHistogram::new();
        for v in [1u64, 5, 2048, 70_000, 70_001, 59_000_000] {
            h.record(v);
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(h.encode().unwrap())
            .unwrap();
        assert_eq!(&bytes[..4], &V2_COOKIE.to_be_bytes());
        assert_eq!(LatencyHistogram::decode_general(&bytes).unwrap(), h);
    }

    /// The mean a decoded or summed histogram keeps is the one a walk over its
    /// counts gives, to the bit.
    #[test]
    fn the_kept_mean_is_the_walked_mean() {
        let mut recorded = LatencyHistogram::new();
        for v in (1..5000u64).map(|i| i * i % 90_001 + 1) {
            recorded.record(v);
        }
        assert!(recorded.sum.is_none());
        let walked = recorded.mean_us();
        let hdr = recorded.h.mean();
        assert!((walked - hdr).abs() / hdr < 1e-9, "{walked} vs {hdr}");
        let decoded = LatencyHistogram::decode(&recorded.encode().unwrap()).unwrap();
        assert!(decoded.sum.is_some());
        assert_eq!(decoded.mean_us().to_bits(), walked.to_bits());
        let mut twice = decoded.clone();
        twice.add(&decoded);
        assert!(twice.sum.is_some());
        assert_eq!(twice.mean_us().to_bits(), walked.to_bits());
        let mut mixed = decoded.clone();
        mixed.add(&recorded);
        assert!(mixed.sum.is_none());
        assert_eq!(mixed.mean_us().to_bits(), twice.mean_us().to_bits());
        mixed.record(7);
        let mut fresh = LatencyHistogram::decode(&mixed.encode().unwrap()).unwrap();
        assert_eq!(fresh.mean_us().to_bits(), mixed.mean_us().to_bits());
        fresh.record(1);
        assert!(fresh.sum.is_none());
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
