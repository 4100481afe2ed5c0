#!/usr/bin/env bash
# What the live dashboard costs the generator: requests per generator CPU-second of
# the same test with and without `--dashboard` (the page open in headless Chromium,
# or a poller on /api/stream + /api/state each second), in the same run, interleaved.
# nginx on CPU 0 (SERVER_CPU), pado on CPU 1 (GEN_CPU, one worker), the watcher on
# WATCH_CPU (default: the server's core, so it takes nothing from the generator's),
# CONNS VUs without think time for DUR seconds, REPEATS runs of each.
#   bash bench/dashboard.sh          (DUR=10 REPEATS=3 CONNS=64; PADO=FILE: that binary;
#                                     WATCHER=chromium|poller, default chromium when
#                                     testing/browser is installed, else poller)
# The issue's target: the dashboard's run within 2% of the plain one.
# Not part of the test suite. Safety: loopback only, every run bounded by `timeout`,
# only PIDs started here are signalled.
set -uo pipefail
export PADO_HOME="${TMPDIR:-/tmp}/pado-bench-history"   # bench runs stay out of pado history
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DUR="${DUR:-10}"
REPEATS="${REPEATS:-3}"
CONNS="${CONNS:-64}"
SERVER_CPU="${SERVER_CPU:-0}"
GEN_CPU="${GEN_CPU:-1}"
WATCH_CPU="${WATCH_CPU:-$SERVER_CPU}"
OUT="${OUT:-${TMPDIR:-/tmp}/pado-bench-dashboard}"
PORT=18082
NGX_PREFIX=/tmp/pado-bench-dashboard-nginx
if [ -z "${WATCHER:-}" ]; then
  if [ -x /usr/bin/chromium ] && [ -d "$ROOT/testing/browser/node_modules/playwright-core" ] \
    && command -v node >/dev/null; then WATCHER=chromium; else WATCHER=poller; fi
