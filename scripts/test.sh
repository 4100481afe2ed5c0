#!/usr/bin/env bash
# Every test of the project: formatting, lints, unit tests and end-to-end tests (the
# real binary against local servers). Installs what the tests need on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install the Rust toolchain (https://rustup.rs)" >&2
  exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
# The HTML report is checked in a real browser (Debian's chromium).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium for the browser test..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "warning: chromium missing and cannot be installed here; the browser test will skip" >&2
  fi
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --all-targets
