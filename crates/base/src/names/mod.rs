//! Names pado makes from what users wrote: DNS-1123 labels for Kubernetes objects
//! ([`dns`]: test names, Hangul included, folded to ASCII with a hash keeping them
//! apart) and names safe for a file system ([`file`]: the result directories a run,
//! a demo or a distributed test creates, one rule for all of them).

pub mod dns;
pub mod file;

pub use dns::{is_dns1123_label, run_suffix, test_id, MAX_TEST_ID};
pub use file::{file_safe, result_dir_stem, segment_dir, RESULTS_PARENT};
