use super::codec::V2_COOKIE;
use super::*;
use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer, V2Serializer};
use hdrhistogram::Histogram;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

/// The reference: HdrHistogram itself with pado's parameters.
fn reference(values: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new(3).unwrap();
    h.auto(true);
    for v in values {
        h.record(*v).unwrap();
    }
    h
}

fn ours(values: &[u64]) -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    for v in values {
        h.record(*v);
    }
    h
}

/// Shapes of runs: one value, values around bucket edges, a fast service, a slow
/// one, a stalled one's spread up to a minute, huge values.
fn shapes() -> Vec<Vec<u64>> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    vec![
        vec![0],
        vec![1, 1, 1],
        vec![5, 0, 0, 7],
        vec![2047, 2048, 2049, 4095, 4096],
        (0..5000).map(|_| next() % 3_000).collect(),
        (0..5000).map(|_| 100 + next() % 200_000).collect(),
        (0..300).map(|_| next() % 60_000_000).collect(),
        (0..150).map(|_| 80_000 + next() % 40_000).collect(),
        vec![u64::from(u32::MAX), 1 << 40, 7],
        vec![u64::MAX / 3, 3],
    ]
}

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

/// Every figure pado reads of a histogram is the one HdrHistogram gives for the same
/// values: quantiles (one at a time and in one walk), min, max, mean, share above.
#[test]
fn figures_equal_hdrhistograms() {
    for values in shapes() {
        let (h, r) = (ours(&values), reference(&values));
        assert_eq!(h.count(), r.len());
        let qs = [0.0, 0.001, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0, 1.5];
        for q in qs {
            assert_eq!(
                h.quantile_us(q),
                r.value_at_quantile(q),
                "q {q} of {values:?}"
            );
        }
        let many = h.quantiles_us(qs);
        for (q, v) in qs.iter().zip(many) {
            assert_eq!(v, r.value_at_quantile(*q), "q {q} in one walk");
        }
        assert_eq!(h.min_us(), r.min(), "{values:?}");
        assert_eq!(h.max_us(), r.highest_equivalent(r.max()), "{values:?}");
        let (m, rm) = (h.mean_us(), r.mean());
        assert!((m - rm).abs() <= rm.abs() * 1e-9 + 1e-9, "{m} vs {rm}");
        for cut in [0u64, 1, 2048, 100_000, 1 << 50] {
            let below = r.count_between(0, cut) as f64 / r.len() as f64;
            assert_eq!(h.share_above_us(cut), 1.0 - below, "above {cut}");
        }
    }
    let empty = LatencyHistogram::new();
    assert_eq!(
        (empty.quantile_us(0.5), empty.min_us(), empty.max_us()),
        (0, 0, 0)
    );
    assert_eq!((empty.mean_us(), empty.share_above_us(5)), (0.0, 0.0));
    assert_eq!(empty.summary(), LatencySummary::default());
}

/// pado's encoding is byte for byte what HdrHistogram's V2 serializer writes for
/// the same values, so any HdrHistogram library (and older pado) reads it.
#[test]
fn the_encoding_is_hdrhistograms_v2() {
    let mut all = shapes();
    all.push(vec![]);
    for values in all {
        let mut lib = Vec::new();
        V2Serializer::new()
            .serialize(&reference(&values), &mut lib)
            .unwrap();
        let enc = ours(&values).encode().unwrap();
        assert_eq!(unb64(&enc), lib, "{values:?}");
        assert_eq!(&unb64(&enc)[..4], &V2_COOKIE.to_be_bytes());
    }
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

/// Decoding (straight into a sum, or into a fresh histogram) and adding give what
/// HdrHistogram gives by deserialising and adding, for every shape; the library's
/// own V2 and V2 deflate bytes decode to the same histogram; damaged input is an
/// error or a histogram, never a panic.
#[test]
fn decode_and_add_equal_hdrhistograms() {
    let mut dec = HistogramDecoder::default();
    let mut acc = LatencyHistogram::new();
    let mut also = LatencyHistogram::new();
    let mut summed = LatencyHistogram::new();
    let mut lib_sum = reference(&[]);
    for values in shapes() {
        let h = ours(&values);
        let r = reference(&values);
        let enc = h.encode().unwrap();
        let mut deflated = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&r, &mut deflated)
            .unwrap();
        assert_eq!(LatencyHistogram::decode(&b64(&deflated)).unwrap(), h);
        assert_eq!(LatencyHistogram::decode_general(&unb64(&enc)).unwrap(), h);
        let fast = LatencyHistogram::decode(&enc).unwrap();
        assert_eq!(fast, h, "{values:?}");
        assert_eq!(fast.summary(), h.summary());
        dec.add_encoded_to(&enc, &mut acc, Some(&mut also)).unwrap();
        summed.add(&h);
        lib_sum.add(&r).unwrap();
        assert_eq!(acc, summed);
        assert_eq!(also, summed);
        let mut lib = Vec::new();
        V2Serializer::new().serialize(&lib_sum, &mut lib).unwrap();
        assert_eq!(LatencyHistogram::decode(&b64(&lib)).unwrap(), summed);
        assert_eq!(summed.quantile_us(0.99), lib_sum.value_at_quantile(0.99));
        assert_eq!(summed.min_us(), lib_sum.min());
        for cut in (0..enc.len()).step_by(7) {
            let _ = LatencyHistogram::decode(&enc[..cut]);
            // A damaged histogram adds nothing, not part of itself.
            let mut probe = summed.clone();
            if dec.add_encoded(&enc[..cut], &mut probe).is_err() {
                assert_eq!(probe, summed);
            }
        }
    }
}

