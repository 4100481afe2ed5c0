#!/usr/bin/env bash
# bench/k6script.sh — one k6 script (bench/k6script.js: a login, three requests with
# checks, a custom Trend) run by k6 and by `pado run` against the same local target
# (pado's demo target, `pado target serve`), paired in one run:
#
#   eff    requests per generator CPU-second: VUS_EFF VUs, no think time, DUR s each,
#          target on SERVER_CPU, generator on GEN_CPU (taskset); CPU (user+sys) and
#          peak RSS from /usr/bin/time -v; requests from each tool's own summary
#   mem    resident memory per VU at each of MEM_VUS (1000 10000): THINK=1 s between
#          iterations so the VUs are alive but mostly idle; peak RSS / VUs
#          (at 10000 VUs on one pinned core, pado, which makes its VUs while the
#          first ones already run, may not have made them all within MEM_DUR: the
#          start phase's idle figure is the one with every VU made)
#   start  start-up time for START_VUS (10000) VUs, per tool: from launch to the first
#          request the target counts, and to every VU's first login (THINK=600, so each
#          VU logs in once: the target's /api/login count reaching START_VUS); then,
#          5 s later, the tool's resident memory per VU with every VU made and idle
#   instr  instructions per request of pado (and of BASELINE) under valgrind's callgrind:
#          INSTR_VUS VUs run INSTR_SHORT and then INSTR_ITER iterations in all
#          (`--iterations`); the figure is the marginal count, (count of the long run -
#          count of the short) / (their requests' difference), which leaves out start-up
#          and the reports. A busy machine slows a run, it does not change this count:
#          the before/after figure to trust on a shared machine. Each run's callgrind
#          file is kept in OUT (callgrind_annotate --inclusive=yes FILE reads it).
#
# At the end it prints a table and the ratios the issue asks for (pado over k6:
# at least 3x the requests per CPU-second, at most a quarter of the memory per VU).
# While `pado run` does not take k6 scripts, pado's half reports "not supported yet"
# and only k6's figures are printed.
#
# Safety: every target is 127.0.0.1; every run has a fixed duration and is wrapped
# in `timeout`; only PIDs this script started are signalled.
# Knobs (environment): PHASES ("eff mem start"), DUR (10), VUS_EFF (64), MEM_VUS
#   ("1000 10000"), MEM_DUR (15), START_VUS (10000), SERVER_CPU (0), GEN_CPU (1),
#   PORT (18090), PADO (target/release/pado), K6 (k6 on PATH or $HOME/go/bin/k6),
#   OUT (${TMPDIR:-/tmp}/pado-k6script-out), BASELINE (another pado binary, e.g. the
#   build a change starts from: measured as "base" in the same rounds as PADO, paired),
#   REPEATS (1: eff runs per tool, in rounds k6, base, pado, ...; the table shows each
#   run and the ratios use the medians), INSTR_VUS (4), INSTR_SHORT (20), INSTR_ITER (200),
#   INSTR_CACHE (0; 1: callgrind's cache simulator on too, its misses per request
#   printed beside the instructions: slower, and a model of the caches, not this CPU's).
set -uo pipefail
export PADO_HOME="${TMPDIR:-/tmp}/pado-bench-history"
export K6_NO_USAGE_REPORT=true
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
export PATH="$HOME/go/bin:/usr/local/go/bin:$HOME/.cargo/bin:$PATH"

PHASES="${PHASES:-eff mem start}"
DUR="${DUR:-10}"
VUS_EFF="${VUS_EFF:-64}"
MEM_VUS="${MEM_VUS:-1000 10000}"
MEM_DUR="${MEM_DUR:-15}"
START_VUS="${START_VUS:-10000}"
SERVER_CPU="${SERVER_CPU:-0}"
GEN_CPU="${GEN_CPU:-1}"
PORT="${PORT:-18090}"
PADO="${PADO:-$REPO/target/release/pado}"
K6="${K6:-$(command -v k6 || echo "$HOME/go/bin/k6")}"
OUT="${OUT:-${TMPDIR:-/tmp}/pado-k6script-out}"
BASELINE="${BASELINE:-}"
REPEATS="${REPEATS:-1}"
INSTR_VUS="${INSTR_VUS:-4}"
INSTR_SHORT="${INSTR_SHORT:-20}"
INSTR_ITER="${INSTR_ITER:-200}"
INSTR_CACHE="${INSTR_CACHE:-0}"
SCRIPT="$HERE/k6script.js"
BASE="http://127.0.0.1:${PORT}"
mkdir -p "$OUT"

