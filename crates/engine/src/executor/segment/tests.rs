use std::time::Duration;

use super::*;
use crate::executor::{
    ConstantArrivalRate, ConstantVus, PerVuIterations, RampingArrivalRate, RampingVus,
    SharedIterations, Window,
};

const WEIGHTS: &[&[u32]] = &[
    &[1],
    &[1, 1],
    &[1, 1, 1],
    &[2, 1, 1],
    &[3, 2],
    &[1, 1, 4, 7, 2],
];

fn segments(weights: &[u32]) -> Vec<Segment> {
    (0..weights.len() as u32)
        .map(|i| Segment::new(i, weights.len() as u32, Some(weights)).unwrap())
        .collect()
}

#[test]
fn stripe_examples() {
    let seq = |w: &[u32], n: u64| -> Vec<u32> {
        let s = Stripe::new(w).unwrap();
        (0..n).map(|p| s.segment_of(p)).collect()
    };
    assert_eq!(seq(&[1, 1], 6), [0, 1, 0, 1, 0, 1]);
    assert_eq!(seq(&[2, 1, 1], 8), [0, 1, 0, 2, 0, 1, 0, 2]);
    assert_eq!(seq(&[1, 1, 1], 6), [0, 1, 2, 0, 1, 2]);
    // Only the ratios matter.
    assert_eq!(seq(&[4, 2, 2], 16), seq(&[2, 1, 1], 16));
    assert_eq!(Stripe::new(&[6, 3, 3]).unwrap().count_before(0, 12), 6);
    // Too fine a split is refused rather than built for minutes.
    assert_eq!(Stripe::new(&[999; 100]).unwrap().period.len(), 100);
    assert!(matches!(
        Stripe::new(&[1_000_000, 1]),
        Err(SegmentError::WeightSum(1_000_001))
    ));
}

#[test]
fn every_prefix_is_within_one_of_its_share() {
    let mut all: Vec<Vec<u32>> = WEIGHTS.iter().map(|w| w.to_vec()).collect();
    // Every weight vector of 1..=5 segments with weights 1..=4.
    for k in 1..=5u32 {
        let mut w = vec![1u32; k as usize];
        loop {
            all.push(w.clone());
            let mut i = 0;
            while i < w.len() && w[i] == 4 {
                w[i] = 1;
                i += 1;
            }
            if i == w.len() {
                break;
            }
            w[i] += 1;
        }
    }
    for w in all {
        let s = Stripe::new(&w).unwrap();
        let total: u64 = w.iter().map(|&x| x as u64).sum();
        let mut counts = vec![0u64; w.len()];
        for n in 1..=3 * total + 5 {
            counts[s.segment_of(n - 1) as usize] += 1;
            for (i, &c) in counts.iter().enumerate() {
                // |c - n·w/W| < 1, in integers: |c·W - n·w| < W.
                let diff = (c * total).abs_diff(n * w[i] as u64);
                assert!(diff < total, "weights {w:?}, prefix {n}, segment {i}: {c}");
                assert_eq!(s.count_before(i as u32, n), c, "{w:?} {n} {i}");
            }
        }
        // position() is the inverse of the stripe.
        for i in 0..w.len() as u32 {
            for m in 0..2 * total {
                let p = s.position(i, m);
                assert_eq!(s.segment_of(p), i);
                assert_eq!(s.count_before(i, p), m);
            }
        }
    }
}

#[test]
fn bad_flags_are_named() {
    assert_eq!(parse_segment("1/3"), Ok((1, 3)));
    assert!(matches!(
        parse_segment("3/3"),
        Err(SegmentError::IndexTooLarge { .. })
    ));
    assert_eq!(parse_segment("0/0"), Err(SegmentError::ZeroCount));
    for bad in ["1", "a/3", "1/3/4", "-1/3", ""] {
        assert!(
            matches!(parse_segment(bad), Err(SegmentError::Syntax(_))),
            "{bad}"
        );
    }
    assert_eq!(parse_weights("2, 1,1"), Ok(vec![2, 1, 1]));
    assert!(matches!(
        parse_weights("2,x"),
        Err(SegmentError::WeightSyntax(_))
    ));
    assert_eq!(
        Segment::new(0, 3, Some(&[1, 1])),
        Err(SegmentError::WeightCount { given: 2, count: 3 })
    );
    assert_eq!(
        Segment::new(0, 2, Some(&[1, 0])),
        Err(SegmentError::ZeroWeight { index: 1 })
    );
}

/// Active VUs of a closed schedule at `t`.
fn active(c: &ClosedSchedule, t: Duration) -> usize {
    c.vus
        .iter()
        .filter(|ws| ws.iter().any(|w: &Window| w.start <= t && t < w.end))
        .count()
}

