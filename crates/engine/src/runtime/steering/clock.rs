//! The plan's clock when someone holds or skips a stage: schedule time (where the
//! run is in its plan) as a function of real time since second 0. Without a
//! change the two are equal; a hold freezes schedule time for a while (the load
//! stays at its level), a skip jumps it forward to the next stage's start. Every
//! later stage, the run's end included, moves with it.
//!
//! A [`ClockMap`] is a short list of pieces, one per change, so that both ways
//! (real → schedule, schedule → real) are exact for any moment of the run: the
//! stage marks written after the run are the real times the stages ran at.

use std::time::Duration;

/// The most a run may be made longer by holds, in all: a hold is meant to look at
/// a level for a while, not to turn a test into a soak by accident.
pub const MAX_HELD: Duration = Duration::from_secs(24 * 3600);

/// One piece of the map: from real time `real` on, schedule time is
/// `max(floor, real - shift)` (frozen at `floor` until `floor + shift`, a hold).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Piece {
    /// Real time the piece starts at (since second 0).
    real: Duration,
    /// Schedule time at its start.
    floor: Duration,
    /// Real minus schedule time once the piece runs freely, in ns (negative after
    /// skips).
    shift_ns: i128,
    /// When the hold this piece is part of began (real time), for a hold; kept
    /// across a hold extended by another.
    hold_from: Option<Duration>,
}

impl Piece {
    /// Real time at which schedule time starts moving again (the piece's start
    /// when it does not hold).
    fn resume(&self) -> Duration {
        from_ns(self.floor.as_nanos() as i128 + self.shift_ns).max(self.real)
    }

    fn schedule_at(&self, real: Duration) -> Duration {
        from_ns(real.as_nanos() as i128 - self.shift_ns).max(self.floor)
    }
}

fn from_ns(ns: i128) -> Duration {
    Duration::from_nanos(ns.clamp(0, u64::MAX as i128) as u64)
}

/// A held level, as an open-model scheduler keeps it going: from `from` to `until`
/// (real times since second 0) the plan stands still at schedule time `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldSpan {
    /// Real start of the hold.
    pub from: Duration,
    /// Real end of the hold (when the plan goes on, or a skip ended it).
    pub until: Duration,
    /// The schedule time the plan stands at meanwhile.
    pub at: Duration,
}

/// Schedule time as a function of real time (see the module's documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockMap {
    pieces: Vec<Piece>,
    /// Schedule ranges jumped over by skips, in order.
    skipped: Vec<(Duration, Duration)>,
}

impl Default for ClockMap {
    fn default() -> Self {
        ClockMap {
            pieces: vec![Piece {
                real: Duration::ZERO,
                floor: Duration::ZERO,
                shift_ns: 0,
                hold_from: None,
            }],
            skipped: Vec::new(),
        }
    }
}

/// Why a hold or a skip cannot be made.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ClockError {
    /// Holds would make the run longer than [`MAX_HELD`] in all.
    #[error("holds may add at most {max_h} h to a run in all; {held_s:.0} s are held already", max_h = MAX_HELD.as_secs() / 3600)]
    TooLong {
        /// Seconds held so far.
        held_s: f64,
    },
    /// A skip that does not go forward.
    #[error("nothing to skip: the plan is already past {to_s:.1} s")]
    Backwards {
        /// Where the skip would go, seconds of the plan.
        to_s: f64,
    },
}

impl ClockMap {
    /// Whether the clock was ever changed (a run nobody held or skipped: real time
    /// is schedule time).
    pub fn is_identity(&self) -> bool {
        self.pieces.len() == 1
    }

    fn last(&self) -> &Piece {
        // Never empty: built with one piece, only ever pushed to.
        &self.pieces[self.pieces.len() - 1]
    }

    /// Where the plan is at real time `real` (since second 0).
    pub fn schedule_at(&self, real: Duration) -> Duration {
        let i = self.pieces.partition_point(|p| p.real <= real).max(1) - 1;
        self.pieces[i].schedule_at(real)
    }

