#!/usr/bin/env bash
# bench/outputs.sh — do live outputs cost the load anything?
#
# The same closed-model test (CONNS VUs for DUR s against nginx, the shared anchors
# config) in four forms on the same machine, interleaved REPEATS times, the generator
# pinned to GEN_CPU (under /usr/bin/time) and nginx and the stores to SERVER_CPU:
#   none    no output
#   prom    --output prometheus=... to a real Prometheus (remote-write receiver)
#   fail    --output prometheus=... to a store answering 500 (pado-testserver /status/500)
#   slow    --output otlp=...       to a store taking 5 s per write (/delay/5000)
# and prints, per form, the median requests per second and per generator CPU-second
# and their ratios to `none`, with what each output delivered and dropped. This
# machine's run-to-run spread in req/s is large (±20% seen between single runs), so
# the CPU-second figure, the cost per request, is the one to judge. Issue 17's target: every ratio within 5% of 1
# (0.95 or more): an output never slows the engine (it is a non-blocking hand-over of
# one record a second to a thread of its own).
#
# Knobs: DUR (10), REPEATS (3), CONNS (64), SERVER_CPU (0), GEN_CPU (1), PADO (binary; default
# target/release/pado, built when missing), OUT (/tmp/pado-bench-outputs), ANCHORS
# (the shared bench folder, default ../shared/bench beside the repository).
#
# Safety: nginx, Prometheus and the test server listen on 127.0.0.1 only; every run
# has a fixed duration and is wrapped in `timeout`; only PIDs started here are signalled.
set -uo pipefail
# Bench runs stay out of the user's run history (pado history).
export PADO_HOME="${TMPDIR:-/tmp}/pado-bench-history"
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
ANCHORS="${ANCHORS:-$REPO/../shared/bench}"
DUR="${DUR:-10}"
REPEATS="${REPEATS:-3}"
CONNS="${CONNS:-64}"
SERVER_CPU="${SERVER_CPU:-0}"
GEN_CPU="${GEN_CPU:-1}"
PADO="${PADO:-$REPO/target/release/pado}"
TESTSERVER="${TESTSERVER:-$(dirname "$PADO")/pado-testserver}"
OUT="${OUT:-/tmp/pado-bench-outputs}"
NGX_CONF="$ANCHORS/nginx-anchors.conf"
NGX_PORT=18080
NGX_PREFIX=/tmp/bench-anchors-nginx # the anchors config hard-codes its pid/log paths there
PROM_PORT="${PROM_PORT:-18091}"
STORE_PORT="${STORE_PORT:-18092}"
URL="http://127.0.0.1:${NGX_PORT}/"
export CARGO_INCREMENTAL=0

for tool in nginx prometheus taskset python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
[ -f "$NGX_CONF" ] || { echo "no $NGX_CONF (ANCHORS=DIR)" >&2; exit 1; }
if [ ! -x "$PADO" ] || [ ! -x "$TESTSERVER" ]; then
  (cd "$REPO" && cargo build --release -p pado -p pado-testkit) || exit 1
fi
PADO="$(cd "$(dirname "$PADO")" && pwd)/$(basename "$PADO")"
TESTSERVER="$(cd "$(dirname "$TESTSERVER")" && pwd)/$(basename "$TESTSERVER")"
rm -rf "$OUT"
mkdir -p "$OUT" "$NGX_PREFIX"
cd "$OUT" || exit 1

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # PORT PID: until PORT accepts (20 s at most) while PID lives
  local i
  for i in $(seq 1 400); do
    port_busy "$1" && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

for p in "$NGX_PORT" "$PROM_PORT" "$STORE_PORT"; do
  if port_busy "$p"; then echo "port $p is in use" >&2; exit 1; fi
done
taskset -c "$SERVER_CPU" nginx -p "$NGX_PREFIX/" -e "$NGX_PREFIX/error.log" -c "$NGX_CONF" \
  >"$NGX_PREFIX/stdout.log" 2>&1 &
PIDS+=($!)
wait_port "$NGX_PORT" "$!" || { echo "nginx did not start" >&2; exit 1; }
printf 'global:\n  scrape_interval: 1h\nscrape_configs: []\n' >prometheus.yml
taskset -c "$SERVER_CPU" prometheus --config.file=prometheus.yml --storage.tsdb.path=prom-data \
  --web.listen-address="127.0.0.1:$PROM_PORT" --web.enable-remote-write-receiver \
  >prometheus.log 2>&1 &
PIDS+=($!)
wait_port "$PROM_PORT" "$!" || { echo "prometheus did not start" >&2; exit 1; }
taskset -c "$SERVER_CPU" "$TESTSERVER" --port "$STORE_PORT" --exit-after $((DUR * 4 * REPEATS + 120)) \
  >testserver.log 2>&1 &
PIDS+=($!)
wait_port "$STORE_PORT" "$!" || { echo "pado-testserver did not start" >&2; exit 1; }

LOAD=(--url "$URL" --vus "$CONNS" --duration "${DUR}s" --quiet --no-html)
one() { # NAME [OUTPUT]
  local name=$1
  shift
  echo "run $name ..."
  timeout $((DUR + 60)) /usr/bin/time -f "%U %S" -o "$name.time" \
    taskset -c "$GEN_CPU" "$PADO" run "${LOAD[@]}" "$@" --out "$name" \
    >/dev/null 2>"$name.err" || echo "  $name failed: $(tail -3 "$name.err")"
}
for i in $(seq 1 "$REPEATS"); do
  rm -rf none-$i prom-$i fail-$i slow-$i
  one none-$i
  one prom-$i --output "prometheus=http://127.0.0.1:$PROM_PORT/api/v1/write"
  one fail-$i --output "prometheus=http://127.0.0.1:$STORE_PORT/status/500"
  one slow-$i --output "otlp=http://127.0.0.1:$STORE_PORT/delay/5000"
done

python3 - "$OUT" "$REPEATS" <<'PY'
import json, os, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
rows = {}
for k in ("none", "prom", "fail", "slow"):
    runs = []
    for i in range(1, repeats + 1):
        try:
            s = json.load(open(os.path.join(out, f"{k}-{i}", "summary.json")))
            u, sy = map(float, open(os.path.join(out, f"{k}-{i}.time")).read().split()[-2:])
        except (OSError, ValueError) as e:
            print(f"  {k}-{i}: no result ({e})")
            continue
        runs.append((s["rps"], s["requests"] / max(u + sy, 1e-9), s))
    if runs:
        rows[k] = runs
print(f"\n{'':6} {'req/s':>10} {'vs none':>8} {'req/CPU-s':>10} {'vs none':>8}  output (last run)")
base = rows.get("none")
med = lambda runs, j: statistics.median(r[j] for r in runs)
for k, runs in rows.items():
    rps, eff = med(runs, 0), med(runs, 1)
    r1 = f"{rps / med(base, 0):.3f}" if base else "-"
    r2 = f"{eff / med(base, 1):.3f}" if base else "-"
    o = ", ".join(f"{x['kind']}: {x['seconds_sent']} s sent, {x['seconds_dropped']} dropped"
                  for x in runs[-1][2].get("outputs", [])) or "-"
    print(f"{k:6} {rps:>10,.0f} {r1:>8} {eff:>10,.0f} {r2:>8}  {o}")
print(f"\nmedians of {repeats} interleaved runs each. Target: ratios 0.95 or more "
      "(within 5% of the run without outputs).")
PY
