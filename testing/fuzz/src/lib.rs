//! Fuzzing of pado's parsers of untrusted input on stable Rust, so it runs in CI under
//! `cargo test` (cargo-fuzz and libFuzzer need nightly).
//!
//! Each [`Target`] is a plain `fn(&[u8])` over a real parser entry point that must not
//! panic, hang or allocate without bound for any input. The [`driver`] feeds it its
//! seed corpus (`testing/fuzz/corpus/<target>/`, plus the repository's examples) and
//! then [`mutate`]d inputs from a seeded PRNG for a bounded time, reporting the first
//! failure with a file that reproduces it. See `testing/fuzz/README.md`.

use std::path::{Path, PathBuf};

pub mod alloc;
pub mod driver;
pub mod mutate;
pub mod targets;

/// Counts heap growth per input on the fuzz worker thread ([`alloc`]).
#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

/// One fuzz target.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// Name (also its corpus folder).
    pub name: &'static str,
    /// What it feeds the input to.
    pub about: &'static str,
    /// The target: any input, no panic, no hang, bounded memory.
    pub run: fn(&[u8]),
    /// Seed inputs, run unchanged first and mutated after.
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Tokens of the input language, inserted by the mutator.
    pub dict: &'static [&'static [u8]],
    /// Largest input generated.
    pub max_len: usize,
}

/// Every target, in the order the binary lists them.
pub fn all() -> &'static [Target] {
    targets::ALL
}

/// The target called `name`.
pub fn by_name(name: &str) -> Option<&'static Target> {
    all().iter().find(|t| t.name == name)
}

/// Where this crate's files are (`corpus/`, `data/`).
pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The files of `testing/fuzz/corpus/<name>/`, sorted by name, plus `extra` files.
pub fn corpus_files(name: &str, extra: &[PathBuf]) -> Vec<Vec<u8>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(crate_dir().join("corpus").join(name))
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    paths.sort();
    paths.extend(extra.iter().cloned());
    paths
        .iter()
        .filter(|p| p.is_file())
        .filter_map(|p| std::fs::read(p).ok())
        .collect()
}
