//! The bottleneck table of an open-model run splits low and peak load by the
//! planned arrival rate, not by active VUs.
//!
//! The fixtures are two real find-capacity steps against pado's demo target with a
//! database pool of 4 connections and a 5 ms query (so the pool serves at most
//! 4 / 5 ms = 800 queries/s) and 64 worker threads: one step offered 852 req/s
//! (past the pool's capacity), one 655 req/s (below it). In the step past capacity
//! the pool was full from its first second, while the VUs (a consequence of the
//! latency) were still few; read by VUs, those first seconds were "low load" and
//! the pool "busy throughout", and the worker threads waiting on it were named
//! the limit.

use std::path::Path;

use pado_analysis::attribution::Verdict;
use pado_report::summary::{bottlenecks_of, load};
use pado_results::ResultDir;

fn table(name: &str) -> pado_analysis::attribution::Attribution {
    // The analysis crate's fixtures (its between-steps tests read the same runs).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../analysis/tests/fixtures")
        .join(name);
    let run = load(&ResultDir::open(dir).expect("fixture opens")).expect("fixture loads");
    bottlenecks_of(&run, None, None).expect("the fixture has target metrics")
}

fn verdict(t: &pado_analysis::attribution::Attribution, component: &str) -> Verdict {
    t.components
        .iter()
        .find(|r| r.component.starts_with(component))
        .unwrap_or_else(|| panic!("no row {component}: {t:#?}"))
        .verdict
}

#[test]
fn past_the_pool_capacity_the_pool_is_the_limit_and_the_threads_wait_on_it() {
    let t = table("pool4-broke-852");
    assert!(
        t.baseline.is_none(),
        "a constant rate has no low load: {t:#?}"
    );
    assert_eq!(verdict(&t, "DB pool"), Verdict::Yes, "{t:#?}");
    assert_eq!(verdict(&t, "Worker pool"), Verdict::Consequence, "{t:#?}");
    let limit = t.limit.clone().unwrap_or_default();
    assert!(limit.contains("DB pool"), "{limit}");
    assert!(!limit.contains("Worker pool"), "{limit}");
}

#[test]
fn below_the_pool_capacity_the_pool_is_not_the_limit() {
    let t = table("pool4-held-655");
    assert_ne!(verdict(&t, "DB pool"), Verdict::Yes, "{t:#?}");
    assert_ne!(verdict(&t, "Worker pool"), Verdict::Yes, "{t:#?}");
}