fn closed(s: Schedule) -> ClosedSchedule {
    match s {
        Schedule::Closed(c) => c,
        Schedule::Open(_) => panic!("open"),
    }
}

fn open(s: Schedule) -> OpenSchedule {
    match s {
        Schedule::Open(o) => o,
        Schedule::Closed(_) => panic!("closed"),
    }
}

#[test]
fn closed_segments_add_up_to_the_whole_at_every_second() {
    let executors: Vec<Box<dyn Executor>> = vec![
        Box::new(ConstantVus {
            vus: 10,
            duration: Duration::from_secs(20),
        }),
        Box::new(RampingVus {
            start_vus: 2,
            stages: vec![
                (Duration::from_secs(10), 17.0),
                (Duration::from_secs(5), 17.0),
                (Duration::from_secs(10), 4.0),
                (Duration::from_secs(7), 23.0),
                (Duration::from_secs(5), 0.0),
            ],
            graceful_ramp_down: Duration::from_secs(30),
            step_text: None,
        }),
        Box::new(PerVuIterations {
            vus: 7,
            iterations: 5,
            max_duration: Duration::from_secs(60),
        }),
    ];
    for e in &executors {
        let whole = closed(e.schedule());
        for w in [&[1u32, 1, 1][..], &[2, 1, 1]] {
            let parts: Vec<ClosedSchedule> = segments(w)
                .iter()
                .map(|s| closed(split(e.schedule(), s)))
                .collect();
            let end = e.duration().as_secs();
            let mut seen_busy = false;
            for sec in 0..=end {
                for frac in [0u64, 500] {
                    let t = Duration::from_secs(sec) + Duration::from_millis(frac);
                    let sum: usize = parts.iter().map(|p| active(p, t)).sum();
                    let all = active(&whole, t);
                    assert_eq!(sum, all, "{e:?} {w:?} at {t:?}");
                    // And each segment carries its share then, within one VU.
                    let total: u32 = w.iter().sum();
                    for (i, p) in parts.iter().enumerate() {
                        let want = all as f64 * w[i] as f64 / total as f64;
                        let got = active(p, t) as f64;
                        assert!(
                            (got - want).abs() < 1.0,
                            "{e:?} {w:?} {i} at {t:?}: {got} vs {want}"
                        );
                    }
                    seen_busy |= sum > 0;
                }
            }
            assert!(seen_busy);
            // Every whole-test VU is in exactly one segment, with its windows and the
            // same iteration limit: per-vu-iterations totals are exact.
            let mut ids: Vec<u64> = Vec::new();
            for p in &parts {
                assert_eq!(p.iterations_per_vu, whole.iterations_per_vu);
                assert_eq!(p.id_space(), whole.vus.len() as u64);
                for (n, ws) in p.vus.iter().enumerate() {
                    let g = p.global_index(n as u64);
                    assert_eq!(ws, &whole.vus[g as usize]);
                    ids.push(g);
                }
            }
            ids.sort_unstable();
            assert_eq!(ids, (0..whole.vus.len() as u64).collect::<Vec<_>>());
        }
    }
}

#[test]
fn segmented_executor_reports_the_segments_own_load() {
    let whole = RampingVus {
        start_vus: 0,
        stages: vec![
            (Duration::from_secs(10), 9.0),
            (Duration::from_secs(10), 9.0),
        ],
        graceful_ramp_down: Duration::ZERO,
        step_text: None,
    };
    let segs = segments(&[2, 1, 1]);
    let e = SegmentedExecutor::new(Box::new(whole), segs[1].clone());
    let st = e.stages();
    // Of 9 VUs, positions 1 and 5 are segment 1's (0,1,0,2,0,1,0,2,0).
    assert_eq!(st[0].to, 2.0);
    assert_eq!(e.max_vus(), 2);
    assert_eq!(e.id_space(), 9);
    assert!(
        e.describe()
            .starts_with("segment 1/3 (1/4 of the load): 2 VUs"),
        "{}",
        e.describe()
    );
    let few = SegmentedExecutor::new(
        Box::new(ConstantVus {
            vus: 3,
            duration: Duration::from_secs(1),
        }),
        Segment::new(3, 4, None).unwrap(),
    );
    assert!(few.is_empty());
}

