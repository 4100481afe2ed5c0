//! The coordinator's live loop: poll every generator's feed once a second, add
//! their seconds into seconds of the whole test ([`LiveMerger`]), hand each to the
//! caller (the progress line, the `abort_on_fail` thresholds) and, when the caller
//! or the user says so, stop every generator.
//!
//! How a generator is reached is the caller's ([`GeneratorLink`]: an agent's URL,
//! a pod through the Kubernetes API's proxy). Every wait is bounded: a generator
//! that stops answering or stops advancing is left out of the live view after
//! [`LiveOptions::stall_after`] (its result is still collected and merged at the
//! end, exactly), and the loop ends by [`LiveOptions::deadline`] whatever happens.
//! A generator's seconds are bounded the same way: one past the deadline's second
//! (the planned end, the graceful stop and a margin) is refused and the generator
//! left out, so a hostile or broken feed cannot make the loop release billions of
//! empty seconds.
//!
//! When asked ([`LiveOptions::observed_from`]), the loop also follows the target's
//! metrics the scraping generator writes ([`crate::observed_tail`]), polled right
//! after that generator's seconds and handed to the caller scrape by scrape.

use std::time::{Duration, Instant};

use pado_metrics::{ScrapeOutcome, Totals};
use pado_results::merge::live::{LiveMerger, LiveSecond};

use crate::observed_tail::{ObservedTail, ObservedTally};

/// One poll of a generator's feed.
#[derive(Debug, Default)]
pub struct LivePoll {
    /// Complete timeline lines from the second asked for.
    pub lines: Vec<u8>,
    /// The generator's run has ended (with `lines` empty: its feed is over).
    pub ended: bool,
}

/// A generator as the live loop reaches it.
#[allow(async_fn_in_trait)]
pub trait GeneratorLink {
    /// Its feed from second `from`.
    async fn live(&mut self, from: u32) -> Result<LivePoll, String>;
    /// Stop its run gracefully.
    async fn stop(&mut self) -> Result<(), String>;
    /// The complete lines of its `observe.jsonl` from line `from` on (bounded by
    /// the implementation); `Ok(None)` when it does not serve them (the default).
    async fn observed(&mut self, _from: usize) -> Result<Option<Vec<u8>>, String> {
        Ok(None)
    }
}

/// What the caller wants after a second.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// Keep going.
    Continue,
    /// Stop every generator, for this reason (said once).
    StopAll(String),
}

/// Bounds of the live loop.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// Time between polls.
    pub poll_every: Duration,
    /// The agreed start: no generator is expected to advance before it.
    pub start: Instant,
    /// How long a generator may go without a new second (past the start) before
    /// the live view goes on without it.
    pub stall_after: Duration,
    /// When the loop ends whatever the generators do (the planned end, the
    /// graceful stop and a margin).
    pub deadline: Instant,
    /// The generator whose scrapes of the target (`observe.jsonl`) are followed
    /// for the caller, if any (the one that scrapes: segment 0).
    pub observed_from: Option<usize>,
}

/// Something the live loop tells people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Generator `.0` is left out of the live view, because `.1`.
    LeftOut(usize, String),
    /// Every generator was asked to stop, because `.0`.
    Stopping(String),
    /// A generator did not take the stop: `.0` index, `.1` why.
    StopFailed(usize, String),
    /// Trouble with the target's metrics the loop follows (said once per kind;
    /// the test goes on).
    Observed(String),
}

/// How the live loop ended.
#[derive(Debug, Default)]
pub struct LiveOutcome {
    /// Seconds of the whole test released.
    pub seconds: u32,
    /// Why every generator was stopped, if they were.
    pub stopped: Option<String>,
    /// Generators left out of the live view (stalled or unreachable), by index.
    pub left_out: Vec<usize>,
    /// The deadline passed before every feed ended.
    pub timed_out: bool,
    /// The merged totals of what the live view saw.
    pub totals: Totals,
    /// What the loop saw of the target's metrics, when it followed them.
    pub observed: ObservedTally,
}