    /// The real time (since second 0) at which the plan reaches schedule time
    /// `sched`: its first moment at or past it. A time inside a skipped range is
    /// reached when the skip was made.
    pub fn real_at(&self, sched: Duration) -> Duration {
        let last = self.last();
        if sched > last.floor {
            return from_ns(sched.as_nanos() as i128 + last.shift_ns);
        }
        for (i, p) in self.pieces.iter().enumerate() {
            let end = self.pieces.get(i + 1).map(|n| n.real);
            if sched <= p.floor {
                return p.real;
            }
            let at = from_ns(sched.as_nanos() as i128 + p.shift_ns).max(p.resume());
            if end.is_none_or(|e| at < e) {
                return at;
            }
        }
        last.real
    }

    /// Real minus schedule time now (held minus skipped): how much later than
    /// planned the plan's end comes.
    pub fn shift(&self) -> i128 {
        self.last().shift_ns
    }

    /// Seconds held so far, in all.
    pub fn held(&self) -> Duration {
        let mut held = Duration::ZERO;
        for (i, p) in self.pieces.iter().enumerate() {
            let end = self
                .pieces
                .get(i + 1)
                .map_or(p.resume(), |n| n.real.min(p.resume()));
            held += end.saturating_sub(p.real);
        }
        held
    }

    /// Hold the plan at real time `now` for `length`: schedule time stands still
    /// for that long (added to a hold already running). Every later moment of the
    /// plan comes `length` later.
    pub fn hold(&mut self, now: Duration, length: Duration) -> Result<(), ClockError> {
        let held = self.held();
        if held + length > MAX_HELD {
            return Err(ClockError::TooLong {
                held_s: held.as_secs_f64(),
            });
        }
        let last = *self.last();
        let now = now.max(last.real);
        let floor = last.schedule_at(now);
        let resume = last.resume().max(now) + length;
        let hold_from = match last.hold_from {
            Some(from) if last.resume() > now => from,
            _ => now,
        };
        self.pieces.push(Piece {
            real: now,
            floor,
            shift_ns: resume.as_nanos() as i128 - floor.as_nanos() as i128,
            hold_from: Some(hold_from),
        });
        Ok(())
    }

    /// Jump the plan at real time `now` to schedule time `to` (a stage's end):
    /// what lay between is not run, and a hold running ends.
    pub fn skip_to(&mut self, now: Duration, to: Duration) -> Result<(), ClockError> {
        let last = *self.last();
        let now = now.max(last.real);
        let from = last.schedule_at(now);
        if to <= from {
            return Err(ClockError::Backwards {
                to_s: to.as_secs_f64(),
            });
        }
        self.skipped.push((from, to));
        self.pieces.push(Piece {
            real: now,
            floor: to,
            shift_ns: now.as_nanos() as i128 - to.as_nanos() as i128,
            hold_from: None,
        });
        Ok(())
    }

    /// Whether schedule time `sched` was jumped over by a skip (an open-model
    /// arrival planned there is not started).
    pub fn skipped(&self, sched: Duration) -> bool {
        self.skipped.iter().any(|&(a, b)| a <= sched && sched < b)
    }

