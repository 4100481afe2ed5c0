//! A run as a library object: from its configuration ([`RunConfig`]) to a written
//! result directory, with a handle ([`RunHandle`]) that watches each closed second
//! and changes the load while the run goes. The CLI parses flags into a
//! configuration, makes one call here and prints; a dashboard or a test drives the
//! same run through the handle.
//!
//! Start reading at [`run`] ([`Session::start`]): it prepares the run (warnings,
//! the result directory and its metadata), fans each closed second out
//! ([`fanout`]: timeline, live outputs, the live judge, the handle's subscribers,
//! the caller's progress line), runs the scrapes and events beside the load
//! ([`side_threads`]), and writes the reports ([`reports`]). [`merge`] is the same
//! end for the segments of a split test.
//!
//! Invariants: the aggregator never waits for anyone (subscribers get bounded
//! channels; a slow one loses seconds, counted); the load is steered through
//! atomics the workers read at iteration and arrival boundaries, never a lock;
//! every change of the load is recorded in `events.jsonl` as a `control` event.

mod command;
mod config;
mod control;
mod dirs;
pub mod distributed;
mod error;
pub mod experiment;
pub mod fanout;
pub mod find_capacity;
mod judge;
pub mod live;
pub mod merge;
mod meta;
mod notice;
mod observed_feed;
mod observing;
pub mod once;
pub mod open_faults;
pub mod output_flags;
mod output_labels;
mod plan_now;
pub mod prepare;
pub mod reports;
pub mod run;
pub mod shape;
pub mod side_threads;
pub mod split;
mod subscribe;
mod warnings;

pub use command::ControlCommand;
pub use config::{
    check_workers, LedgerFactory, Outline, Output, RunConfig, Scenario, Share, Watcher, MAX_WORKERS,
};
pub use control::{RunHandle, RunState, CONTROL_KIND};
pub use dirs::{new_out_dir, user_out_dir};
pub use distributed::{DistributedRun, Generator, GeneratorTick, SendFn};
pub use error::{ControlError, SessionError, INVALID_CONFIG, SCRIPT_EXCEPTION};
pub use judge::LiveJudge;
pub use live::{GeneratorLive, LiveRun};
pub use merge::{merge_and_report, MergeSpec};
pub use observed_feed::{ObservedScrape, MAX_ANALYSED_SERIES, MAX_LIVE_SERIES};
pub use prepare::{LoadSpec, Prepared, ScenarioText, Source};
pub use reports::{report, write_loaded_reports, write_reports, Reported, Written};
pub use run::{run, Finished, Session};
pub use subscribe::{Subscribers, Subscription};