/// Polls `links` until every feed has ended (or was left out), handing each second
/// of the whole test to `on_second` (and, with [`LiveOptions::observed_from`],
/// each scrape of the target to `on_scrape`, with its endpoint's name).
/// `stop_asked` is polled between rounds (the user's Ctrl-C): when it returns a
/// reason, every generator is stopped, as for [`Control::StopAll`].
pub async fn watch<L: GeneratorLink>(
    links: &mut [L],
    opts: &LiveOptions,
    mut on_second: impl FnMut(&LiveSecond, &Totals) -> Control,
    mut on_scrape: impl FnMut(&str, &ScrapeOutcome),
    mut stop_asked: impl FnMut() -> Option<String>,
    mut notice: impl FnMut(Notice),
) -> LiveOutcome {
    let n = links.len();
    // The last second the test may have: the deadline's, counted from the start.
    let seconds = opts
        .deadline
        .saturating_duration_since(opts.start)
        .as_secs_f64()
        .ceil()
        .min(f64::from(u32::MAX)) as u32;
    let mut merger = LiveMerger::bounded(n, seconds.max(1));
    let mut last_progress = vec![opts.start; n];
    let mut out = LiveOutcome::default();
    let mut observed = opts.observed_from.filter(|g| *g < n).map(ObservedTail::new);
    loop {
        let round = Instant::now();
        for (g, link) in links.iter_mut().enumerate() {
            if merger.is_finished(g) {
                continue;
            }
            let from = merger.next_of(g);
            let live = link.live(from).await;
            // Its scrapes of the target, polled after its seconds (also in the
            // round its feed ends, so the last ones are taken).
            if let Some(tail) = observed.as_mut().filter(|t| t.generator == g) {
                tail.poll(link, &mut on_scrape, &mut notice).await;
                out.observed = tail.tally.clone();
            }
            match live {
                Ok(poll) => {
                    let mut advanced = false;
                    let mut bad = None;
                    for line in poll.lines.split(|b| *b == b'\n') {
                        if line.iter().all(u8::is_ascii_whitespace) {
                            continue;
                        }
                        let pushed = std::str::from_utf8(line)
                            .map_err(|e| e.to_string())
                            .and_then(pado_results::result_dir::parse_timeline_line)
                            .map_err(|e| format!("its feed could not be read: {e}"))
                            .and_then(|rec| {
                                merger
                                    .try_push(g, rec)
                                    .map_err(|e| format!("its feed was refused: {e}"))
                            });
                        match pushed {
                            Ok(kept) => advanced |= kept,
                            Err(e) => {
                                bad = Some(e);
                                break;
                            }
                        }
                    }
                    if let Some(e) = bad {
                        merger.finish(g);
                        out.left_out.push(g);
                        notice(Notice::LeftOut(g, e));
                    } else if poll.ended && poll.lines.is_empty() {
                        merger.finish(g);
                    } else if advanced || Instant::now() < opts.start {
                        last_progress[g] = Instant::now().max(opts.start);
                    }
                }
                Err(e) => {
                    let since = last_progress[g].max(opts.start);
                    if Instant::now() >= since + opts.stall_after {
                        merger.finish(g);
                        out.left_out.push(g);
                        notice(Notice::LeftOut(g, e));
                    }
                    continue;
                }
            }
            if !merger.is_finished(g)
                && Instant::now() >= last_progress[g].max(opts.start) + opts.stall_after
            {
                merger.finish(g);
                out.left_out.push(g);
                notice(Notice::LeftOut(
                    g,
                    format!(
                        "no new second for {} s (it may still be running; its result is collected at the end)",
                        opts.stall_after.as_secs()
                    ),
                ));
            }
        }
        let mut stop = None;
        while let Some(s) = merger.pop() {
            out.totals.add_second(&s.second);
            out.seconds = s.second.t + 1;
            if let Control::StopAll(why) = on_second(&s, &out.totals) {
                stop.get_or_insert(why);
            }
        }
        if stop.is_none() {
            stop = stop_asked();
        }
        if let (Some(why), None) = (stop, &out.stopped) {
            notice(Notice::Stopping(why.clone()));
            for (g, link) in links.iter_mut().enumerate() {
                if merger.is_finished(g) {
                    continue;
                }
                if let Err(e) = link.stop().await {
                    notice(Notice::StopFailed(g, e));
                }
            }
            out.stopped = Some(why);
        }
        if merger.is_done() {
            return out;
        }
        if Instant::now() >= opts.deadline {
            out.timed_out = true;
            return out;
        }
        let next = round + opts.poll_every;
        let now = Instant::now();
        if next > now {
            tokio::time::sleep(next - now).await;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use pado_metrics::{Interval, Phases, RequestSample, SecondRecord, SeriesKey, SeriesStats};
    use std::sync::{Arc, Mutex};

    /// A generator that sends `seconds` seconds of `per_second` requests each, one
    /// more second per poll, and ends; `stopped` is set by `stop`.
    struct Fake {
        seconds: u32,
        per_second: u64,
        sent: u32,
        stopped: Arc<Mutex<bool>>,
        dead: bool,
    }

    /// Second `t` of a generator's timeline: `n` requests of series `get`, all 200.
    pub(crate) fn line(t: u32, n: u64) -> String {
        let mut r = SecondRecord::new(t);
        let mut s = SeriesStats::new(SeriesKey::named("get"));
        for i in 0..n {
            s.record(&RequestSample {
                status: 200,
                phases: Phases {
                    duration_us: 1000 + i,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        r.absorb(Interval {
            vus: 1,
            vus_max: 1,
            series: vec![s],
            ..Default::default()
        });
        let mut l = pado_results::result_dir::timeline_line(&r).unwrap();
        l.push('\n');
        l
    }

    impl GeneratorLink for Fake {
        async fn live(&mut self, from: u32) -> Result<LivePoll, String> {
            if self.dead {
                return Err("refused".into());
            }
            let stopped = *self.stopped.lock().unwrap();
            let end = if stopped { self.sent } else { self.seconds };
            if from < end && self.sent < end {
                self.sent += 1;
            }
            let lines: String = (from..self.sent)
                .map(|t| line(t, self.per_second))
                .collect();
            Ok(LivePoll {
                ended: self.sent >= end,
                lines: lines.into_bytes(),
            })
        }
        async fn stop(&mut self) -> Result<(), String> {
            *self.stopped.lock().unwrap() = true;
            Ok(())
        }
    }

    fn fake(seconds: u32, per_second: u64) -> Fake {
        Fake {
            seconds,
            per_second,
            sent: 0,
            stopped: Arc::new(Mutex::new(false)),
            dead: false,
        }
    }

    fn opts() -> LiveOptions {
        LiveOptions {
            poll_every: Duration::from_millis(1),
            start: Instant::now(),
            stall_after: Duration::from_millis(300),
            deadline: Instant::now() + Duration::from_secs(20),
            observed_from: None,
        }
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    #[test]
    fn every_second_of_the_test_is_the_sum_of_the_generators() {
        let mut links = vec![fake(5, 3), fake(5, 4), fake(3, 10)];
        let mut seen = Vec::new();
        let out = rt().block_on(watch(
            &mut links,
            &opts(),
            |s, _| {
                seen.push((s.second.t, s.second.requests(), s.reporting));
                Control::Continue
            },
            |_, _| {},
            || None,
            |n| panic!("{n:?}"),
        ));
        assert_eq!(
            seen,
            vec![(0, 17, 3), (1, 17, 3), (2, 17, 3), (3, 7, 2), (4, 7, 2)]
        );
        assert_eq!(out.totals.overall().requests, 5 * 3 + 5 * 4 + 3 * 10);
        assert!(out.stopped.is_none() && out.left_out.is_empty() && !out.timed_out);
    }

    #[test]
    fn a_stop_reaches_every_generator_and_the_loop_ends() {
        let mut links = vec![fake(1000, 1), fake(1000, 1)];
        let flags: Vec<_> = links.iter().map(|l| l.stopped.clone()).collect();
        let mut notices = Vec::new();
        let out = rt().block_on(watch(
            &mut links,
            &opts(),
            |s, totals| {
                if totals.overall().requests >= 6 {
                    Control::StopAll(format!("enough at {}", s.second.t))
                } else {
                    Control::Continue
                }
            },
            |_, _| {},
            || None,
            |n| notices.push(n),
        ));
        assert_eq!(out.stopped.as_deref(), Some("enough at 2"));
        assert!(flags.iter().all(|f| *f.lock().unwrap()));
        assert_eq!(notices, vec![Notice::Stopping("enough at 2".into())]);
        assert!(out.seconds < 10, "{}", out.seconds);
    }

    #[test]
    fn an_unreachable_generator_is_left_out_and_the_rest_goes_on() {
        let mut dead = fake(5, 100);
        dead.dead = true;
        let mut links = vec![fake(4, 2), dead];
        let mut notices = Vec::new();
        let out = rt().block_on(watch(
            &mut links,
            &opts(),
            |_, _| Control::Continue,
            |_, _| {},
            || None,
            |n| notices.push(n),
        ));
        assert_eq!(out.left_out, vec![1]);
        assert_eq!(notices, vec![Notice::LeftOut(1, "refused".into())]);
        assert_eq!(out.totals.overall().requests, 8);
        assert_eq!(out.seconds, 4);
    }

    #[test]
    fn the_deadline_ends_the_loop() {
        // A generator that does not answer and is not given up on before the
        // deadline: only the deadline ends the loop.
        let mut silent = fake(1_000_000, 1);
        silent.dead = true;
        let mut links = vec![silent];
        let mut o = opts();
        o.stall_after = Duration::from_secs(60);
        o.deadline = Instant::now() + Duration::from_millis(200);
        o.poll_every = Duration::from_millis(20);
        let out = rt().block_on(watch(
            &mut links,
            &o,
            |_, _| Control::Continue,
            |_, _| {},
            || None,
            |_| {},
        ));
        assert!(out.timed_out);
    }

    /// A generator whose feed sends seconds 0..3 and then one at t = 4000000000.
    struct Hostile {
        polls: u32,
    }

    impl GeneratorLink for Hostile {
        async fn live(&mut self, from: u32) -> Result<LivePoll, String> {
            self.polls += 1;
            let mut lines: String = (from..3).map(|t| line(t, 2)).collect();
            if from >= 3 || self.polls > 1 {
                let far = line(0, 1).replacen("\"t\":0", "\"t\":4000000000", 1);
                assert!(far.contains("4000000000"), "{far}");
                lines.push_str(&far);
            }
            Ok(LivePoll {
                ended: false,
                lines: lines.into_bytes(),
            })
        }
        async fn stop(&mut self) -> Result<(), String> {
            Ok(())
        }
    }

    #[test]
    fn a_second_past_the_plan_leaves_the_generator_out_at_once() {
        let mut links = vec![Hostile { polls: 0 }];
        let mut notices = Vec::new();
        let mut released = Vec::new();
        let t = Instant::now();
        let out = rt().block_on(watch(
            &mut links,
            &opts(),
            |s, _| {
                released.push(s.second.t);
                Control::Continue
            },
            |_, _| {},
            || None,
            |n| notices.push(n),
        ));
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert_eq!(out.left_out, vec![0]);
        assert!(!out.timed_out);
        // Its three good seconds (6 requests) and nothing for the one past the plan.
        assert_eq!(released, vec![0, 1, 2]);
        assert_eq!(out.totals.overall().requests, 6);
        match &notices[..] {
            [Notice::LeftOut(0, why)] => assert!(
                why.contains("second 4000000000") && why.contains("past the end of the test"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ctrl_c_stops_every_generator() {
        let mut links = vec![fake(1000, 1)];
        let flag = links[0].stopped.clone();
        let mut polls = 0;
        let out = rt().block_on(watch(
            &mut links,
            &opts(),
            |_, _| Control::Continue,
            |_, _| {},
            || {
                polls += 1;
                (polls == 3).then(|| "Ctrl-C".to_string())
            },
            |_| {},
        ));
        assert_eq!(out.stopped.as_deref(), Some("Ctrl-C"));
        assert!(*flag.lock().unwrap());
    }

    /// A generator that also serves a planted `observe.jsonl`: two lines a poll,
    /// and the start of the next one, torn (not yet a line).
    struct Observing {
        inner: Fake,
        file: Vec<String>,
        asked: Arc<Mutex<Vec<usize>>>,
    }

    impl GeneratorLink for Observing {
        async fn live(&mut self, from: u32) -> Result<LivePoll, String> {
            self.inner.live(from).await
        }
        async fn stop(&mut self) -> Result<(), String> {
            self.inner.stop().await
        }
        async fn observed(&mut self, from: usize) -> Result<Option<Vec<u8>>, String> {
            self.asked.lock().unwrap().push(from);
            let mut out: String = self
                .file
                .iter()
                .skip(from)
                .take(2)
                .map(|l| format!("{l}\n"))
                .collect();
            if let Some(next) = self.file.get(from + 2) {
                out.push_str(&next[..next.len() / 2]);
            }
            Ok(Some(out.into_bytes()))
        }
    }

    /// The lines the writer makes of three scrapes of `app` (the pool's pending
    /// connections 1, 5, 5 and `up` 1 throughout), with two planted bad lines.
    fn planted_observe_file() -> Vec<String> {
        use pado_metrics::{MetricType, ScrapeSink, ScrapedSample};
        let dir = tempfile::tempdir().unwrap();
        let mut w = pado_results::ObserveWriter::create(dir.path()).unwrap();
        ScrapeSink::endpoint(&mut w, "app", "http://127.0.0.1:9/metrics", 1.0).unwrap();
        for (t, pending) in [(0.5, 1.0), (1.5, 5.0), (2.5, 5.0)] {
            let samples = vec![
                ScrapedSample {
                    name: "hikaricp_connections_pending".into(),
                    labels: vec![("pool".into(), "주문-풀".into())],
                    value: pending,
                    kind: MetricType::Gauge,
                },
                ScrapedSample {
                    name: "up".into(),
                    labels: Vec::new(),
                    value: 1.0,
                    kind: MetricType::Gauge,
                },
            ];
            let o = ScrapeOutcome {
                t,
                ms: 10.0,
                samples,
                ..Default::default()
            };
            ScrapeSink::scrape(&mut w, "app", o).unwrap();
        }
        w.flush().unwrap();
        let text = std::fs::read_to_string(dir.path().join(pado_results::OBSERVE_FILE)).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.insert(4, "{\"k\":\"scrape\",\"endpoint\":\"app\",".into());
        lines.insert(6, "파도 not a record".into());
        lines
    }

    #[test]
    fn generator_0_s_scrapes_reach_the_caller_whole_and_bad_lines_are_counted_once_said() {
        let file = planted_observe_file();
        let scrape_lines = file
            .iter()
            .filter(|l| l.contains("\"k\":\"scrape\",\"endpoint\":\"app\",\"t\""))
            .count();
        assert_eq!((scrape_lines, file.len()), (3, 8), "{file:#?}");
        let asked: Vec<_> = (0..2).map(|_| Arc::new(Mutex::new(Vec::new()))).collect();
        let mut links = vec![
            Observing {
                inner: fake(12, 1),
                file: file.clone(),
                asked: asked[0].clone(),
            },
            Observing {
                inner: fake(12, 1),
                file,
                asked: asked[1].clone(),
            },
        ];
        let mut o = opts();
        o.observed_from = Some(0);
        let mut scrapes = Vec::new();
        let mut notices = Vec::new();
        let out = rt().block_on(watch(
            &mut links,
            &o,
            |_, _| Control::Continue,
            |endpoint, s| {
                let pending = s
                    .samples
                    .iter()
                    .find(|x| x.name == "hikaricp_connections_pending")
                    .map(|x| (x.labels.clone(), x.value));
                let up = s.samples.iter().find(|x| x.name == "up").map(|x| x.value);
                scrapes.push((endpoint.to_string(), s.t, pending, up));
            },
            || None,
            |n| notices.push(n),
        ));
        let pool = vec![("pool".to_string(), "주문-풀".to_string())];
        assert_eq!(
            scrapes,
            vec![
                ("app".into(), 0.5, Some((pool.clone(), 1.0)), Some(1.0)),
                // `up` did not change: the file left it out, the scrape has it.
                ("app".into(), 1.5, Some((pool.clone(), 5.0)), Some(1.0)),
                ("app".into(), 2.5, Some((pool, 5.0)), Some(1.0)),
            ]
        );
        assert_eq!(out.observed.scrapes, 3);
        assert_eq!(out.observed.bad_lines, 2);
        assert_eq!(out.observed.failed_polls, 0);
        match &notices[..] {
            [Notice::Observed(why)] => assert!(why.contains("skipped"), "{why}"),
            other => panic!("{other:?}"),
        }
        // Only generator 0 is asked, each time from the first line it does not have.
        assert!(asked[1].lock().unwrap().is_empty());
        let from = asked[0].lock().unwrap().clone();
        // 8 lines: the endpoint, 2 series, 3 scrapes, 2 bad ones.
        assert_eq!(&from[..5], &[0, 2, 4, 6, 8], "{from:?}");
        assert!(from[5..].iter().all(|f| *f == 8), "{from:?}");
    }

    /// A generator whose `/observed` fails, or is not served.
    struct Unobserved {
        inner: Fake,
        answer: Result<Option<Vec<u8>>, String>,
        asked: u32,
    }

    impl GeneratorLink for Unobserved {
        async fn live(&mut self, from: u32) -> Result<LivePoll, String> {
            self.inner.live(from).await
        }
        async fn stop(&mut self) -> Result<(), String> {
            self.inner.stop().await
        }
        async fn observed(&mut self, _: usize) -> Result<Option<Vec<u8>>, String> {
            self.asked += 1;
            self.answer.clone()
        }
    }

    #[test]
    fn a_failing_feed_of_scrapes_is_counted_and_said_once_and_one_not_served_is_not_asked_again() {
        for (answer, failed) in [
            (Err("answer larger than 8 MiB".to_string()), true),
            (Ok(None), false),
        ] {
            let mut links = vec![Unobserved {
                inner: fake(5, 2),
                answer,
                asked: 0,
            }];
            let mut o = opts();
            o.observed_from = Some(0);
            let mut notices = Vec::new();
            let out = rt().block_on(watch(
                &mut links,
                &o,
                |_, _| Control::Continue,
                |_, _| panic!("no scrape"),
                || None,
                |n| notices.push(n),
            ));
            // Its seconds are all there: the scrapes' trouble never holds the test.
            assert_eq!(out.totals.overall().requests, 10);
            assert!(out.left_out.is_empty());
            assert_eq!(notices.len(), 1, "{notices:?}");
            if failed {
                assert!(links[0].asked > 1);
                assert_eq!(u64::from(links[0].asked), out.observed.failed_polls);
                assert!(matches!(&notices[0], Notice::Observed(w) if w.contains("8 MiB")));
            } else {
                assert_eq!(links[0].asked, 1);
                assert!(matches!(&notices[0], Notice::Observed(w) if w.contains("does not serve")));
            }
        }
    }
}
