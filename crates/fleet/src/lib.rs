//! One pado test on many generators, whatever starts them.
//!
//! A split test's generators each run one segment (`pado run --segment i/N`); this
//! crate is what lets one coordinator watch, stop and collect them:
//!
//! - [`job`]: the endpoints a generator serves for its run (status, the live feeds
//!   of its timeline and of its scrapes of the target, stop, the result as a tar,
//!   done), over [`feed`], which reads the growing `timeline.jsonl` and
//!   `observe.jsonl` the run writes anyway;
//! - [`generator`]: a generator serving one run it was started with (a Kubernetes
//!   pod); [`agent`]: a long-lived generator (`pado agent`) that takes runs from a
//!   coordinator as [`bundle`]s (the scenario, its files and the segment's flags);
//!   [`launch`]: how an agent runs a job (this binary as a child; a scenario whose
//!   events run commands refused unless allowed); [`agent_setup`]: the token, host
//!   names and TLS identity an agent (or a coordinator) starts with;
//! - [`access`]: who a generator's server answers (its token; no web browsers),
//!   judged before a request's body is read;
//! - [`client`]: the coordinator's requests to a generator; [`coordinate`]: the
//!   live loop that merges the generators' seconds into one view of the test
//!   (`pado_results::merge::live`) and stops them all when told, and
//!   [`observed_tail`], the target's metrics it follows from the scraping
//!   generator's `observe.jsonl` for a live view;
//! - [`flow`]: what every coordinator flow shares (the live view's hand-off, the
//!   collected result directories it returns for the caller to merge), and
//!   [`flow::agents`], the whole flow of a test on `pado agent`s;
//! - [`status`]: a generator's `/status` answer, written by [`job`] and [`agent`],
//!   read by every coordinator;
//! - [`archive`]: result directories and bundles as tar, unpacked defensively;
//! - [`tls`]: HTTPS for the agent protocol: the agent's certificate (from files
//!   or generated, its fingerprint printed) and the coordinator's verification of
//!   it (a pinned fingerprint, a CA file, the system's roots).

pub mod access;
pub mod agent;
pub mod agent_setup;
pub mod archive;
pub mod bundle;
pub mod client;
pub mod control_socket;
pub mod coordinate;
pub mod feed;
pub mod flow;
pub mod generator;
pub mod job;
pub mod launch;
pub mod observed_tail;
pub mod status;
pub mod tls;
