//! The coordinator's live loop fed by hostile generators: each generator's feed
//! (what `/live?from=T` answers) is lines the input chooses, polled through the
//! real loop ([`pado_fleet::coordinate::watch`], which parses each line and adds it
//! through [`LiveMerger::bounded`]).
//!
//! The input: its first byte picks how many generators there are (1 to 3), its
//! second how far the test's start lies in the past (which sets the bound on `t`);
//! the rest is polls, each starting with a line `@@<g>` (generator `g`'s next
//! answer is the lines after it) or `@@<g>!` (its next poll fails). After its
//! polls a generator's feed says it ended. Generator 0 also serves the target's
//! scrapes (`/observed?from=N`), which the loop follows: `@@o` starts its next
//! answer there, `@@o!` makes that poll fail, `@@o?` answers that it serves none;
//! after those its answers are empty. The loop must end as soon as every feed
//! has (never waiting for its deadline), release the test's seconds once each, in
//! order from 0, never one past the bound, never count more generators in a
//! second than there are, hand on no more scrapes than the lines it was given,
//! and say each kind of trouble with the scrapes once.
//!
//! [`LiveMerger::bounded`]: pado_results::merge::live::LiveMerger::bounded

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use pado_fleet::coordinate::{self, Control, GeneratorLink, LiveOptions, LivePoll, Notice};

use super::block_on;

/// Tokens of the input language for the mutator.
pub(crate) const DICT: &[&[u8]] = &[
    b"\n@@0\n",
    b"\n@@1\n",
    b"\n@@2\n",
    b"\n@@1!\n",
    b"{\"t\":",
    b"{\"t\":0,\"vus\":1,\"vus_max\":1}\n",
    b"{\"t\":1,\"vus\":1,\"vus_max\":1}\n",
    b"{\"t\":4294967295,\"vus\":0,\"vus_max\":0}\n",
    b"{\"t\":4000000000,\"vus\":1,\"vus_max\":1}\n",
    b"\"vus\":4294967295",
    b"\"series\":[",
    b"\"hist\":",
    b"\"generator\":",
    b"\"status\":{\"200\":",
    b"\"requests\":18446744073709551615",
    b"\n@@o\n",
    b"\n@@o!\n",
    b"\n@@o?\n",
    b"{\"k\":\"endpoint\",\"endpoint\":\"app\",\"url\":\"x\",\"interval_s\":1}\n",
    b"{\"k\":\"series\",\"id\":4294967295,\"endpoint\":\"app\",\"name\":\"up\"}\n",
    b"{\"k\":\"scrape\",\"endpoint\":\"app\",\"t\":1,\"ms\":1,\"ok\":true,\"v\":[[0,1]],\"gone\":[0]}\n",
];

/// A generator whose answers are the input's.
struct Scripted {
    polls: VecDeque<Option<Vec<u8>>>,
    /// Its answers to `/observed`: lines, a failure (`Err`), or none served.
    observed: VecDeque<Result<Option<Vec<u8>>, ()>>,
    stopped: bool,
}

impl GeneratorLink for Scripted {
    async fn live(&mut self, _from: u32) -> Result<LivePoll, String> {
        match self.polls.pop_front() {
            Some(Some(lines)) => Ok(LivePoll {
                lines,
                ended: false,
            }),
            Some(None) => Err("connection refused".into()),
            None => Ok(LivePoll {
                lines: Vec::new(),
                ended: true,
            }),
        }
    }

    async fn stop(&mut self) -> Result<(), String> {
        self.stopped = true;
        Ok(())
    }

    async fn observed(&mut self, _from: usize) -> Result<Option<Vec<u8>>, String> {
        match self.observed.pop_front() {
            Some(Ok(lines)) => Ok(lines),
            Some(Err(())) => Err("answer larger than 8 MiB".into()),
            None => Ok(Some(Vec::new())),
        }
    }
}

