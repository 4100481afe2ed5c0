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
    std::thread::Builder::new()
        .name("pado-dashboard-feed".into())
        .spawn(move || {
            for r in sub {
                let mut second = Second::of(&r);
                for g in shared.run.generators() {
                    second.generators.insert(
                        g.name,
                        GeneratorShare {
                            requests: g.requests,
                            cpu_pct: g.cpu_pct,
                        },
                    );
                }
                pado_base::lock(&shared.store).add(&r, &second, &shared.info);
                shared.changed();
            }
            shared.changed();
        })?;
    Ok(())
}
