#!/usr/bin/env bash
# The main job on a fresh machine: build pado and run `pado demo`, which starts the
# built-in demo target (a wiki/board API with bounded worker and database pools) on
# 127.0.0.1, runs a stress test shaped like a real one against it (normal load, past
# the limit, recovery; about 70 s, or `--duration 30s`), prints the summary and
# stops the target. Needs only the Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p pado
exec target/release/pado demo "$@"
