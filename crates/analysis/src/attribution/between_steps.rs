//! The bottleneck table of a load that broke the SLA, read against the load just
//! below it that held: what a capacity search (and each point of an experiment)
//! names as the limit.
//!
//! Why not each step's own table: a step holds one constant rate, so it has no low
//! load of its own, and on a busy machine (a laptop, a CI runner) the machine's CPU
//! is 100% busy at every rate, the one that held included. Read alone, the step
//! that broke would name the machine's CPU; read against the step that held, the
//! CPU was as busy there, when the service kept up, so it is "busy throughout",
//! and what filled up between the two rates (a pool with requests now waiting) is
//! the limit.

use std::path::Path;

use pado_results::{read_observations, Observations, ResultDir, ResultError};

use super::{attribute, wanted, Attribution, Window};

/// Seconds between the held step's last scrape and the broken step's first on
/// the joined time axis (scrapes of the two runs never share a window).
const GAP_S: f64 = 5.0;

/// The table of the run in `broke` (a rate that broke the SLA) with the run in
/// `held` (the highest rate below it that held) as its low load. `None` when
/// neither observed the target.
pub fn between_steps(held: &Path, broke: &Path) -> Result<Option<Attribution>, ResultError> {
    let (held_obs, held_s) = read(held)?;
    let (broke_obs, broke_s) = read(broke)?;
    if broke_obs.is_empty() {
        return Ok(None);
    }
    let shift = -(held_s + GAP_S);
    let joined = join(held_obs, shift, broke_obs);
    let window = Window::new("the rate that broke", 0.0, broke_s);
    let baseline = Window::new("the rate below it that held", shift, shift + held_s);
    Ok(Some(attribute(
        &joined,
        window,
        Some(baseline),
        true,
        Vec::new(),
    )))
}

/// A step's scrapes and its planned length in seconds (its run's length when it
/// has no plan recorded).
fn read(dir: &Path) -> Result<(Observations, f64), ResultError> {
    let meta = ResultDir::open(dir)?.read_meta()?;
    let obs = read_observations(dir, &wanted)?;
    let secs = meta.planned_s.unwrap_or(meta.duration_s).max(1.0);
    Ok((obs, secs))
}

/// `held`'s scrapes moved `shift` seconds (before second 0) and `broke`'s, as one
/// set of observations: a series both have keeps both runs' points, in time
/// order; endpoints are `broke`'s (their counts are the step's own).
fn join(held: Observations, shift: f64, mut broke: Observations) -> Observations {
    for mut s in held.series {
        for p in &mut s.points {
            p.0 += shift;
        }
        match broke
            .series
            .iter_mut()
            .find(|b| b.endpoint == s.endpoint && b.name == s.name && b.labels == s.labels)
        {
            Some(b) => {
                s.points.append(&mut b.points);
                b.points = s.points;
            }
            None => broke.series.push(s),
        }
    }
    broke
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribution::Verdict;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    fn verdict(t: &Attribution, component: &str) -> Verdict {
        t.components
            .iter()
            .find(|r| r.component.starts_with(component))
            .unwrap_or_else(|| panic!("no row {component}: {t:#?}"))
            .verdict
    }

    /// Real steps of a capacity search on a machine kept 100% busy by other work:
    /// the demo target's pool of 4 connections at 5 ms a query serves 800/s; 655/s
    /// held, 852/s broke. The machine's CPU was full at both rates, so it is not
    /// what changed; the pool, with requests now waiting, is.
    #[test]
    fn the_pool_that_filled_between_the_rates_is_named_not_the_busy_machine() {
        let t = between_steps(&fixture("pool4-held-655"), &fixture("pool4-broke-852"))
            .unwrap()
            .expect("observed");
        assert_eq!(verdict(&t, "DB pool"), Verdict::Yes, "{t:#?}");
        assert_ne!(verdict(&t, "CPU (machine)"), Verdict::Yes, "{t:#?}");
        assert_ne!(verdict(&t, "Worker pool"), Verdict::Yes, "{t:#?}");
        let limit = t.limit.clone().unwrap_or_default();
        assert!(limit.starts_with("DB pool"), "{limit}");
    }

    /// Real steps of a capacity search on a machine kept busy by six spinning
    /// processes: the demo target's 4 workers share 2 connections at 5 ms a
    /// query; 337.5/s held, 421.9/s broke. The pool had both connections in use
    /// and workers waiting already at 337.5/s, and its waiting count cannot grow
    /// past the 2 workers without one, so by its own numbers it is busy
    /// throughout; what grew is the workers' queue (0 → 35), which waits on it.
    /// The pool is the limit, the workers its consequence: before, this pair
    /// named the worker pool.
    #[test]
    fn a_pool_full_at_both_rates_is_the_limit_when_the_threads_waiting_on_it_filled() {
        let t = between_steps(&fixture("pool2-held-338"), &fixture("pool2-broke-422"))
            .unwrap()
            .expect("observed");
        assert_eq!(verdict(&t, "DB pool"), Verdict::Yes, "{t:#?}");
        assert_eq!(verdict(&t, "Worker pool"), Verdict::Consequence, "{t:#?}");
        assert_ne!(verdict(&t, "CPU (machine)"), Verdict::Yes, "{t:#?}");
        // The six spinners kept the host's CPUs full, but the service's requests
        // waited for connections, not for CPU: its CPU is not "contended".
        assert_eq!(verdict(&t, "CPU (process)"), Verdict::No, "{t:#?}");
        let limit = t.limit.clone().unwrap_or_default();
        assert_eq!(limit, "DB pool HikariPool-1 (app)", "{t:#?}");
    }

    /// The must-not-fire side: the rate that held read against itself shows
    /// nothing that changed, so nothing is named the limit by change.
    #[test]
    fn a_rate_read_against_itself_names_no_change() {
        let held = fixture("pool4-held-655");
        let t = between_steps(&held, &held).unwrap().expect("observed");
        assert!(
            t.components.iter().all(|c| c.verdict != Verdict::Yes),
            "{t:#?}"
        );
    }
}