say() { echo "k6script: $*" >&2; }
[ -x "$K6" ] || { say "k6 not found (go install go.k6.io/k6@latest, or K6=PATH)"; exit 2; }
if [ ! -x "$PADO" ]; then
  say "building pado (release)..."
  (cd "$REPO" && cargo build --release --quiet) || { say "cannot build pado"; exit 2; }
fi
[ -z "$BASELINE" ] || [ -x "$BASELINE" ] || { say "BASELINE=$BASELINE is not an executable"; exit 2; }
# The pado binary each pado-like tool runs: "pado" is PADO, "base" is BASELINE.
bin_of() { if [ "$1" = base ]; then echo "$BASELINE"; else echo "$PADO"; fi; }
pin() { if command -v taskset >/dev/null 2>&1; then taskset -c "$1" "${@:2}"; else "${@:2}"; fi; }

# The target: pado's demo target, quick queries and enough workers that the
# generators, not the target, are what is measured.
TARGET_PID=""
start_target() {
  # Started directly (not through the shell function `pin`), so that $! is the
  # target's own `timeout`, which passes stop_target's signal on to the target.
  local pin_cmd=()
  command -v taskset >/dev/null 2>&1 && pin_cmd=(taskset -c "$SERVER_CPU")
  "${pin_cmd[@]}" timeout 3600 "$PADO" target serve --port "$PORT" --workers 8 \
    --pool-size 64 --query-cost 0ms >"$OUT/target.log" 2>&1 &
  TARGET_PID=$!
  for _ in $(seq 1 100); do
    curl -fsS "$BASE/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  say "the demo target did not start (see $OUT/target.log)"; exit 2
}
stop_target() { [ -n "$TARGET_PID" ] && kill "$TARGET_PID" 2>/dev/null; wait "$TARGET_PID" 2>/dev/null; TARGET_PID=""; }
trap stop_target EXIT

# Whether pado runs k6 scripts yet: a one-iteration probe.
PADO_JS=0
probe_pado() {
  if timeout 60 "$PADO" run "$SCRIPT" --env "BASE_URL=$BASE" --env VUS=1 --env DURATION=1s \
      --out "$OUT/probe" --quiet >"$OUT/probe.log" 2>&1 && [ -f "$OUT/probe/summary.json" ]; then
    PADO_JS=1
  else
    say "pado: not supported yet ($(head -n1 "$OUT/probe.log"))"
  fi
}

# field NAME FILE: a number from /usr/bin/time -v's report.
tv() { sed -n "s/^\s*$1: *//p" "$2" | head -n1; }
cpu_s() { python3 -c "import sys;print(round(float(sys.argv[1])+float(sys.argv[2]),2))" "$(tv 'User time (seconds)' "$1")" "$(tv 'System time (seconds)' "$1")"; }
rss_kb() { tv 'Maximum resident set size (kbytes)' "$1"; }

