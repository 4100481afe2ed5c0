#!/usr/bin/env bash
# The main job on a fresh machine: build pado and run `pado demo`, which starts the
# built-in demo target (a wiki/board API with bounded worker and database pools) on
# 127.0.0.1, runs a stress test shaped like a real one against it (normal load, past
# the limit, recovery; about 70 s, or `--duration 30s`), prints the summary and
# stops the target. Needs only the Rust toolchain.
#
# The build is the lean one (`--no-default-features`): every command but `pado k8s`,
# in about 70% of a full build's CPU time. `cargo install --path .` (or `cargo build
# --release`) later builds the full pado, reusing what this one compiled.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x target/release/pado ]; then
  echo "building pado (the first build takes a while; see README.md, \"What a first build costs\")..." >&2
fi
cargo build --release --quiet -p pado --no-default-features
exec target/release/pado demo "$@"