/// A histogram of another tool's parameters (here two significant digits) is read
/// through the library, each class at its highest value: percentiles and maximum
/// are the library's own.
#[test]
fn other_parameters_decode_through_the_library() {
    let mut other = Histogram::<u64>::new(2).unwrap();
    other.auto(true);
    for v in [10u64, 20, 30_000, 30_001, 30_002, 91_234, 1_000_003] {
        other.record(v).unwrap();
    }
    let mut bytes = Vec::new();
    V2Serializer::new().serialize(&other, &mut bytes).unwrap();
    let h = LatencyHistogram::decode(&b64(&bytes)).unwrap();
    assert_eq!(h.count(), 7);
    assert_eq!(h.min_us(), 10);
    // The library's class of 30 000 starts below it and ends above it (two digits).
    assert!(other.lowest_equivalent(30_001) < 30_000);
    assert!(other.highest_equivalent(30_001) > 30_002);
    for q in [0.0, 0.3, 0.5, 0.6, 0.8, 0.9, 0.99, 1.0] {
        assert_eq!(h.quantile_us(q), other.value_at_quantile(q), "q {q}");
    }
    assert_eq!(h.max_us(), other.max());
    assert_eq!(
        h.share_above_us(other.highest_equivalent(30_000)),
        2.0 / 7.0
    );
}

#[test]
fn a_histogram_wider_than_the_first_buffer_decodes() {
    // Tens of thousands of distinct classes (an overloaded run's latencies, from
    // microseconds to a minute).
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

/// Result directories written before the plain form hold V2 *deflate* histograms:
/// they still read, to the values they hold (this one is a real `blocked` histogram
/// of 150 requests from such a timeline: 149 × 1 µs, 1 × 300 µs).
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
    let new = want.encode().unwrap();
    assert_ne!(new, old);
    assert!(!new.starts_with("HISTF"), "{new}");
    assert_eq!(LatencyHistogram::decode(&new).unwrap(), want);
}

/// The mean is the same number however the histogram was built: recorded, decoded,
/// added.
#[test]
fn the_mean_does_not_depend_on_how_it_was_built() {
    let values: Vec<u64> = (1..5000u64).map(|i| i * i % 90_001 + 1).collect();
    let recorded = ours(&values);
    let decoded = LatencyHistogram::decode(&recorded.encode().unwrap()).unwrap();
    assert_eq!(decoded.mean_us().to_bits(), recorded.mean_us().to_bits());
    let mut twice = decoded.clone();
    twice.add(&recorded);
    assert_eq!(twice.mean_us().to_bits(), recorded.mean_us().to_bits());
}

/// Equality is of the values held, not of the memory: a histogram that grew for a
/// large value and one that did not hold the same small values equally.
#[test]
fn equality_is_of_values() {
    let mut wide = LatencyHistogram::new();
    wide.record(50_000_000);
    let mut narrow = LatencyHistogram::new();
    narrow.record(5);
    let mut both = wide.clone();
    both.add(&narrow);
    let mut other = narrow.clone();
    other.add(&wide);
    assert_eq!(both, other);
    assert_ne!(wide, narrow);
    assert_eq!(LatencyHistogram::new(), LatencyHistogram::default());
    assert_ne!(LatencyHistogram::new(), narrow);
}

#[test]
fn share_above() {
    let mut h = LatencyHistogram::new();
    for v in 1..=100u64 {
        h.record(v * 1000);
    }
    let s = h.share_above_us(80_000);
    assert!((s - 0.2).abs() < 0.011, "{s}");
    assert_eq!(h.share_above_us(10), 1.0);
    assert_eq!(h.share_above_us(1 << 40), 0.0);
}

#[test]
fn count_at_or_below_matches_recorded_values() {
    let mut h = LatencyHistogram::new();
    assert_eq!(h.count_at_or_below_us(1000), 0);
    for us in [500, 900, 1000, 2500, 10_000, 10_000, 1_000_000] {
        h.record(us);
    }
    assert_eq!(h.count_at_or_below_us(100), 0);
    assert_eq!(h.count_at_or_below_us(1000), 3);
    assert_eq!(h.count_at_or_below_us(5000), 4);
    assert_eq!(h.count_at_or_below_us(10_000), 6);
    assert_eq!(h.count_at_or_below_us(u64::MAX / 4), 7);
}

/// The interval histograms of one of HdrHistogram's own test logs, with each line's
/// start offset in seconds (its logs' timestamps are offsets from `StartTime`).
fn hlog_intervals(log: &str) -> Vec<(f64, Option<String>, String)> {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    IntervalLogIterator::new(log.as_bytes())
        .filter_map(|e| match e.unwrap() {
            LogEntry::Interval(h) => Some((
                h.start_timestamp().as_secs_f64(),
                h.tag().map(|t| t.as_str().to_string()),
                h.encoded_histogram().to_string(),
            )),
            _ => None,
        })
        .collect()
}