# run TOOL NAME VUS DURATION THINK: one timed run; prints "requests cpu_s rss_kb".
run() {
  local tool=$1 name=$2 vus=$3 dur=$4 think=$5 t reqs
  t="$OUT/$name.time"
  case $tool in
    k6)
      pin "$GEN_CPU" /usr/bin/time -v -o "$t" timeout $((dur + 120)) "$K6" run --quiet --no-color \
        --summary-export "$OUT/$name.k6.json" -e "BASE_URL=$BASE" -e "VUS=$vus" \
        -e "DURATION=${dur}s" -e "THINK=$think" "$SCRIPT" >"$OUT/$name.log" 2>&1
      reqs=$(python3 -c "import json,sys;print(int(json.load(open(sys.argv[1]))['metrics']['http_reqs']['count']))" "$OUT/$name.k6.json" 2>/dev/null || echo 0)
      ;;
    pado|base)
      pin "$GEN_CPU" /usr/bin/time -v -o "$t" timeout $((dur + 120)) "$(bin_of "$tool")" run "$SCRIPT" \
        --env "BASE_URL=$BASE" --env "VUS=$vus" --env "DURATION=${dur}s" --env "THINK=$think" \
        --out "$OUT/$name.pado" --quiet >"$OUT/$name.log" 2>&1
      reqs=$(python3 -c "import json,sys;print(int(json.load(open(sys.argv[1]))['requests']))" "$OUT/$name.pado/summary.json" 2>/dev/null || echo 0)
      ;;
  esac
  echo "$reqs $(cpu_s "$t") $(rss_kb "$t")"
}

# logins: the target's count of POST /api/login answers so far.
logins() {
  curl -fsS "$BASE/metrics" | awk '/^http_server_requests_seconds_count/ && /uri="\/api\/login"/ {s+=$2} END {print s+0}'
}
# start_s TOOL VUS: seconds from launch until the target has counted this run's
# first request, then until it has counted every VU's first login (THINK=600:
# each VU logs in once, then sleeps, so VUS logins means every VU has been made,
# has run its init code and has started); prints "first all". The run is
# stopped right after.
start_s() {
  local tool=$1 vus=$2 before now t0 pid first=n/a
  before=$(logins)
  t0=$(date +%s.%N)
  case $tool in
    k6) timeout 300 "$K6" run --quiet --no-color -e "BASE_URL=$BASE" -e "VUS=$vus" -e DURATION=120s \
          -e THINK=600 "$SCRIPT" >"$OUT/start-$tool.log" 2>&1 & pid=$! ;;
    pado|base) rm -rf "$OUT/start.pado"
          timeout 300 "$(bin_of "$tool")" run "$SCRIPT" --env "BASE_URL=$BASE" --env "VUS=$vus" --env DURATION=120s \
          --env THINK=600 --out "$OUT/start.pado" --quiet >"$OUT/start-$tool.log" 2>&1 & pid=$! ;;
  esac
  while kill -0 "$pid" 2>/dev/null; do
    now=$(logins)
    if [ "$first" = n/a ] && [ "$now" -gt "$before" ]; then
      first=$(python3 -c "import sys;print(round(float(sys.argv[1])-float(sys.argv[2]),2))" "$(date +%s.%N)" "$t0")
    fi
    if [ "$now" -ge $((before + vus)) ]; then
      local all rss child
      all=$(python3 -c "import sys;print(round(float(sys.argv[1])-float(sys.argv[2]),2))" "$(date +%s.%N)" "$t0")
      # Every VU made: its resident memory 5 s later (the tool is timeout's child).
      sleep 5
      child=$(pgrep -P "$pid" | head -1)
      rss=$(awk '/^VmRSS/ {print $2}' "/proc/${child:-$pid}/status" 2>/dev/null)
      echo "$first $all ${rss:-0}"
      kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
      return
    fi
    sleep 0.05
  done
  echo "$first n/a 0"
}

# instr_count TOOL ITERATIONS: one callgrind run of TOOL's binary making ITERATIONS
# iterations in all; prints "requests instructions_of_the_load_worker instructions_of_all
# l1_data_misses_of_the_load_worker last_level_data_misses_of_the_load_worker" (the
# misses 0 unless INSTR_CACHE=1).
# The load worker (pinned to one core, pado runs one) runs the VUs, their scripts
# and requests. The other threads' work grows with the run's seconds (the
# aggregator, the reports), which callgrind's slowness stretches ~50x.
instr_count() {
  local tool=$1 n=$2 base="$OUT/instr-$1-$2" reqs
  rm -rf "$base.pado" "$base".cg.*
  local cache=()
  [ "$INSTR_CACHE" = 1 ] && cache=(--cache-sim=yes)
  pin "$GEN_CPU" timeout 1800 valgrind --tool=callgrind --separate-threads=yes "${cache[@]}" \
    --callgrind-out-file="$base.cg.%p" \
    "$(bin_of "$tool")" run "$SCRIPT" --env "BASE_URL=$BASE" --env DURATION=1800s --vus "$INSTR_VUS" \
    --iterations "$n" --out "$base.pado" --quiet >"$base.log" 2>&1
  reqs=$(python3 -c "import json,sys;print(int(json.load(open(sys.argv[1]))['requests']))" "$base.pado/summary.json" 2>/dev/null || echo 0)
  echo "$reqs $(cg_totals "$base".cg.*)"
}

