#!/usr/bin/env bash
# The main job on a fresh machine: build pado, start a local test server, run the
# quickstart scenario against it (about 20 s), print the summary, stop the server.
# Needs only the Rust toolchain. Traffic stays on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p pado -p pado-testkit
bin=target/release
log=$(mktemp)
"$bin/pado-testserver" --port 0 --exit-after 120 >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 100); do
  grep -q "listening on" "$log" && break
  sleep 0.05
done
url=$(sed -n 's/^listening on \(http[^ ]*\).*/\1/p' "$log" | head -n 1)
[ -n "$url" ] || { echo "test server did not start:"; cat "$log"; exit 1; }
echo "test server at $url"
"$bin/pado" run examples/quickstart.yaml --target "$url" "$@"