const JHICCUP_LOG: &str = include_str!("../../fixtures/hdrhistogram/jHiccup-2.0.7S.logV2.hlog");

/// jHiccup's log (two significant digits, in ns) read and added up, for the whole
/// log and two windows of it (the windows of HdrHistogram_py's `test_jHiccup_v2_log`,
/// whose interval and value counts it asserts), against what HdrHistogram's reference
/// Python decoder reports for the same intervals added at the log's own parameters
/// (as HdrHistogram's `HistogramLogProcessor` adds them): percentiles and maximum
/// are the highest value of their class. Read at each class's lowest value, as
/// before, every one came out 0.25–0.55% low (the 99.9th percentile 1745879039 for
/// 1753219071). The mean counts each value at the middle of pado's class of that
/// class's highest value: at most half a class of the log above HdrHistogram's.
#[test]
fn hdrhistograms_own_jhiccup_log_reads_as_hdrhistogram_reports_it() {
    let intervals = hlog_intervals(JHICCUP_LOG);
    // window, intervals, values, [p50, p90, p99, p99.9, p100], HdrHistogram's mean
    type Truth = ((f64, f64), usize, u64, [u64; 5], f64);
    let truth: [Truth; 3] = [
        (
            (0.0, f64::MAX),
            62,
            48_761,
            [
                344_063,
                425_983,
                1_434_451_967,
                1_753_219_071,
                1_803_550_719,
            ],
            67_806_930.728_41,
        ),
        (
            (5.0, 20.0),
            15,
            11_664,
            [
                376_831,
                385_875_967,
                1_442_840_575,
                1_543_503_871,
                1_551_892_479,
            ],
            103_543_508.806_584_36,
        ),
        (
            (40.0, 60.0),
            20,
            15_830,
            [
                344_063,
                217_055_231,
                1_644_167_167,
                1_786_773_503,
                1_803_550_719,
            ],
            102_644_938.212_507_9,
        ),
    ];
    for ((from, to), lines, count, values, mean) in truth {
        let mut sum = LatencyHistogram::new();
        let mut n = 0;
        for (at, _, enc) in &intervals {
            if *at >= from && *at <= to {
                HistogramDecoder::default()
                    .add_encoded(enc, &mut sum)
                    .unwrap();
                n += 1;
            }
        }
        assert_eq!(n, lines, "{from}..{to}");
        assert_eq!(sum.count(), count, "{from}..{to}");
        assert_eq!(
            sum.quantiles_us([0.5, 0.9, 0.99, 0.999, 1.0]),
            values,
            "{from}..{to}"
        );
        assert_eq!(sum.max_us(), values[4], "{from}..{to}");
        let off = (sum.mean_us() - mean) / mean;
        assert!(
            (0.0..1.0 / 256.0).contains(&off),
            "{from}..{to}: mean {} vs {mean}",
            sum.mean_us()
        );
    }
}

/// HdrHistogram's tagged log: every histogram comes twice, once tagged `A`; both
/// halves read to the same histogram, 32290 values in all (HdrHistogram_py's
/// `test_tagged_v2_log`).
#[test]
fn hdrhistograms_own_tagged_log_reads_both_halves_alike() {
    let log = include_str!("../../fixtures/hdrhistogram/tagged-Log.logV2.hlog");
    let (mut tagged, mut plain) = (LatencyHistogram::new(), LatencyHistogram::new());
    for (_, tag, enc) in hlog_intervals(log) {
        match tag.as_deref() {
            Some("A") => {
                LatencyHistogram::add(&mut tagged, &LatencyHistogram::decode(&enc).unwrap())
            }
            None => plain.add(&LatencyHistogram::decode(&enc).unwrap()),
            Some(other) => panic!("unexpected tag {other}"),
        }
    }
    assert_eq!(tagged.count() + plain.count(), 32_290);
    assert_eq!(tagged, plain);
}

/// A histogram handed to the `hdrhistogram` crate keeps every count in its slot:
/// the crate's own figures and its deflate form (what HdrHistogram's interval logs
/// hold) read back to the same histogram.
#[test]
fn the_crates_histogram_holds_the_same_counts() {
    for values in shapes() {
        let h = ours(&values);
        let r = h.to_hdrhistogram();
        assert_eq!(r.len(), h.count(), "{values:?}");
        if h.is_empty() {
            continue;
        }
        assert_eq!(r.max(), h.max_us());
        assert_eq!(r.min(), h.min_us());
        assert_eq!(r.value_at_quantile(0.99), h.quantile_us(0.99));
        // The crate sums in floating point, pado in integers.
        assert!((r.mean() - h.mean_us()).abs() <= 1e-9 * h.mean_us());
        let mut deflated = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&r, &mut deflated)
            .unwrap();
        assert_eq!(LatencyHistogram::decode(&b64(&deflated)).unwrap(), h);
    }
}
