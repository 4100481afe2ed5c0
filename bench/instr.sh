#!/usr/bin/env bash
# bench/instr.sh — instructions per request of two pado binaries, measured paired
# (old, new, old, new, ...) against the same local nginx: the before/after figure that
# other load on the machine hardly moves (a busy core slows a request, it does not
# make it execute more instructions).
#
#   OLD=/path/to/pado-old NEW=target/release/pado bash bench/instr.sh
#   OLD=... MID=/path/to/pado-main NEW=... bash bench/instr.sh   # a third binary, between
#
# Each binary makes two counted runs of a fixed amount of work, VUS x SHORT and VUS x ITER
# requests (`--iterations`: a slow or busy core changes how long they take, not what they
# do); the figure is the marginal count per request, (count of the long run - count of the
# short) / (requests of the long - of the short), which leaves out start-up, connecting
# the VUs and writing the reports. How the
# instructions are counted (MODE, default auto):
#   perf      `perf stat -e instructions:u,cycles:u`: user-space instructions and cycles.
#   valgrind  where the CPU has no usable performance counters (a VM: `perf stat` says
#             "<not supported>"), valgrind's callgrind counts every instruction executed,
#             per thread: the whole process's and the load worker's (the hot path). Runs are
#             ~50x slower under it, so they make fewer requests; the count per request stays
#             exact (no cycles: callgrind counts instructions, not time).
#   auto      perf if it counts instructions here, else valgrind.
# Each repeat also makes one plain DUR-second run under `perf stat -e task-clock`: requests
# per CPU-second as bench/run.sh reports them (wall-clock: noisy on a shared machine).
#
# The load: `pado run --url URL --vus VUS --iterations ...`, pinned to GEN_CPU; nginx (started
# here on 127.0.0.1:PORT, the fixed 100-byte body of bench/run.sh's target) pinned to
# SERVER_CPU. Knobs: OLD, NEW (required), MID (optional: a third binary, e.g. the build a
# fix starts from, measured in the same rounds: old, mid, new), VUS (64), ITER (200
# iterations per VU), SHORT (20),
# DUR (5 s, the plain run), REPEATS (3), MODE,
# GEN_CPU (1), SERVER_CPU (0), PORT (18082), OUT (${TMPDIR:-/tmp}/pado-bench-instr; the
# table is also written to OUT/instr.md).
# Only loopback; every run is bounded by `timeout`; only PIDs started here are signalled.
set -uo pipefail
export PADO_HOME="${TMPDIR:-/tmp}/pado-bench-history"   # bench runs stay out of the history

OLD="${OLD:?OLD=path of the old pado binary}"
NEW="${NEW:?NEW=path of the new pado binary}"
MID="${MID:-}"
NAMES="old${MID:+ mid} new"
VUS="${VUS:-64}"
DUR="${DUR:-5}"
SHORT="${SHORT:-20}"
ITER="${ITER:-200}"
REPEATS="${REPEATS:-3}"
MODE="${MODE:-auto}"
GEN_CPU="${GEN_CPU:-1}"
SERVER_CPU="${SERVER_CPU:-0}"
PORT="${PORT:-18082}"
OUT="${OUT:-${TMPDIR:-/tmp}/pado-bench-instr}"
NGX="$OUT/nginx"
URL="http://127.0.0.1:$PORT/"

log() { printf '[pado-instr %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
mkdir -p "$OUT" "$NGX"
cp -f "$OLD" "$OUT/old.bin" && cp -f "$NEW" "$OUT/new.bin" || { log "cannot copy OLD/NEW"; exit 1; }
if [ -n "$MID" ]; then cp -f "$MID" "$OUT/mid.bin" || { log "cannot copy MID"; exit 1; }; fi

if [ "$MODE" = auto ]; then
  if perf stat -x, -e instructions:u -- true 2>&1 | grep -q '^[0-9]'; then MODE=perf
  elif command -v valgrind >/dev/null; then MODE=valgrind
  else log "neither perf with instruction counters nor valgrind: nothing counts instructions"; exit 1; fi
fi
log "counting with $MODE; $VUS VUs x $SHORT and x $ITER iterations, $REPEATS paired repeats; OUT=$OUT"

cat >"$NGX/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $NGX/nginx.pid;
error_log $NGX/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  server_tokens off;
  client_body_temp_path $NGX/body;
  keepalive_requests 100000000;
  keepalive_timeout 75s;
  server {
    listen 127.0.0.1:$PORT backlog=4096;
    location / {
      default_type text/plain;
      return 200 "anchors target: fixed 100-byte body for comparing HTTP load generators over loopback. 0123456789abc\n";
    }
  }
}
CONF
taskset -c "$SERVER_CPU" nginx -p "$NGX/" -e "$NGX/error.log" -c "$NGX/nginx.conf" >"$NGX/stdout.log" 2>&1 &
NGX_PID=$!
trap 'kill -TERM "$NGX_PID" 2>/dev/null; wait "$NGX_PID" 2>/dev/null' EXIT
for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
curl -s --max-time 2 "$URL" | grep -q anchors || { log "nginx did not start (see $NGX/error.log)"; exit 1; }