# cg_totals FILE...: of callgrind's files (one per thread), the load worker's
# instructions, all threads' instructions, and the load worker's L1 and
# last-level data misses (reads and writes; 0 without the cache simulator).
# The load worker is the thread that ran the VUs' scripts (its file names the
# engine's `drive_script`), not merely the busiest: under callgrind a run lasts
# ~50x longer, and the aggregator's per-second work can outgrow the worker's.
cg_totals() {
  python3 - "$@" <<'PY'
import sys
import subprocess
best, busiest, total = None, None, 0
worker_file = None
for f in sys.argv[1:]:
    events, tot, worker = None, None, False
    try:
        for line in open(f, errors="replace"):
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("totals:"):
                tot = [int(x) for x in line.split()[1:]]
            elif not worker and line.startswith(("fn=", "cfn=")) and "drive_script" in line:
                # (callgrind names a function once, where it first appears:
                # as a caller, `fn=`, or as a callee, `cfn=`)
                worker = True
    except OSError:
        continue
    if not events or not tot:
        continue
    row = dict(zip(events, tot))
    total += row.get("Ir", 0)
    if worker and (best is None or row.get("Ir", 0) > best.get("Ir", 0)):
        best, worker_file = row, f
    if busiest is None or row.get("Ir", 0) > busiest.get("Ir", 0):
        busiest = row
best = dict(best or busiest or {})
# Less the worker's latency histograms growing (inclusive): they grow to the
# largest latency seen, and under callgrind latencies are ~50x a real run's,
# so that cost follows the machine's load, not the requests (it was 21,000 to
# 65,000 instructions a request, two runs of one build; ~0 in a real run).
if worker_file:
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=yes", "--threshold=100", worker_file],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "LatencyHistogram::grow" in line:
            best["Ir"] = best.get("Ir", 0) - int(line.split()[0].replace(",", ""))
            break
d1 = best.get("D1mr", 0) + best.get("D1mw", 0)
dl = best.get("DLmr", 0) + best.get("DLmw", 0)
print(best.get("Ir", 0), total, d1, dl)
PY
}

