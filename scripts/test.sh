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
# Debian packages the tests use: chromium (the HTML report and the live dashboard
# are checked in a real browser), node and npm (the dashboard's browser tests drive
# Chromium with playwright-core); real exporters whose output pado must read by name (node, nginx, redis,
# mysqld) and the servers behind them (nginx, redis, MariaDB); a JDK (a real JVM
# pinned to fewer cores than its host, for the bottleneck table); Prometheus and
# InfluxDB for the live outputs.
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
[ -x /usr/bin/prometheus-node-exporter ] || need+=(prometheus-node-exporter)
[ -x /usr/bin/prometheus-nginx-exporter ] || need+=(prometheus-nginx-exporter)
[ -x /usr/bin/prometheus-redis-exporter ] || need+=(prometheus-redis-exporter)
[ -x /usr/sbin/nginx ] || need+=(nginx-light)
[ -x /usr/bin/redis-server ] || need+=(redis-server)
[ -x /usr/bin/prometheus-mysqld-exporter ] || need+=(prometheus-mysqld-exporter)
[ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
command -v java >/dev/null 2>&1 || need+=(default-jdk-headless)
# Live outputs (`--output`): a real Prometheus (remote-write receiver) and InfluxDB
# (v1 /write) that the e2e tests start themselves.
[ -x /usr/bin/prometheus ] || need+=(prometheus)
[ -x /usr/bin/influxd ] || need+=(influxdb)
# pado's image (tests/e2e/image.rs): built with buildah (no Docker daemon), run with
# podman on runc.
command -v buildah >/dev/null 2>&1 || need+=(buildah)
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || [ -x /usr/sbin/runc ] || need+=(runc)
# A k6 script's password-encrypted gRPC client key (tests/e2e/k6_grpc.rs): the
# key encrypted by openssl as users do.
command -v openssl >/dev/null 2>&1 || need+=(openssl)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${need[*]} for the tests..."
    apt-get update -qq
    # These are only run by the tests: do not start their services.
    made_policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
      made_policy=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    if [ $made_policy = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
  else
    echo "warning: ${need[*]} missing and cannot be installed here; tests that need them fail" >&2
  fi
fi
# HdrHistogram's reference Python decoder (PyPI `hdrhistogram`), which reads
# `--export hdr`'s latency.hlog in the end-to-end tests: a virtual environment under
# target/ (tests/e2e finds it there).
if [ ! -x target/pyhdr/bin/python3 ] || ! target/pyhdr/bin/python3 -c 'import hdrh.log' 2>/dev/null; then
  if command -v python3 >/dev/null 2>&1 && python3 -m venv target/pyhdr >/dev/null 2>&1 \
    && target/pyhdr/bin/pip install -q hdrhistogram >/dev/null 2>&1; then
    echo "installed Python's hdrhistogram into target/pyhdr for the tests"
  else
    echo "warning: Python's hdrhistogram cannot be installed here; the test that needs it fails" >&2
  fi
fi
# k6 itself (tests/e2e/k6_corpus.rs checks the k6 script corpus against it, and
# pado's runs of the same scripts against k6's; bench/k6script.sh runs it beside
# pado): built once from the Go module proxy into $HOME/go/bin, skipped when there
# (pinned: the corpus truths were checked with v1.8.1; k6 is only run, never linked).
# K6_NO_USAGE_REPORT=true always: k6 otherwise reports usage to a host outside
# this machine.
export K6_NO_USAGE_REPORT=true
if ! command -v k6 >/dev/null 2>&1 && [ ! -x "$HOME/go/bin/k6" ]; then
  if command -v go >/dev/null 2>&1; then
    echo "installing k6 (go install go.k6.io/k6@v1.8.1) into \$HOME/go/bin for the tests..."
    GOBIN="$HOME/go/bin" go install go.k6.io/k6@v1.8.1 >/dev/null 2>&1 \
      || echo "warning: go install go.k6.io/k6@v1.8.1 failed; the k6 corpus tests fail" >&2
  else
    echo "warning: go missing and k6 cannot be installed here; the k6 corpus tests fail" >&2
  fi
fi
# The dashboard's browser tests (tests/e2e/dashboard_browser.rs): playwright-core
# as pinned by testing/browser/package-lock.json (it drives Debian's Chromium;
# Playwright's own browser downloads are never fetched). Installed again only when
# missing or not the locked version.
# (Nothing printed when the file is missing: a fresh checkout has no node_modules.)
browser_pkg() { node -p "require('./testing/browser/$1').$2" 2>/dev/null || true; }
if command -v npm >/dev/null 2>&1; then
  locked=$(browser_pkg package-lock.json "packages['node_modules/playwright-core'].version")
  installed=$(browser_pkg node_modules/playwright-core/package.json version)
  if [ -z "$installed" ] || [ "$installed" != "$locked" ]; then
    echo "installing playwright-core $locked into testing/browser for the tests..."
    (cd testing/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --silent) \
      || echo "warning: npm ci in testing/browser failed; the dashboard's browser tests fail" >&2
  fi
else
  echo "warning: npm missing and cannot be installed here; the dashboard's browser tests fail" >&2
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
# The lean build scripts/demo.sh makes (`--no-default-features`: no `pado k8s`) must
# keep compiling without warnings, and its own behaviour (what a left-out command
# says) is tested there; every other test runs below with every feature on.
cargo clippy -p pado -p pado-cli --no-default-features --all-targets --quiet -- -D warnings
cargo test -p pado-cli --no-default-features --lib --quiet built_in
# The oldest Rust the code promises (`rust-version` in Cargo.toml) must build it all.
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
if command -v rustup >/dev/null 2>&1 && rustup toolchain install "$msrv" --profile minimal >/dev/null 2>&1; then
  echo "checking with Rust $msrv (rust-version)..."
  CARGO_TARGET_DIR=target/msrv cargo +"$msrv" check --workspace --all-targets --locked --quiet
else
  echo "warning: Rust $msrv (rust-version) cannot be installed here; its check is skipped" >&2
fi
# Here every program the end-to-end tests use is installed: a missing one fails its
# test instead of skipping it.
export PADO_E2E_REQUIRE_ALL=1
cargo test --workspace --all-targets
