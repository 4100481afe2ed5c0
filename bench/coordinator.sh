#!/usr/bin/env bash
# bench/coordinator.sh — does a coordinator cost the generator anything per request?
#
# The same closed-model test (CONNS VUs for DUR s against nginx, the shared anchors
# config) run two ways, interleaved REPEATS times, the generator pinned to GEN_CPU and
# nginx to SERVER_CPU:
#   plain   `pado run --url ...` on its own
#   agent   `pado agent` on GEN_CPU running the same flags as a job from
#           `pado run --url ... --generators 127.0.0.1:PORT` (the coordinator, on
#           SERVER_CPU, polling the agent's live feed once a second for the live view)
# and prints, for each, requests per second and the generator's CPU per request
# (user+sys of the generator process: `pado run` itself, or the agent together with
# the run it started, from /usr/bin/time), with the agent/plain ratio. Issue 15's
# target: no measurable cost per request, i.e. a ratio within the run-to-run spread
# of the plain runs (also printed).
#
# Knobs: REPEATS (3), DUR (10), CONNS (64), SERVER_CPU (0), GEN_CPU (1), PADO (binary;
# default target/release/pado, built when missing), OUT (/tmp/pado-bench-coordinator),
# ANCHORS (the shared bench folder, default ../shared/bench beside the repository).
#
# Safety: nginx and the agent listen on 127.0.0.1 only; every run has a fixed duration
# and is wrapped in `timeout`; only PIDs started here are signalled.
set -uo pipefail
# Bench runs stay out of the user's run history (pado history).
export PADO_HOME="${TMPDIR:-/tmp}/pado-bench-history"
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
ANCHORS="${ANCHORS:-$REPO/../shared/bench}"
REPEATS="${REPEATS:-3}"
DUR="${DUR:-10}"
CONNS="${CONNS:-64}"
SERVER_CPU="${SERVER_CPU:-0}"
GEN_CPU="${GEN_CPU:-1}"
PADO="${PADO:-$REPO/target/release/pado}"
OUT="${OUT:-/tmp/pado-bench-coordinator}"
NGX_CONF="$ANCHORS/nginx-anchors.conf"
NGX_PORT=18080
NGX_PREFIX=/tmp/bench-anchors-nginx # the anchors config hard-codes its pid/log paths there
AGENT_PORT="${AGENT_PORT:-18090}"
URL="http://127.0.0.1:${NGX_PORT}/"
export CARGO_INCREMENTAL=0

for tool in nginx taskset /usr/bin/time python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
[ -f "$NGX_CONF" ] || { echo "no $NGX_CONF (ANCHORS=DIR)" >&2; exit 1; }
if [ ! -x "$PADO" ]; then (cd "$REPO" && cargo build --release -p pado) || exit 1; fi
PADO="$(cd "$(dirname "$PADO")" && pwd)/$(basename "$PADO")" # the runs start in $OUT
"$PADO" agent --help >/dev/null 2>&1 || {
  echo "$PADO has no \`agent\` command (an older build): rebuild it, or pass PADO=..." >&2
  exit 1
}
rm -rf "$OUT"
mkdir -p "$OUT" "$NGX_PREFIX"
cd "$OUT" || exit 1

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # PORT PID: until PORT accepts (5 s at most) while PID lives
  local i
  for i in $(seq 1 100); do
    port_busy "$1" && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

NGX_PID=""
AGENT_PID=""
cleanup() {
  [ -n "$AGENT_PID" ] && pkill -INT -P "$AGENT_PID" 2>/dev/null
  [ -n "$NGX_PID" ] && kill -TERM "$NGX_PID" 2>/dev/null
  wait 2>/dev/null
}
trap cleanup EXIT

if port_busy "$NGX_PORT"; then echo "port $NGX_PORT is in use" >&2; exit 1; fi
taskset -c "$SERVER_CPU" nginx -p "$NGX_PREFIX/" -e "$NGX_PREFIX/error.log" -c "$NGX_CONF" \
  >"$NGX_PREFIX/stdout.log" 2>&1 &
