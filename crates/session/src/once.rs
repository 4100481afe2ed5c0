//! `pado run FILE --once`: each scenario's flow run once by one VU, and the
//! verdict on it: the run passed when every request and every check did (a k6
//! script's `check` calls as a scenario's `checks:`). The
//! caller shows each exchange as it likes (the CLI prints it); this module owns
//! the counting and the rule, so every face of pado judges a single pass alike.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use pado_engine::trace::{Observer, Trace};

use crate::prepare::Prepared;
use crate::SessionError;

/// What one pass of every flow did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OnceOutcome {
    /// Exchanges made (requests, gRPC calls, WebSocket sessions).
    pub requests: u64,
    /// Of those, the ones that failed.
    pub failed: u64,
    /// Checks judged.
    pub checks: u64,
    /// Of those, the ones that failed.
    pub checks_failed: u64,
}

impl OnceOutcome {
    /// The verdict of `--once`: nothing failed, neither a request nor a check.
    pub fn passed(&self) -> bool {
        self.failed == 0 && self.checks_failed == 0
    }
}

/// Counts the traces of a single pass before handing each to the caller's
/// observer (which shows it).
struct Tally {
    show: Arc<dyn Observer>,
    requests: AtomicU64,
    failed: AtomicU64,
    checks: AtomicU64,
    checks_failed: AtomicU64,
}

impl Tally {
    fn count(&self, t: &Trace) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if t.failed {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        for c in &t.checks {
            self.checks.fetch_add(1, Ordering::Relaxed);
            if !c.ok {
                self.checks_failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn outcome(&self) -> OnceOutcome {
        OnceOutcome {
            requests: self.requests.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            checks: self.checks.load(Ordering::Relaxed),
            checks_failed: self.checks_failed.load(Ordering::Relaxed),
        }
    }
}

impl Observer for Tally {
    fn full(&self) -> bool {
        self.show.full()
    }

    fn exchange(&self, t: Trace) {
        self.count(&t);
        self.show.exchange(t);
    }

    fn script_check(&self, scope: &str, name: &str, ok: bool) {
        self.checks.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.checks_failed.fetch_add(1, Ordering::Relaxed);
        }
        self.show.script_check(scope, name, ok);
    }
}

/// A single pass, compiled and ready: its name is known before it runs (for
/// the caller's heading).
pub struct SinglePass {
    plan: Arc<pado_engine::RunPlan>,
}

impl SinglePass {
    /// Compiles the prepared scenario for one pass.
    pub fn compile(prep: &Prepared) -> Result<SinglePass, SessionError> {
        let mut plan = pado_engine::compile(&prep.config, &prep.base_dir)
            .map_err(|e| SessionError::Invalid(format!("{}: {e}", prep.file)))?;
        // A k6 script's VUs (its setup, one iteration, its teardown).
        plan.script = prep.script.clone();
        Ok(SinglePass {
            plan: Arc::new(plan),
        })
    }

    /// The test's name.
    pub fn name(&self) -> &str {
        &self.plan.name
    }

    /// Runs each scenario's flow once (one VU, one iteration, no think times),
    /// handing every exchange to `show` as it finishes, and returns what the pass
    /// did. Writes no result directory.
    pub fn run(self, show: Arc<dyn Observer>) -> OnceOutcome {
        let tally = Arc::new(Tally {
            show,
            requests: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            checks: AtomicU64::new(0),
            checks_failed: AtomicU64::new(0),
        });
        pado_engine::run_single(self.plan, tally.clone());
        tally.outcome()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed request or a failed check fails the pass; nothing failed passes.
    #[test]
    fn the_pass_fails_on_any_failed_request_or_check() {
        let ok = OnceOutcome {
            requests: 3,
            failed: 0,
            checks: 4,
            checks_failed: 0,
        };
        assert!(ok.passed());
        assert!(!OnceOutcome { failed: 1, ..ok }.passed());
        assert!(!OnceOutcome {
            checks_failed: 1,
            ..ok
        }
        .passed());
        assert!(OnceOutcome::default().passed());
    }

    /// Shows nothing; remembers what it was told.
    #[derive(Default)]
    struct Seen(std::sync::Mutex<Vec<(String, bool)>>);

    impl Observer for Seen {
        fn exchange(&self, _: Trace) {}
        fn script_check(&self, _: &str, name: &str, ok: bool) {
            self.0.lock().unwrap().push((name.to_string(), ok));
        }
    }

    /// A script's checks count in the verdict and reach the caller's observer.
    #[test]
    fn a_scripts_checks_are_counted_and_shown() {
        let seen = Arc::new(Seen::default());
        let tally = Tally {
            show: seen.clone(),
            requests: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            checks: AtomicU64::new(0),
            checks_failed: AtomicU64::new(0),
        };
        tally.script_check("default", "status is 200", true);
        assert!(tally.outcome().passed());
        tally.script_check("default", "::login::has token", false);
        let o = tally.outcome();
        assert_eq!((o.checks, o.checks_failed), (2, 1));
        assert!(!o.passed());
        assert_eq!(
            *seen.0.lock().unwrap(),
            [
                ("status is 200".to_string(), true),
                ("::login::has token".to_string(), false)
            ]
        );
    }
}
