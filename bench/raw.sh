#!/usr/bin/env bash
# bench/raw.sh — what does the raw per-request output (`--output raw-json=FILE`) cost?
#
# The same closed-model test (CONNS VUs for DUR s, max throughput, no think time)
# against the same local target, interleaved REPEATS times, in three forms:
#   none   no raw output
#   json   --output raw-json=FILE
#   gz     --output raw-json=FILE.gz
# and prints, per form, the median requests per second, requests per generator
# CPU-second, and their ratio to `none`, with the lines written and dropped. The
# generator is pinned to GEN_CPU and the target to SERVER_CPU when the machine has
# two cores or more. On a shared machine the run-to-run spread is large: judge the
# ratios over several repeats, not one run.
#
# Target: nginx with a one-line config returning `ok` when nginx is installed, else
# pado's own test server (pado-testserver), both on 127.0.0.1 only.
#
# Knobs: DUR (8), REPEATS (3), CONNS (64), SERVER_CPU (0), GEN_CPU (1), PADO (binary;
# default target/release/pado, built when missing), OUT (/tmp/pado-bench-raw).
#
# Safety: the target listens on 127.0.0.1 only; every run has a fixed duration and is
# wrapped in `timeout`; only PIDs started here are signalled.
set -uo pipefail
export PADO_HOME="${TMPDIR:-/tmp}/pado-bench-history"
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
DUR="${DUR:-8}"
REPEATS="${REPEATS:-3}"
CONNS="${CONNS:-64}"
SERVER_CPU="${SERVER_CPU:-0}"
GEN_CPU="${GEN_CPU:-1}"
PADO="${PADO:-$REPO/target/release/pado}"
TESTSERVER="${TESTSERVER:-$(dirname "$PADO")/pado-testserver}"
OUT="${OUT:-/tmp/pado-bench-raw}"
PORT="${PORT:-18093}"

for tool in taskset python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
if [ ! -x "$PADO" ] || [ ! -x "$TESTSERVER" ]; then
  (cd "$REPO" && cargo build --release -p pado -p pado-testkit) || exit 1
fi
PADO="$(cd "$(dirname "$PADO")" && pwd)/$(basename "$PADO")"
TESTSERVER="$(cd "$(dirname "$TESTSERVER")" && pwd)/$(basename "$TESTSERVER")"
rm -rf "$OUT"
mkdir -p "$OUT"
cd "$OUT" || exit 1
if [ "$(nproc)" -lt 2 ]; then SERVER_CPU=0; GEN_CPU=0; fi

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # PORT PID
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
if port_busy "$PORT"; then echo "port $PORT is in use" >&2; exit 1; fi

if command -v nginx >/dev/null; then
  TARGET=nginx
  mkdir -p nginx
  cat >nginx/nginx.conf <<EOF
daemon off;
worker_processes 1;
pid $OUT/nginx/nginx.pid;
error_log $OUT/nginx/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  server {
    listen 127.0.0.1:$PORT;
    location / { return 200 "ok\n"; }
  }
}
EOF
  taskset -c "$SERVER_CPU" nginx -p "$OUT/nginx/" -c "$OUT/nginx/nginx.conf" >nginx/stdout.log 2>&1 &
else
  TARGET=pado-testserver
  taskset -c "$SERVER_CPU" "$TESTSERVER" --port "$PORT" --exit-after $((DUR * 3 * REPEATS + 120)) \
    >testserver.log 2>&1 &
fi
PIDS+=($!)
wait_port "$PORT" "$!" || { echo "$TARGET did not start" >&2; exit 1; }

LOAD=(--url "http://127.0.0.1:$PORT/" --vus "$CONNS" --duration "${DUR}s" --quiet --no-html)
one() { # NAME [FLAGS]
  local name=$1
  shift
  echo "run $name ..."
  timeout $((DUR + 60)) /usr/bin/time -f "%U %S" -o "$name.time" \
    taskset -c "$GEN_CPU" "$PADO" run "${LOAD[@]}" "$@" --out "$name" \
    >/dev/null 2>"$name.err" || echo "  $name exited non-zero: $(tail -3 "$name.err")"
}
for i in $(seq 1 "$REPEATS"); do
  one none-$i
  one json-$i --output "raw-json=$OUT/json-$i.jsonl"
  one gz-$i --output "raw-json=$OUT/gz-$i.jsonl.gz"
  rm -f "$OUT/json-$i.jsonl" "$OUT/gz-$i.jsonl.gz"
done

python3 - "$OUT" "$REPEATS" "$TARGET" "$(nproc)" <<'PY'
import json, statistics, sys
out, repeats, target, cores = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = {}
for k in ("none", "json", "gz"):
    rps, per_cpu, written, dropped = [], [], 0, 0
    for i in range(1, repeats + 1):
        try:
            s = json.load(open(f"{out}/{k}-{i}/summary.json"))
            u, sy = map(float, open(f"{out}/{k}-{i}.time").read().split()[-2:])
        except Exception as e:
            print(f"  {k}-{i}: {e}")
            continue
        n = s["requests"]
        rps.append(s["rps"])
        per_cpu.append(n / max(u + sy, 1e-9))
        r = s.get("raw_output") or {}
        written += r.get("lines_written", 0)
        dropped += r.get("lines_dropped", 0)
    if rps:
        rows[k] = (statistics.median(rps), statistics.median(per_cpu), written, dropped)
print(f"\ntarget {target}, {cores} cores (shared machine: other work may run beside it)")
print(f"{'form':6} {'req/s':>10} {'vs none':>8} {'req/CPU-s':>10} {'vs none':>8} {'lines written':>14} {'dropped':>8}")
base = rows.get("none")
for k, (r, c, w, d) in rows.items():
    vr = f"{r / base[0]:.3f}" if base else "-"
    vc = f"{c / base[1]:.3f}" if base else "-"
    print(f"{k:6} {r:10.0f} {vr:>8} {c:10.0f} {vc:>8} {w:14d} {d:8d}")
PY