/// Three generators sending the sample result's seconds in a few polls each, one
/// generator ahead of the others; one whose poll fails once; one sending a second
/// far past the plan.
pub(crate) fn seeds() -> Vec<Vec<u8>> {
    let lines: Vec<&[u8]> = super::TIMELINE
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let mut a = vec![2u8, 10, b'\n'];
    for (g, from, to) in [(0, 0, 2), (1, 0, 1), (2, 0, 3), (1, 1, 3), (0, 2, 3)] {
        a.extend_from_slice(format!("@@{g}\n").as_bytes());
        for l in &lines[from..to] {
            a.extend_from_slice(l);
            a.push(b'\n');
        }
    }
    let mut b = vec![1u8, 5, b'\n'];
    b.extend_from_slice(b"@@1!\n@@0\n");
    b.extend_from_slice(lines[0]);
    b.extend_from_slice(b"\n@@1\n");
    b.extend_from_slice(lines[0]);
    b.push(b'\n');
    let mut c = vec![0u8, 0, b'\n'];
    c.extend_from_slice(
        b"@@0\n{\"t\":0,\"vus\":1,\"vus_max\":1}\n{\"t\":4000000000,\"vus\":1,\"vus_max\":1}\n",
    );
    // Generator 0's scrapes of the sample result in two answers, a failed poll
    // between them, then one that says it serves none.
    let observe: Vec<&[u8]> = super::OBSERVE
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let half = observe.len() / 2;
    let mut d = vec![1u8, 10, b'\n'];
    d.extend_from_slice(b"@@0\n");
    d.extend_from_slice(lines[0]);
    // More polls of its seconds (empty), so its scrapes are asked for 4 times.
    d.extend_from_slice(b"\n@@0\n@@0\n@@0\n@@o\n");
    for l in &observe[..half] {
        d.extend_from_slice(l);
        d.push(b'\n');
    }
    d.extend_from_slice(b"@@o!\n@@o\n");
    for l in &observe[half..] {
        d.extend_from_slice(l);
        d.push(b'\n');
    }
    d.extend_from_slice(b"@@o?\n@@1\n");
    d.extend_from_slice(lines[0]);
    d.push(b'\n');
    vec![a, b, c, d]
}

/// The input's generators, their polls, and the seconds-ago of the start.
fn script(data: &[u8]) -> (Vec<Scripted>, u64) {
    let n = 1 + usize::from(data.first().copied().unwrap_or(0) % 3);
    let ago = u64::from(data.get(1).copied().unwrap_or(0) % 100);
    let mut links: Vec<Scripted> = (0..n)
        .map(|_| Scripted {
            polls: VecDeque::new(),
            observed: VecDeque::new(),
            stopped: false,
        })
        .collect();
    let body = data.get(2..).unwrap_or_default();
    // Where the lines go: generator `g`'s next answer, or generator 0's scrapes.
    let mut current: Option<usize> = None;
    let mut scrapes = false;
    for line in body.split_inclusive(|b| *b == b'\n') {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let answer = match text {
            b"@@o" => Some(Ok(Some(Vec::new()))),
            b"@@o!" => Some(Err(())),
            b"@@o?" => Some(Ok(None)),
            _ => None,
        };
        if let Some(a) = answer {
            scrapes = matches!(a, Ok(Some(_)));
            current = None;
            links[0].observed.push_back(a);
            continue;
        }
        if scrapes {
            if let Some(Ok(Some(lines))) = links[0].observed.back_mut() {
                lines.extend_from_slice(line);
            }
            continue;
        }
        if let Some(rest) = text.strip_prefix(b"@@") {
            let (g, fails) = match rest {
                [d, b'!'] => (d, true),
                [d] => (d, false),
                _ => (&b'x', false),
            };
            if d_is_generator(*g, n) {
                let g = usize::from(g - b'0');
                links[g].polls.push_back((!fails).then(Vec::new));
                current = (!fails).then_some(g);
                scrapes = false;
                continue;
            }
        }
        if let Some(g) = current {
            if let Some(Some(poll)) = links[g].polls.back_mut() {
                poll.extend_from_slice(line);
            }
        }
    }
    (links, ago)
}

fn d_is_generator(d: u8, n: usize) -> bool {
    d.is_ascii_digit() && usize::from(d - b'0') < n
}

/// The live loop over the input's generators.
pub fn live(data: &[u8]) {
    run(data);
}