start_target
probe_pado
TOOLS="k6"
PADOS=""
[ "$PADO_JS" = 1 ] && PADOS="${BASELINE:+base }pado" && TOOLS="k6 $PADOS"
# median V...: the middle value (the mean of the middle two).
median() { python3 -c "import statistics,sys;print(round(statistics.median(float(a) for a in sys.argv[1:])))" "$@"; }
ratio() { python3 -c "import sys;a,b=float(sys.argv[1]),float(sys.argv[2]);print(f'{a/b:.2f}' if b>0 else 'n/a')" "$1" "$2"; }
{
  echo "| phase | tool | VUs | requests | CPU s | req per CPU-s | peak RSS MB | RSS per VU KB |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$OUT/table.md"
declare -A EFF MEMV IDLE
for phase in $PHASES; do
  case $phase in
    eff)
      declare -A PERS
      for r in $(seq 1 "$REPEATS"); do
        for tool in $TOOLS; do
          read -r reqs cpu rss < <(run "$tool" "eff-$tool-$r" "$VUS_EFF" "$DUR" 0)
          per=$(python3 -c "import sys;c=float(sys.argv[2]);print(round(float(sys.argv[1])/c) if c>0 else 0)" "$reqs" "$cpu")
          PERS[$tool]="${PERS[$tool]:-} $per"
          echo "| eff | $tool | $VUS_EFF | $reqs | $cpu | $per | $((rss / 1024)) | |" >>"$OUT/table.md"
        done
      done
      for tool in $TOOLS; do
        # shellcheck disable=SC2086
        EFF[$tool]=$(median ${PERS[$tool]})
        [ "$REPEATS" -gt 1 ] && echo "| eff | $tool, median of $REPEATS | $VUS_EFF | | | ${EFF[$tool]} | | |" >>"$OUT/table.md"
      done
      ;;
    instr)
      for tool in $PADOS; do
        read -r n_s w_s a_s d1_s dl_s < <(instr_count "$tool" "$INSTR_SHORT")
        read -r n_l w_l a_l d1_l dl_l < <(instr_count "$tool" "$INSTR_ITER")
        per() { python3 -c "import sys;n_s,i_s,n_l,i_l=map(float,sys.argv[1:]);print(f'{(i_l-i_s)/(n_l-n_s):,.0f}' if n_l>n_s else 'n/a')" "$@"; }
        misses=""
        [ "$INSTR_CACHE" = 1 ] && misses="; on the load worker $(per "$n_s" "$d1_s" "$n_l" "$d1_l") L1 and $(per "$n_s" "$dl_s" "$n_l" "$dl_l") last-level data misses per request (callgrind's model)"
        echo "| instr | $tool | $INSTR_VUS | $n_s and $n_l | | $(per "$n_s" "$w_s" "$n_l" "$w_l") instructions per request on the load worker, $(per "$n_s" "$a_s" "$n_l" "$a_l") in all threads (marginal)$misses | | |" >>"$OUT/table.md"
      done
      ;;
    mem)
      for vus in $MEM_VUS; do
        for tool in $TOOLS; do
          read -r reqs cpu rss < <(run "$tool" "mem-$vus-$tool" "$vus" "$MEM_DUR" 1)
          per=$(python3 -c "import sys;print(round(float(sys.argv[1])/float(sys.argv[2]),1))" "$rss" "$vus")
          MEMV[$tool-$vus]=$per
          echo "| mem | $tool | $vus | $reqs | $cpu | | $((rss / 1024)) | $per |" >>"$OUT/table.md"
        done
      done
      ;;
    start)
      for tool in $TOOLS; do
        read -r first all rss < <(start_s "$tool" "$START_VUS")
        per=$(python3 -c "import sys;print(round(float(sys.argv[1])/float(sys.argv[2]),1))" "$rss" "$START_VUS")
        IDLE[$tool]=$per
        echo "| start | $tool | $START_VUS | first request after ${first} s, every VU's first after ${all} s | | | $((rss / 1024)) (every VU made, idle) | $per |" >>"$OUT/table.md"
      done
      ;;
  esac
done
cat "$OUT/table.md"
if [ "$PADO_JS" = 1 ]; then
  echo
  [ -n "${EFF[k6]:-}" ] && echo "requests per CPU-second, pado / k6: $(ratio "${EFF[pado]}" "${EFF[k6]}") (goal: at least 3)"
  [ -n "${EFF[k6]:-}" ] && [ -n "${EFF[base]:-}" ] && echo "requests per CPU-second, base / k6: $(ratio "${EFF[base]}" "${EFF[k6]}"); pado / base: $(ratio "${EFF[pado]}" "${EFF[base]}")"
  for vus in $MEM_VUS; do
    [ -n "${MEMV[k6-$vus]:-}" ] && echo "memory per VU at $vus VUs, pado / k6: $(ratio "${MEMV[pado-$vus]}" "${MEMV[k6-$vus]}") (goal: at most 0.25)"
  done
  [ -n "${IDLE[k6]:-}" ] && echo "memory per VU at $START_VUS VUs, every VU made and idle, pado / k6: $(ratio "${IDLE[pado]}" "${IDLE[k6]}") (goal: at most 0.25)"
else
  echo
  echo "pado: not supported yet (pado run does not take k6 scripts); k6's figures only"
fi