#[test]
fn open_segments_interleave_into_the_exact_whole_schedule() {
    let executors: Vec<Box<dyn Executor>> = vec![
        Box::new(ConstantArrivalRate {
            per_s: 37.0,
            duration: Duration::from_secs(9),
            pre_allocated_vus: 10,
            max_vus: 50,
        }),
        Box::new(RampingArrivalRate {
            start_per_s: 3.0,
            stages: vec![
                (Duration::from_secs(5), 80.0),
                (Duration::from_secs(4), 80.0),
                (Duration::from_secs(6), 1.0),
            ],
            pre_allocated_vus: 7,
            max_vus: 40,
        }),
    ];
    for e in &executors {
        let whole = open(e.schedule());
        let want: Vec<Duration> = whole.arrivals().collect();
        assert!(want.len() > 300);
        for w in [&[1u32, 1, 1][..], &[2, 1, 1], &[1, 1, 4, 7, 2]] {
            let parts: Vec<OpenSchedule> = segments(w)
                .iter()
                .map(|s| open(split(e.schedule(), s)))
                .collect();
            let mut got: Vec<Duration> = Vec::new();
            for p in &parts {
                let mine: Vec<Duration> = p.arrivals().collect();
                assert_eq!(mine.len() as u64, p.total());
                got.extend(mine);
            }
            got.sort_unstable();
            assert_eq!(got, want, "{e:?} {w:?}");
            // Interleaved, not in blocks: by any arrival of the whole schedule, each
            // segment has had its share of the arrivals so far, within one.
            let total: u32 = w.iter().sum();
            for (k, t) in want.iter().enumerate().step_by(7) {
                for (i, p) in parts.iter().enumerate() {
                    let so_far = p.arrivals().take_while(|a| a <= t).count() as f64;
                    let share = (k + 1) as f64 * w[i] as f64 / total as f64;
                    assert!(
                        (so_far - share).abs() < 1.0 + 1e-9,
                        "{w:?} {i} by {k}: {so_far} vs {share}"
                    );
                }
            }
            // Pools scale by share, at least 1; pool ids never collide.
            let mut ids = std::collections::HashSet::new();
            for p in &parts {
                assert!(p.max_vus >= 1 && p.pre_allocated_vus <= p.max_vus);
                assert!(p.max_vus as u64 <= whole.max_vus as u64);
                for m in 0..p.max_vus as u64 {
                    let id = p.vu_index(m);
                    assert!(id < p.id_space(), "{id} {}", p.id_space());
                    assert!(ids.insert(id), "id {id} twice");
                }
                assert_eq!(p.id_space(), parts[0].id_space());
            }
            let pools: u32 = parts.iter().map(|p| p.max_vus).sum();
            assert!(pools >= whole.max_vus && pools < whole.max_vus + w.len() as u32);
        }
    }
}

fn feed(rows: i64, pick: pado_scenario::PickMode) -> crate::data::Feed {
    let spec = pado_scenario::DataSpec {
        range: Some([0, rows - 1]),
        pick: Some(pick),
        ..Default::default()
    };
    crate::data::Feed::load("f", &spec, std::path::Path::new(".")).unwrap()
}

/// The rows each VU of a (split) schedule reads from a `unique` feed in `picks`
/// iterations, with VU ids as the runtime gives them (global index, whole id space).
fn unique_rows(f: &crate::data::Feed, ids: &[u64], space: u64, picks: u64) -> Vec<u64> {
    let mut rng = fastrand::Rng::with_seed(1);
    let mut out = Vec::new();
    for &id in ids {
        let mut c = f.cursor(id, space);
        for _ in 0..picks.min(c.share_len()) {
            out.push(f.pick(&mut c, &mut rng));
        }
    }
    out
}

#[test]
fn unique_rows_never_repeat_across_segments() {
    let f = feed(1000, pado_scenario::PickMode::Unique);
    let closed_whole = ConstantVus {
        vus: 11,
        duration: Duration::from_secs(1),
    };
    let open_whole = ConstantArrivalRate {
        per_s: 100.0,
        duration: Duration::from_secs(1),
        pre_allocated_vus: 3,
        max_vus: 10,
    };
    for w in [&[1u32, 1, 1][..], &[2, 1, 1]] {
        let mut closed_seen = std::collections::HashSet::new();
        let mut open_seen = std::collections::HashSet::new();
        let mut closed_vus = 0;
        for s in segments(w) {
            let c = closed(split(closed_whole.schedule(), &s));
            let ids: Vec<u64> = (0..c.vus.len() as u64).map(|n| c.global_index(n)).collect();
            closed_vus += ids.len();
            for row in unique_rows(&f, &ids, c.id_space(), 1000) {
                assert!(closed_seen.insert(row), "closed: row {row} twice ({w:?})");
            }
            let o = open(split(open_whole.schedule(), &s));
            let ids: Vec<u64> = (0..o.max_vus as u64).map(|m| o.vu_index(m)).collect();
            for row in unique_rows(&f, &ids, o.id_space(), 1000) {
                assert!(open_seen.insert(row), "open: row {row} twice ({w:?})");
            }
        }
        assert_eq!(closed_vus, 11);
        // Every row is some VU's: the shares cover the feed.
        assert_eq!(closed_seen.len(), 1000);
        assert!(open_seen.len() > 900);
    }
}