# count NAME R TAG N: one counted run of OUT/NAME.bin, N iterations per VU -> OUT/NAME-R-TAG.*
count() {
  local name=$1 r=$2 tag=$3 base="$OUT/$1-$2-$3" tmo=600
  rm -rf "$base".pado "$base".cg.*
  local cmd=("$OUT/$name.bin" run --quiet --url "$URL" --vus "$VUS" --iterations "$4" --out "$base.pado")
  case "$MODE" in
    perf) timeout -k 5 "$tmo" taskset -c "$GEN_CPU" perf stat -x, -o "$base.perf" \
            -e instructions:u,cycles:u -- "${cmd[@]}" >"$base.out" 2>&1 ;;
    valgrind) timeout -k 5 "$tmo" taskset -c "$GEN_CPU" valgrind --tool=callgrind \
            --separate-threads=yes --callgrind-out-file="$base.cg.%p" "${cmd[@]}" >"$base.out" 2>&1 ;;
  esac
  sleep 1   # let sockets drain between runs
}

# plain NAME R: one run of OUT/NAME.bin as bench/run.sh makes it, its CPU time -> OUT/NAME-R-plain.*
plain() {
  local base="$OUT/$1-$2-plain"
  rm -rf "$base".pado
  timeout -k 5 $(( DUR + 60 )) taskset -c "$GEN_CPU" perf stat -x, -o "$base.perf" -e task-clock -- \
    "$OUT/$1.bin" run --quiet --url "$URL" --vus "$VUS" --duration "${DUR}s" --out "$base.pado" \
    >"$base.out" 2>&1
  sleep 1
}

for r in $(seq 1 "$REPEATS"); do
  for name in $NAMES; do
    log "run $r/$REPEATS: $name (x $SHORT and x $ITER iterations counted, ${DUR}s plain)"
    count "$name" "$r" short "$SHORT"
    count "$name" "$r" long "$ITER"
    plain "$name" "$r"
  done
done

python3 - "$OUT" "$MODE" "$REPEATS" $NAMES <<'PY' | tee "$OUT/instr.md"
import glob, json, os, statistics, sys

out, mode, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = sys.argv[4:]   # old, [mid,] new

def requests(base):
    try:
        with open(base + ".pado/summary.json") as f:
            return json.load(f)["requests"] or None
    except (OSError, ValueError, KeyError):
        return None

def perf_counts(base):
    """perf stat -x, lines: value,unit,event,... -> {event: value}."""
    got = {}
    try:
        for line in open(base + ".perf"):
            p = line.strip().split(",")
            if len(p) > 2 and p[0] and p[0][0].isdigit():
                got[p[2].split(":")[0]] = float(p[0])
    except OSError:
        pass
    return got

def counts(base):
    """What one counted run executed: {figure: count}, or None."""
    if mode == "perf":
        c = perf_counts(base)
        return c or None
    per = []   # callgrind: one file per thread, each with a `totals:` line
    for path in glob.glob(base + ".cg.*"):
        per += [int(l.split()[1]) for l in open(path) if l.startswith("totals:")]
    # The load worker is the busiest thread (bench runs pin pado to one core: one worker).
    return {"instructions": sum(per), "worker": max(per)} if per else None

rows = {}
for name in names:
    for r in range(1, repeats + 1):
        base = f"{out}/{name}-{r}"
        row = {}
        n_s, n_l = requests(base + "-short"), requests(base + "-long")
        c_s, c_l = counts(base + "-short"), counts(base + "-long")
        if n_s and n_l and n_l > n_s and c_s and c_l:
            for k in c_l:
                if k in c_s:
                    row[k] = (c_l[k] - c_s[k]) / (n_l - n_s)      # per request, start-up removed
                    row[k + "_all"] = c_l[k] / n_l                 # per request, everything
        n_p, c_p = requests(base + "-plain"), perf_counts(base + "-plain")
        if n_p and "task-clock" in c_p:   # milliseconds of CPU
            row["rps_cpu"] = n_p / (c_p["task-clock"] / 1000)
        rows.setdefault(name, []).append(row)

cols = [("instructions", "instructions/request (marginal)", "{:,.0f}")]
if mode == "perf":
    cols += [("cycles", "cycles/request (marginal)", "{:,.0f}")]
else:
    cols += [("worker", "instructions/request, load worker thread (marginal)", "{:,.0f}")]
cols += [("instructions_all", "instructions/request (whole run)", "{:,.0f}"),
         ("rps_cpu", "requests per CPU-second (plain run, wall-clock: noisy)", "{:,.0f}")]

def med(name, key):
    v = [x[key] for x in rows.get(name, []) if key in x]
    return (statistics.median(v), v) if v else (None, v)

def show(m, v, fmt):
    return "—" if m is None else fmt.format(m) + " (" + ", ".join(fmt.format(x) for x in v) + ")"

print(f"Counted with {mode}; medians of {repeats} paired runs (each run in brackets). Marginal:")
print("(count of the long run − count of the short run) / (their requests' difference), which")
print("leaves out start-up, connecting the VUs and writing the reports.\n")
later = names[1:]   # each compared with old
print("| figure | " + " | ".join(names) + " | " + " | ".join(f"{n} / old" for n in later) + " |")
print("|---" * (len(names) + len(later) + 1) + "|")
for key, label, fmt in cols:
    mo, vo = med("old", key)
    cells = [show(mo, vo, fmt)]
    ratios = []
    for n in later:
        mn, vn = med(n, key)
        cells.append(show(mn, vn, fmt))
        ratios.append(f"{mn / mo:.3f}" if mo and mn else "—")
    print(f"| {label} | " + " | ".join(cells + ratios) + " |")
PY