    /// Every hold so far, each with its real span (the last may still run).
    pub fn holds(&self) -> Vec<HeldSpan> {
        let mut out: Vec<HeldSpan> = Vec::new();
        for (i, p) in self.pieces.iter().enumerate() {
            let Some(from) = p.hold_from else { continue };
            let until = self
                .pieces
                .get(i + 1)
                .map_or(p.resume(), |n| n.real.min(p.resume()));
            match out.last_mut() {
                Some(h) if h.from == from => h.until = until,
                _ => out.push(HeldSpan {
                    from,
                    until,
                    at: p.floor,
                }),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: f64) -> Duration {
        Duration::from_secs_f64(x)
    }

    #[test]
    fn an_untouched_clock_is_real_time() {
        let c = ClockMap::default();
        assert!(c.is_identity());
        assert_eq!(c.schedule_at(s(7.5)), s(7.5));
        assert_eq!(c.real_at(s(7.5)), s(7.5));
        assert_eq!(c.shift(), 0);
    }

    /// Stages at 0–10 s and 10–20 s: a 5 s hold made at 4 s keeps the plan at 4 s
    /// until 9 s, and every later moment of the plan (the second stage, the end)
    /// comes exactly 5 s later.
    #[test]
    fn a_hold_shifts_every_later_stage_by_exactly_the_hold() {
        let mut c = ClockMap::default();
        c.hold(s(4.0), s(5.0)).unwrap();
        assert_eq!(c.schedule_at(s(3.0)), s(3.0));
        assert_eq!(c.schedule_at(s(4.0)), s(4.0));
        assert_eq!(c.schedule_at(s(8.9)), s(4.0));
        assert_eq!(c.schedule_at(s(9.0)), s(4.0));
        assert_eq!(c.schedule_at(s(10.0)), s(5.0));
        assert_eq!(c.real_at(s(10.0)), s(15.0));
        assert_eq!(c.real_at(s(20.0)), s(25.0));
        // Before the hold nothing moved.
        assert_eq!(c.real_at(s(2.0)), s(2.0));
        assert_eq!(c.shift(), s(5.0).as_nanos() as i128);
        assert_eq!(c.held(), s(5.0));
        assert_eq!(
            c.holds(),
            vec![HeldSpan {
                from: s(4.0),
                until: s(9.0),
                at: s(4.0)
            }]
        );
    }

    #[test]
    fn a_second_hold_during_the_first_adds_to_it() {
        let mut c = ClockMap::default();
        c.hold(s(4.0), s(5.0)).unwrap();
        c.hold(s(6.0), s(2.0)).unwrap();
        assert_eq!(c.schedule_at(s(10.5)), s(4.0));
        assert_eq!(c.schedule_at(s(12.0)), s(5.0));
        assert_eq!(c.real_at(s(10.0)), s(17.0));
        assert_eq!(c.held(), s(7.0));
        let h = c.holds();
        assert_eq!(h.len(), 1, "{h:?}");
        assert_eq!((h[0].from, h[0].until), (s(4.0), s(11.0)));
    }

    /// A skip made at 3 s out of a stage ending at 10 s: the plan is at 10 s at
    /// once, the later stages come 7 s earlier, and what lay between is skipped.
    #[test]
    fn a_skip_ends_the_stage_now() {
        let mut c = ClockMap::default();
        c.skip_to(s(3.0), s(10.0)).unwrap();
        assert_eq!(c.schedule_at(s(2.0)), s(2.0));
        assert_eq!(c.schedule_at(s(3.0)), s(10.0));
        assert_eq!(c.schedule_at(s(4.0)), s(11.0));
        assert_eq!(c.real_at(s(20.0)), s(13.0));
        // A moment inside the skipped range was reached at the skip.
        assert_eq!(c.real_at(s(5.0)), s(3.0));
        assert!(c.skipped(s(5.0)) && !c.skipped(s(10.0)) && !c.skipped(s(2.9)));
        assert_eq!(c.shift(), -(s(7.0).as_nanos() as i128));
        assert_eq!(
            c.skip_to(s(4.0), s(10.0)),
            Err(ClockError::Backwards { to_s: 10.0 })
        );
    }

    #[test]
    fn a_skip_during_a_hold_ends_the_hold() {
        let mut c = ClockMap::default();
        c.hold(s(4.0), s(10.0)).unwrap();
        c.skip_to(s(6.0), s(10.0)).unwrap();
        assert_eq!(c.schedule_at(s(7.0)), s(11.0));
        assert_eq!(c.held(), s(2.0));
        let h = c.holds();
        assert_eq!((h[0].from, h[0].until), (s(4.0), s(6.0)));
        // Stage marks: the first stage (0–10 s of the plan) ran from 0 to 6 s.
        assert_eq!(c.real_at(s(0.0)), s(0.0));
        assert_eq!(c.real_at(s(10.0)), s(6.0));
    }

    #[test]
    fn holds_are_bounded() {
        let mut c = ClockMap::default();
        c.hold(s(1.0), MAX_HELD - s(1.0)).unwrap();
        let e = c.hold(s(2.0), s(2.0)).unwrap_err();
        assert!(e.to_string().contains("24 h"), "{e}");
        c.hold(s(2.0), s(1.0)).unwrap();
    }
}
