//! The thread that keeps each closed second: it subscribes to the run (a bounded
//! channel: the run never waits for the dashboard), turns each second into the
//! page's JSON once, stores it and wakes the streams.

use std::sync::Arc;

use crate::second::{GeneratorShare, Second};
use crate::server::Shared;

/// Seconds the subscription holds if the store falls behind (it does not: a
/// second takes it well under a millisecond).
const BACKLOG: usize = 64;

/// Start the thread; it ends when the run's subscription ends.
pub(crate) fn start(shared: Arc<Shared>) -> std::io::Result<()> {
    let sub = shared.run.subscribe(BACKLOG);
    let scrapes = shared.run.subscribe_observed(BACKLOG);
    std::thread::Builder::new()
        .name("pado-dashboard-feed".into())
        .spawn(move || {
            let mut samples_taken = 0;
            for r in sub {
                let mut second = Second::of(&r);
                // Scrapes that arrived while this second went (every 2 s by
                // default): their values on this second of the time axis.
                for scrape in scrapes.iter().flat_map(|rx| rx.try_iter()) {
                    for (name, v) in &scrape.values {
                        second
                            .observed
                            .insert(format!("{}/{name}", scrape.endpoint), *v);
                    }
                }
                // A distributed run: each generator's part of this very second
                // (not of the latest one: this thread may read a second late).
                let total = r.requests();
                for g in shared.run.generators_at(r.t) {
                    second.generators.insert(
                        g.name,
                        GeneratorShare {
                            requests: g.requests,
                            share: (total > 0).then(|| g.requests as f64 / total as f64),
                            cpu_pct: g.cpu_pct,
                            reporting: g.reporting,
                        },
                    );
                }
                let samples = shared.run.failure_samples(samples_taken);
                samples_taken += samples.len();
                let mut store = pado_base::lock(&shared.store);
                store.add(&r, &second, &shared.info);
                store.add_samples(&samples);
                drop(store);
                shared.changed();
            }
            shared.changed();
        })?;
    Ok(())
}