fi
mkdir -p "$OUT" "$NGX_PREFIX/logs"
log() { printf '[dashboard-bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
command -v nginx >/dev/null || { echo "nginx missing: apt-get install nginx-light"; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing: apt-get install time"; exit 1; }
command -v curl >/dev/null || { echo "curl missing: apt-get install curl"; exit 1; }
# PADO=FILE measures that binary; otherwise this checkout's release build. A copy, so
# a rebuild of the tree meanwhile does not change what is measured.
if [ -n "${PADO:-}" ]; then
  cp "$PADO" "$OUT/pado.bin" || exit 1
else
  (cd "$ROOT" && cargo build --release --quiet -p pado) || exit 1
  cp "$ROOT/target/release/pado" "$OUT/pado.bin"
fi
PADO="$OUT/pado.bin"

cat >"$NGX_PREFIX/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $NGX_PREFIX/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  error_log $NGX_PREFIX/error.log warn;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  server {
    listen 127.0.0.1:$PORT;
    location / { default_type text/plain; return 200 "ok\n"; }
  }
}
CONF
taskset -c "$SERVER_CPU" nginx -p "$NGX_PREFIX/" -e "$NGX_PREFIX/error.log" -c "$NGX_PREFIX/nginx.conf" &
NGX=$!
WATCH=""
cleanup() {
  [ -n "$WATCH" ] && kill "$WATCH" 2>/dev/null
  kill "$NGX" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM
sleep 1
URL="http://127.0.0.1:$PORT/"
curl -sf --max-time 2 "$URL" >/dev/null || { log "nginx did not answer on $URL"; exit 1; }

# poll BASE PID: once pado (its `timeout`, PID) printed the dashboard's address,
# hold /api/stream open and ask /api/state every second until PID ends.
poll() {
  local base=$1 pid=$2 url="" i
  for i in $(seq 1 100); do
    url=$(grep -ao 'http://127\.0\.0\.1:[0-9]*/' "$base.err" 2>/dev/null | head -1)
    [ -n "$url" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$url" ]; then echo "no dashboard address printed" >"$base.watch"; return; fi
  local api="${url%/}"
  taskset -c "$WATCH_CPU" curl -sN --max-time $((DUR + 30)) "$api/api/stream" >"$base.stream" 2>/dev/null &
  local sse=$! polls=0
  while kill -0 "$pid" 2>/dev/null; do
    taskset -c "$WATCH_CPU" curl -s --max-time 2 "$api/api/state" >/dev/null && polls=$((polls + 1))
    sleep 1
  done
  kill "$sse" 2>/dev/null
  echo "poller: $polls state polls; $(grep -c '^event: second' "$base.stream") seconds streamed" >"$base.watch"
}

# threads BASE PID: the CPU ticks of each thread of the pado process under PID (its
# `timeout`), sampled every 0.5 s until it ends; the last sample is kept in
# BASE.threads ("name ticks" lines). The dashboard's own threads (named
# pado-dashboard*) over the whole process: its direct cost, a share that other load
# on the machine hardly moves, unlike requests per CPU-second.
threads() {
  local base=$1 pid=$2 p="" c i exe
  exe=$(readlink -f "$PADO")
  for i in $(seq 1 100); do
    for c in $(pgrep -f -- "$base.dir"); do
      [ "$(readlink -f /proc/"$c"/exe 2>/dev/null)" = "$exe" ] && p=$c
    done
    [ -n "$p" ] && break
    kill -0 "$pid" 2>/dev/null || return
    sleep 0.1
  done
  [ -n "$p" ] || return
  python3 - "$p" "$base.threads" <<'PY'
import os, sys, time
pid, out = sys.argv[1], sys.argv[2]
while os.path.isdir(f"/proc/{pid}"):
    ticks = {}
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            st = open(f"/proc/{pid}/task/{tid}/stat").read()
            name = st[st.index("(") + 1:st.rindex(")")]
            f = st[st.rindex(")") + 2:].split()
            ticks[name] = ticks.get(name, 0) + int(f[11]) + int(f[12])
    except (OSError, ValueError):
        break
    with open(out + ".tmp", "w") as w:
        w.writelines(f"{n.replace(' ', '_')} {t}\n" for n, t in sorted(ticks.items()))
    os.replace(out + ".tmp", out)
    time.sleep(0.5)
PY
}

# one NAME I [--dashboard]: pado pinned to GEN_CPU under /usr/bin/time -v. With
# --dashboard a watcher follows the page from the run's first second: Chromium is
# started first and opens the address as soon as pado prints it.
one() {
  local base="$OUT/$1-$2"; shift 2
  rm -rf "$base.dir" "$base.out" "$base.err" "$base.watch"
  : >"$base.out"; : >"$base.err"
  if [ $# -gt 0 ] && [ "$WATCHER" = chromium ]; then
    taskset -c "$WATCH_CPU" timeout $((DUR + 90)) node "$ROOT/testing/browser/watch.mjs" "@$base.err" \
      $((DUR + 60)) >"$base.watch" 2>&1 &
    WATCH=$!
    local i
    for i in $(seq 1 300); do grep -q '^ready' "$base.watch" 2>/dev/null && break; sleep 0.1; done
  fi
  timeout -k 5 $((DUR + 40)) /usr/bin/time -v -o "$base.time" taskset -c "$GEN_CPU" \
    "$PADO" run --url "$URL" --vus "$CONNS" --duration "${DUR}s" --workers 1 --quiet \
    --out "$base.dir" "$@" >"$base.out" 2>"$base.err" &
  local runner=$!
  local sampler=""
  if [ $# -gt 0 ]; then
    taskset -c "$WATCH_CPU" bash -c "$(declare -f threads); PADO='$PADO'; threads '$base' $runner" &
    sampler=$!
  fi
  if [ $# -gt 0 ] && [ "$WATCHER" = poller ]; then
    poll "$base" "$runner" &
    WATCH=$!
  fi
  wait "$runner"
  [ -n "$sampler" ] && wait "$sampler" 2>/dev/null
  if [ -n "$WATCH" ]; then
    wait "$WATCH" 2>/dev/null
    WATCH=""
  fi
  sleep 1
}

log "OUT=$OUT DUR=$DUR REPEATS=$REPEATS CONNS=$CONNS WATCHER=$WATCHER load: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 "$REPEATS"); do
  log "run $i/$REPEATS: plain"
  one plain "$i"
  log "run $i/$REPEATS: --dashboard, watched by $WATCHER"
  one dashboard "$i" --dashboard
done

python3 - "$OUT" "$REPEATS" "$CONNS" "$WATCHER" <<'PY'
import json, re, sys, statistics
out, reps, conns, watcher = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def cpu(base):
    t = open(base + ".time").read()
    u = float(re.search(r"User time \(seconds\): ([\d.]+)", t).group(1))
    s = float(re.search(r"System time \(seconds\): ([\d.]+)", t).group(1))
    return u + s
res = {}
per_run = {}
for kind in ("plain", "dashboard"):
    effs = []
    per_run[kind] = {}
    for i in range(1, reps + 1):
        base = f"{out}/{kind}-{i}"
        try:
            sm = json.load(open(f"{base}.dir/summary.json"))
            n, c = sm["requests"], cpu(base)
            effs.append(n / c)
            per_run[kind][i] = n / c
            w = ""
            if kind == "dashboard":
                try:
                    w = "; " + " ".join(open(base + ".watch").read().split())
                except OSError:
                    w = "; no watcher output"
            print(f"{kind:9} run {i}: {n:>9} requests, {c:6.2f} CPU-s, {n / c:10.0f} req/CPU-s{w}")
        except Exception as e:
            print(f"{kind:9} run {i}: no result ({e})")
    if effs:
        res[kind] = statistics.median(effs)
print(f"\n{conns} VUs; median requests per generator CPU-second (watcher: {watcher}):")
for k, v in res.items():
    print(f"  {k:9} {v:10.0f}")
if len(res) == 2:
    r = res["dashboard"] / res["plain"]
    print(f"  dashboard / plain: {r:.3f} ({(r - 1) * 100:+.1f}%; the target: within 2%)")
# Paired: run i of each form ran back to back, so a drift of the machine's load
# (other processes) hits both alike; the median of the pairs' ratios cancels it.
# The noise: how far plain runs differ from their median.
pairs = [per_run["dashboard"][i] / per_run["plain"][i]
         for i in sorted(per_run["plain"]) if i in per_run["dashboard"]]
if pairs:
    m = statistics.median(pairs)
    plain = list(per_run["plain"].values())
    noise = max(abs(v / statistics.median(plain) - 1) for v in plain) if plain else 0.0
    print(f"  paired ratios: {' '.join(f'{p:.3f}' for p in pairs)}; median {m:.3f} ({(m - 1) * 100:+.1f}%)")
    verdict = "within the noise" if abs(m - 1) <= noise else "beyond the noise"
    print(f"  plain runs differ from their median by up to {noise * 100:.1f}%: the difference is {verdict}")
# The dashboard's own threads' share of the process's CPU (last sample before it
# ended, so the final second or so is missing from both): its direct cost.
shares = []
for i in range(1, reps + 1):
    try:
        rows = [l.split() for l in open(f"{out}/dashboard-{i}.threads")]
    except OSError:
        continue
    total = sum(int(t) for _, t in rows)
    dash = sum(int(t) for n, t in rows if n.startswith("pado-dashboard"))
    if total:
        shares.append(dash / total)
        print(f"  run {i}: dashboard threads {dash} of {total} CPU ticks ({dash / total * 100:.2f}%)")
if shares:
    print(f"  the dashboard's own threads, median share of the generator's CPU: {statistics.median(shares) * 100:.2f}%")
PY