#[test]
fn sequential_rows_are_partitioned_between_segments() {
    for w in [&[1u32, 1, 1][..], &[2, 1, 1]] {
        let mut reads: Vec<Vec<u64>> = Vec::new();
        for s in segments(w) {
            let f = feed(10, pado_scenario::PickMode::Sequential);
            f.partition_sequential(&s);
            let mut c = f.cursor(0, 1);
            let mut rng = fastrand::Rng::with_seed(1);
            let mine = s.count_before(10) as usize;
            let got: Vec<u64> = (0..2 * mine).map(|_| f.pick(&mut c, &mut rng)).collect();
            // In order, then wrapping within the segment's own rows.
            assert!(got[..mine].windows(2).all(|p| p[0] < p[1]), "{got:?}");
            assert_eq!(got[..mine], got[mine..]);
            assert!(got.iter().all(|&r| s.contains(r)));
            reads.push(got[..mine].to_vec());
        }
        let mut all: Vec<u64> = reads.concat();
        all.sort_unstable();
        assert_eq!(all, (0..10).collect::<Vec<_>>(), "{w:?}");
    }
}

/// shared-iterations across segments: the segments' pools add up to the whole test's
/// iterations exactly and each holds its weight's share within one iteration (as k6's
/// execution segments scale `iterations`: 101 on two equal segments is 51 + 50), and
/// each segment's VUs take from their own pool only.
#[test]
fn shared_iterations_split_exactly_by_the_stripe() {
    for total in [20u64, 21, 100, 101, 999] {
        // A VU on every segment (the weights' lists have at most 5 segments).
        let e = SharedIterations::new(20, total, Duration::from_secs(60));
        for w in WEIGHTS {
            let sum_w: u32 = w.iter().sum();
            let pools: Vec<IterationPool> = segments(w)
                .iter()
                .map(|s| closed(split(e.schedule(), s)).shared_iterations.unwrap())
                .collect();
            let got: Vec<u64> = pools.iter().map(|p| p.total()).collect();
            assert_eq!(got.iter().sum::<u64>(), total, "{w:?} {total}: {got:?}");
            for (i, &g) in got.iter().enumerate() {
                let want = total as f64 * w[i] as f64 / sum_w as f64;
                assert!((g as f64 - want).abs() < 1.0, "{w:?} {total} {i}: {g}");
            }
        }
    }
    let [a, b] = <[Segment; 2]>::try_from(segments(&[1, 1])).unwrap();
    let e = SharedIterations::new(4, 101, Duration::from_secs(60));
    let (pa, pb) = (
        closed(split(e.schedule(), &a)).shared_iterations.unwrap(),
        closed(split(e.schedule(), &b)).shared_iterations.unwrap(),
    );
    assert_eq!((pa.total(), pb.total()), (51, 50));
    // Taking from one segment's pool leaves the other's whole.
    assert_eq!((0..100).filter(|_| pa.take()).count(), 51);
    assert_eq!((0..100).filter(|_| pb.take()).count(), 50);
}

/// A segment the stripe gives no VU gets no shared iteration; the segments with VUs
/// share all of them (k6 redistributes them so too), so the total stays exact.
#[test]
fn shared_iterations_go_only_to_segments_with_vus() {
    // 2 VUs on 3 segments: VU 0 on segment 0, VU 1 on segment 1, none on segment 2.
    let e = SharedIterations::new(2, 101, Duration::from_secs(60));
    let parts: Vec<ClosedSchedule> = segments(&[1, 1, 1])
        .iter()
        .map(|s| closed(split(e.schedule(), s)))
        .collect();
    let vus: Vec<usize> = parts.iter().map(|p| p.vus.len()).collect();
    assert_eq!(vus, [1, 1, 0]);
    let pools: Vec<u64> = parts
        .iter()
        .map(|p| p.shared_iterations.as_ref().unwrap().total())
        .collect();
    assert_eq!(pools, [51, 50, 0]);
    // Unequal weights: 3,1 with 1 VU: only segment 0 has it, and all 10 iterations.
    let e = SharedIterations::new(1, 10, Duration::from_secs(60));
    let pools: Vec<u64> = segments(&[3, 1])
        .iter()
        .map(|s| {
            closed(split(e.schedule(), s))
                .shared_iterations
                .unwrap()
                .total()
        })
        .collect();
    assert_eq!(pools, [10, 0]);
}