NGX_PID=$!
wait_port "$NGX_PORT" "$NGX_PID" || { echo "nginx did not start" >&2; exit 1; }

LOAD=(--url "$URL" --vus "$CONNS" --duration "${DUR}s" --quiet)

plain() { # N
  /usr/bin/time -f "%U %S" -o "plain-$1.time" \
    timeout $((DUR + 60)) taskset -c "$GEN_CPU" "$PADO" run "${LOAD[@]}" --out "plain-$1" \
    >/dev/null 2>"plain-$1.err"
}

agent() { # N
  if port_busy "$AGENT_PORT"; then echo "port $AGENT_PORT is in use" >&2; return 1; fi
  /usr/bin/time -f "%U %S" -o "agent-$1.time" \
    timeout $((DUR + 120)) taskset -c "$GEN_CPU" "$PADO" agent --listen "127.0.0.1:$AGENT_PORT" \
    --work-dir "agent-work-$1" >/dev/null 2>"agent-$1.err" &
  AGENT_PID=$!
  wait_port "$AGENT_PORT" "$AGENT_PID" || { echo "the agent did not start" >&2; return 1; }
  timeout $((DUR + 90)) taskset -c "$SERVER_CPU" "$PADO" run "${LOAD[@]}" \
    --generators "127.0.0.1:$AGENT_PORT" --start-at +2s --out "agent-$1" \
    >/dev/null 2>"agent-$1.coordinator.err"
  # Ctrl-C to the agent: through `timeout` (it passes the signal on), not to
  # /usr/bin/time (it would not).
  pkill -INT -P "$AGENT_PID" 2>/dev/null
  wait "$AGENT_PID" 2>/dev/null
  AGENT_PID=""
}

for i in $(seq 1 "$REPEATS"); do
  echo "round $i/$REPEATS: plain, then through an agent ..."
  plain "$i" || echo "plain run $i failed: $(tail -3 "plain-$i.err")"
  agent "$i" || echo "agent run $i failed: $(tail -3 "agent-$i.coordinator.err")"
done

python3 - "$OUT" "$REPEATS" "$DUR" <<'EOF'
import json, os, sys, statistics
out, repeats, dur = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def one(kind, i):
    summary = os.path.join(out, f"{kind}-{i}", "merged" if kind == "agent" else "", "summary.json")
    try:
        s = json.load(open(summary))
        user, sys_ = map(float, open(os.path.join(out, f"{kind}-{i}.time")).read().split()[-2:])
    except (OSError, ValueError) as e:
        print(f"  {kind} {i}: no result ({e})")
        return None
    n = s["requests"]
    return n / dur, (user + sys_) * 1e6 / n if n else float("nan")
rows = {k: [r for r in (one(k, i) for i in range(1, repeats + 1)) if r] for k in ("plain", "agent")}
print(f"\n{'':8} {'req/s (median)':>15} {'CPU µs/request (median)':>24} {'(best)':>8} {'spread of µs/request':>22}")
med, best = {}, {}
for k, rs in rows.items():
    if not rs:
        continue
    cpu = [r[1] for r in rs]
    med[k] = statistics.median(cpu)
    best[k] = min(cpu)
    spread = (max(cpu) - min(cpu)) / med[k] * 100
    print(f"{k:8} {statistics.median(r[0] for r in rs):>15,.0f} {med[k]:>24.2f} {best[k]:>8.2f} {spread:>21.1f}%")
if "plain" in med and "agent" in med:
    print(f"\nagent / plain CPU per request: {med['agent'] / med['plain']:.3f} of the medians, "
          f"{best['agent'] / best['plain']:.3f} of the best runs (1.000 = no cost; on a "
          f"machine shared with others, the best runs are the steadier figure; compare "
          f"with the plain runs' spread)")
EOF
