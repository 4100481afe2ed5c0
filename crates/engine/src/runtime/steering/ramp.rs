//! A change of the load spread over time: a level that moves linearly from one
//! value to another. The workers never read a ramp: a worker's clock task writes
//! its current value into the plain atomic they read (every 20 ms), so a ramped
//! change costs the hot path nothing more than a change made at once.

use std::time::{Duration, Instant};

/// A linear move from `from` to `to` over `length`, starting at `start`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ramp {
    /// The level when the ramp starts.
    pub from: f64,
    /// The level it ends at (and stays at).
    pub to: f64,
    /// When it starts.
    pub start: Instant,
    /// How long it takes.
    pub length: Duration,
}

impl Ramp {
    /// The level at `now`: `from` before the start, `to` from the end on.
    pub fn at(&self, now: Instant) -> f64 {
        let done = now.saturating_duration_since(self.start).as_secs_f64();
        let len = self.length.as_secs_f64();
        if len <= 0.0 || done >= len {
            return self.to;
        }
        self.from + (self.to - self.from) * done / len
    }

    /// Whether the ramp has reached its end at `now`.
    pub fn done(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.start) >= self.length
    }

    /// The whole VUs of the level at `now`, rounded to the nearest (1 → 4 over 3 s
    /// gives 2 from 0.5 s, 3 from 1.5 s, 4 from 2.5 s).
    pub fn vus_at(&self, now: Instant) -> u64 {
        self.at(now).round().max(0.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_ramp_moves_linearly_between_its_levels_at_planted_times() {
        let t = Instant::now();
        let r = Ramp {
            from: 1.0,
            to: 4.0,
            start: t,
            length: ms(3000),
        };
        assert_eq!(r.at(t), 1.0);
        assert!((r.at(t + ms(1000)) - 2.0).abs() < 1e-9);
        assert!((r.at(t + ms(2500)) - 3.5).abs() < 1e-9);
        assert_eq!(r.at(t + ms(3000)), 4.0);
        assert_eq!(r.at(t + ms(9000)), 4.0);
        assert_eq!(r.vus_at(t + ms(400)), 1);
        assert_eq!(r.vus_at(t + ms(600)), 2);
        assert_eq!(r.vus_at(t + ms(1600)), 3);
        assert_eq!(r.vus_at(t + ms(2600)), 4);
        assert!(!r.done(t + ms(2999)) && r.done(t + ms(3000)));
        // Down as well as up.
        let down = Ramp {
            from: 200.0,
            to: 100.0,
            start: t,
            length: ms(10_000),
        };
        assert!((down.at(t + ms(2500)) - 175.0).abs() < 1e-9);
    }

    #[test]
    fn a_ramp_of_no_length_is_its_end_at_once() {
        let t = Instant::now();
        let r = Ramp {
            from: 1.0,
            to: 3.0,
            start: t,
            length: Duration::ZERO,
        };
        assert_eq!(r.at(t), 3.0);
        assert!(r.done(t));
    }
}