/// [`live`], returning how the loop ended.
fn run(data: &[u8]) -> coordinate::LiveOutcome {
    let (mut links, ago) = script(data);
    let n = links.len();
    let polls: usize = links.iter().map(|l| l.polls.len()).sum();
    let scrape_lines: usize = links[0]
        .observed
        .iter()
        .map(|a| match a {
            Ok(Some(lines)) => lines.iter().filter(|b| **b == b'\n').count(),
            _ => 0,
        })
        .sum();
    let now = Instant::now();
    let start = now.checked_sub(Duration::from_secs(ago)).unwrap_or(now);
    // Far enough that a loop which ends only by it is caught as a hang, not passed.
    let deadline = now + Duration::from_secs(5);
    let bound = deadline
        .saturating_duration_since(start)
        .as_secs_f64()
        .ceil() as u32;
    let opts = LiveOptions {
        poll_every: Duration::ZERO,
        start,
        // Longer than any input: a generator is left out for its feed, not a stall.
        stall_after: Duration::from_secs(3600),
        deadline,
        observed_from: Some(0),
    };
    let stop_at = data.get(1).copied().map(u32::from);
    let mut next = 0u32;
    let mut notices = 0usize;
    let mut observed_notices = 0usize;
    let mut scrapes = 0usize;
    let out = block_on(coordinate::watch(
        &mut links,
        &opts,
        |s, _totals| {
            assert_eq!(s.second.t, next, "live seconds out of order");
            next += 1;
            assert!(
                s.second.t < bound,
                "second {} released past the bound {bound}",
                s.second.t
            );
            assert!(s.reporting <= n, "{} reporting of {n}", s.reporting);
            assert_eq!(s.generators.len(), n);
            if stop_at == Some(s.second.t) {
                Control::StopAll("fuzz".into())
            } else {
                Control::Continue
            }
        },
        |endpoint, s| {
            scrapes += 1;
            assert!(!endpoint.is_empty() || s.samples.is_empty());
            assert!(s.samples.len() <= pado_results::observe_replay::MAX_SERIES);
        },
        || None,
        |notice| {
            if let Notice::Observed(why) = &notice {
                observed_notices += 1;
                assert!(!why.is_empty(), "trouble with the scrapes without words");
                return;
            }
            notices += 1;
            if let Notice::LeftOut(g, why) = notice {
                assert!(g < n, "left out generator {g} of {n}");
                assert!(!why.is_empty(), "left out without a reason");
            }
        },
    ));
    assert!(
        !out.timed_out,
        "the live loop ran to its deadline though every feed ended after {polls} polls"
    );
    assert_eq!(out.seconds, next, "seconds released");
    assert!(out.seconds <= bound);
    // Each generator is left out at most once; the stop is said once.
    assert!(notices <= n + 1, "{notices} notices for {n} generators");
    // No scrape that was not a line; each kind of trouble said once (a bad line,
    // a failed poll, none served).
    assert!(
        scrapes <= scrape_lines,
        "{scrapes} scrapes of {scrape_lines} lines"
    );
    assert_eq!(out.observed.scrapes, scrapes as u64);
    assert!(
        observed_notices <= 3,
        "{observed_notices} notices of the scrapes"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_release_the_planted_seconds() {
        // Three generators each send the sample's 3 seconds: 3 seconds released.
        let (links, ago) = script(&seeds()[0]);
        assert_eq!((links.len(), ago), (3, 10));
        assert_eq!(
            links.iter().map(|l| l.polls.len()).collect::<Vec<_>>(),
            vec![2, 2, 1]
        );
        let out = run(&seeds()[0]);
        assert_eq!((out.seconds, out.left_out.len()), (3, 0));
        for s in seeds() {
            live(&s);
        }
    }

    #[test]
    fn a_second_far_past_the_plan_leaves_its_generator_out() {
        // Seed 3: one generator, the start now, the deadline 5 s on: a bound of 5
        // seconds. It sends second 0, then second 4000000000: refused, the
        // generator left out, and only second 0 released (without the bound the
        // loop would release every second up to it).
        let out = run(&seeds()[2]);
        assert_eq!(out.left_out, vec![0]);
        assert_eq!(out.seconds, 1);
        assert!(!out.timed_out);
        // The same feed without the far second: no one is left out.
        let out = run(b"\x00\x00\n@@0\n{\"t\":0,\"vus\":1,\"vus_max\":1}\n");
        assert_eq!((out.left_out.len(), out.seconds), (0, 1));
    }

    #[test]
    fn the_sample_s_scrapes_reach_the_loop_through_a_failed_poll_and_none_is_asked_after_404() {
        let (links, _) = script(&seeds()[3]);
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].observed.len(), 4);
        assert!(links[1].observed.is_empty());
        let out = run(&seeds()[3]);
        // Every scrape line of the sample result, whole, and the failed poll counted.
        let scrape_lines = super::super::OBSERVE
            .split(|b| *b == b'\n')
            .filter(|l| l.starts_with(b"{\"k\":\"scrape\""))
            .count() as u64;
        assert!(scrape_lines > 0);
        assert_eq!(out.observed.scrapes, scrape_lines, "{:?}", out.observed);
        assert_eq!((out.observed.bad_lines, out.observed.failed_polls), (0, 1));
    }

    #[test]
    fn a_failing_poll_is_scripted_as_an_error() {
        let (links, _) = script(b"\x01\x00\n@@1!\n@@0!\n@@0\nabc\n");
        assert_eq!(links.len(), 2);
        assert_eq!(
            links[0].polls,
            VecDeque::from(vec![None, Some(b"abc\n".to_vec())])
        );
        assert_eq!(links[1].polls, VecDeque::from(vec![None]));
    }
}
