#!/usr/bin/env bash
# bench/run.sh — pado benchmarks, measured in the same run as the peer tools (wrk, k6, oha) of
# ../shared/bench/anchors.sh (the shared folder beside the repository; ANCHORS=DIR points elsewhere),
# reusing its nginx config, stall server, k6/wrk scripts and parsers.
#
# Phases (PHASES, default "eff mem pace co"; tools are installed / pado built before any phase):
#   eff   throughput efficiency: nginx on CPU 0, generator on CPU 1 (taskset), 64 conns/VUs, DUR s,
#         REPEATS runs each of pado, wrk, k6 (and oha if installed), interleaved; /usr/bin/time -v
#         for generator CPU (user+sys) and peak RSS                                -> OUT/eff/
#   mem   memory per VU: pado --vus 1/1000/5000 --think 1s (and 1000 VUs without think time),
#         peak RSS; peers wrk -c 1000 and k6 1000 VUs (get + sleep 1), as anchors.sh does -> OUT/mem/
#   pace  open-model pacing: pado --rate 1000 and --rate 20000 for DUR s, --max-vus 2000 -> OUT/pace/
#   co    coordinated omission: pado --rate 200 --duration 15s --max-vus 400 against stall_server.py
#         (plus the k6 constant-arrival-rate and wrk runs of anchors.sh, CO_PEERS)   -> OUT/co/
# At the end bench/report.py prints markdown tables (also written to OUT/tables.md).
#
# Safety: every target is 127.0.0.1; every load run has a fixed duration and is wrapped in
# `timeout`; only PIDs started by this script are signalled.
#
# Knobs (environment): PHASES, REPEATS (3), DUR (10), CONNS (64), SERVER_CPU (0), GEN_CPU (1),
#   OUT (default ${TMPDIR:-/tmp}/pado-bench-out), TOOLS (eff peers, "wrk k6 oha"),
#   MEM_VUS ("1000 5000"), MEM_DUR (DUR), MEM_PEERS ("wrk k6"), PACE_RATES ("1000 20000"),
#   PACE_MAX_VUS (2000), CO_PEERS ("k6 wrk"), PADO (path of the pado binary), INSTALL (1: apt/go
#   install missing tools; oha only with INSTALL_OHA=1, a ~10 min cargo build), SKIP_REPORT (0),
#   ANCHORS (the shared bench folder, default ../shared/bench beside the repository),
#   BASELINE (an earlier pado binary: eff runs it beside PADO, interleaved, as "pado_base", and
#   prints pado / pado_base — the paired before/after of a change).
set -uo pipefail
# Bench runs stay out of the user's run history (pado history).
export PADO_HOME="${TMPDIR:-/tmp}/pado-bench-history"

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
ANCHORS="${ANCHORS:-$REPO/../shared/bench}"    # read-only: used in place, never modified
export PATH="$HOME/go/bin:/usr/local/go/bin:$HOME/.cargo/bin:$PATH"
export K6_NO_USAGE_REPORT=true
export PYTHONDONTWRITEBYTECODE=1

PHASES="${PHASES:-eff mem pace co}"
REPEATS="${REPEATS:-3}"
DUR="${DUR:-10}"
CONNS="${CONNS:-64}"
SERVER_CPU="${SERVER_CPU:-0}"
GEN_CPU="${GEN_CPU:-1}"
TOOLS="${TOOLS:-wrk k6 oha}"
MEM_VUS="${MEM_VUS:-1000 5000}"
MEM_DUR="${MEM_DUR:-$DUR}"
MEM_PEERS="${MEM_PEERS:-wrk k6}"
PACE_RATES="${PACE_RATES:-1000 20000}"
PACE_MAX_VUS="${PACE_MAX_VUS:-2000}"
CO_PEERS="${CO_PEERS:-k6 wrk}"
CO_RATE=200
CO_DUR=15
CO_MAX_VUS=400
OUT="${OUT:-${TMPDIR:-/tmp}/pado-bench-out}"
PADO="${PADO:-$REPO/target/release/pado}"
NGX_CONF="${NGX_CONF:-$ANCHORS/nginx-anchors.conf}"
NGX_PORT=18080
STALL_PORT=18081
URL="http://127.0.0.1:${NGX_PORT}/"
STALL_URL="http://127.0.0.1:${STALL_PORT}/"
NGX_PREFIX=/tmp/bench-anchors-nginx   # the anchors config hard-codes its pid/log paths there
mkdir -p "$OUT"
cd "$OUT" || exit 1                    # nothing a tool writes by default lands in the repo

log() { printf '[pado-bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }
has_phase() { case " $PHASES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
in_list() { case " $2 " in *" $1 "*) have "$1" ;; *) return 1 ;; esac; }

# 5000 VUs = 5000 sockets in pado and 5000 in nginx (the anchors config allows 8192 per worker and
# raises its own worker_rlimit_nofile to 20000); pado inherits this limit. Where the hard limit is
# lower than 65536 (20000 here), take the hard limit: still plenty for 5000 VUs.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 6000 ]; then
  echo "warning: ulimit -n is $(ulimit -n): too low for 5000 VUs" >&2
fi

# ------------------------------------------------------------------------------------ install/build
install_tools() {
  [ "${INSTALL:-1}" = 1 ] || return 0
  mkdir -p "$OUT/install"
  local need=()
  have wrk || need+=(wrk)
  have nginx || need+=(nginx)
  [ -x /usr/bin/time ] || need+=(time)
  have curl || need+=(curl)
  if [ "${#need[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && have apt-get; then
      apt-get update >"$OUT/install/apt-update.log" 2>&1
      local pkgs=() p
      for p in "${need[@]}"; do
        if [ "$p" = nginx ]; then   # as anchors.sh: nginx-light where it exists, else nginx
          if apt-cache show nginx-light >/dev/null 2>&1; then pkgs+=(nginx-light); else pkgs+=(nginx); fi
        else pkgs+=("$p"); fi
      done
      log "apt-get install ${pkgs[*]}"
      DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}" >"$OUT/install/apt.log" 2>&1 \
        || log "apt-get install failed (see $OUT/install/apt.log)"
    else
      log "not root / no apt-get: cannot install ${need[*]}"
    fi
  fi
  if ! have k6 && case " $TOOLS $MEM_PEERS $CO_PEERS " in *" k6 "*) true ;; *) false ;; esac; then
    if have go; then
      log "go install go.k6.io/k6@v1.8.1 (the version of REFERENCE.md; a few minutes)"
      timeout 1800 go install go.k6.io/k6@v1.8.1 >"$OUT/install/k6.log" 2>&1 \
        || log "k6 install failed (see $OUT/install/k6.log); k6 rows will be missing"
    else log "no go toolchain: k6 rows will be missing"; fi
  fi
  if ! have oha && [ "${INSTALL_OHA:-0}" = 1 ] && have cargo; then
    log "cargo install --locked oha (~10 min on 2 cores)"
    timeout 1800 cargo install --locked oha >"$OUT/install/oha.log" 2>&1 || log "oha install failed"
  fi
}

build_pado() {
  [ -x "$PADO" ] && return 0
  have cargo || { log "no cargo and no $PADO"; return 1; }
  log "building pado (cargo build --release)"
  (cd "$REPO" && timeout 3600 cargo build --release) >"$OUT/pado-build.log" 2>&1 \
    || { log "cargo build failed (see $OUT/pado-build.log)"; return 1; }
}

record_versions() {
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "kernel: $(uname -sr)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "pado: $("$PADO" --version 2>&1 | head -1) (built $(stat -c %y "$PADO_SRC" | cut -d. -f1), HEAD $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')$( [ -n "$(git -C "$REPO" status --porcelain -- src crates Cargo.toml Cargo.lock 2>/dev/null)" ] && echo ' + uncommitted changes'), sha256 $(sha256sum "$PADO" | cut -c1-12))"
    echo "params: REPEATS=$REPEATS DUR=$DUR MEM_DUR=$MEM_DUR CONNS=$CONNS SERVER_CPU=$SERVER_CPU GEN_CPU=$GEN_CPU nofile=$(ulimit -n)"
    echo "nginx: $(nginx -v 2>&1)"
    have wrk && echo "wrk: $(wrk -v 2>&1 | head -1)"
    have oha && echo "oha: $(oha --version 2>&1 | head -1)"
    have k6 && echo "k6: $(k6 version 2>&1 | head -1)"
    echo "time: GNU time $(dpkg-query -W -f='${Version}' time 2>/dev/null)"
    echo "python: $(python3 --version 2>&1)"
  } >"$OUT/versions.txt"
  cat "$OUT/versions.txt" >&2
}

# ------------------------------------------------------------------------------------------ servers
NGX_PID=""
STALL_PID=""

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {  # wait_port PORT PID: until PORT accepts (5 s max) while PID lives
  local i
  for i in $(seq 1 100); do
    port_busy "$1" && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

start_nginx() {  # exactly as anchors.sh: same config, pinned to SERVER_CPU, daemon off, backgrounded
  if port_busy "$NGX_PORT"; then log "port $NGX_PORT already in use (anchors.sh running?); not starting nginx"; return 1; fi
  local wc
  wc=$(awk '$1=="worker_connections"{gsub(";","",$2); print $2}' "$NGX_CONF")
  if [ "${wc:-0}" -lt 5100 ]; then log "warning: $NGX_CONF has worker_connections ${wc:-?} (< 5000 VUs + margin)"; fi
  mkdir -p "$NGX_PREFIX"
  taskset -c "$SERVER_CPU" nginx -p "$NGX_PREFIX/" -e "$NGX_PREFIX/error.log" -c "$NGX_CONF" \
    >"$NGX_PREFIX/stdout.log" 2>&1 &
  NGX_PID=$!
  if ! wait_port "$NGX_PORT" "$NGX_PID"; then log "nginx did not start (see $NGX_PREFIX/error.log)"; return 1; fi
  local body
  body="$(curl -s --max-time 2 "$URL")"
  if [ "${#body}" -lt 90 ]; then log "nginx answered unexpectedly: $body"; stop_nginx; return 1; fi
  log "nginx up (pid $NGX_PID, CPU $SERVER_CPU)"
}

stop_nginx() {
  if [ -n "$NGX_PID" ]; then kill -TERM "$NGX_PID" 2>/dev/null; wait "$NGX_PID" 2>/dev/null; NGX_PID=""; fi
}

start_stall() {  # start_stall STATSFILE — as anchors.sh (a fresh server per run: stalls at 4-5 s, 9-10 s, ...)
  if port_busy "$STALL_PORT"; then log "port $STALL_PORT already in use"; return 1; fi
  taskset -c "$SERVER_CPU" python3 "$ANCHORS/stall_server.py" --port "$STALL_PORT" --stats "$1" \
    >"${1%.json}.log" 2>&1 &
  STALL_PID=$!
  wait_port "$STALL_PORT" "$STALL_PID" || { log "stall server did not start"; return 1; }
}

stop_stall() {
  if [ -n "$STALL_PID" ]; then kill -TERM "$STALL_PID" 2>/dev/null; wait "$STALL_PID" 2>/dev/null; STALL_PID=""; fi
}

server_ticks() {  # utime+stime clock ticks of our nginx (master + workers) or stall server
  local pids="" p c t=0
  for p in $NGX_PID $STALL_PID; do
    pids="$pids $p"
    for c in $(cat "/proc/$p/task/$p/children" 2>/dev/null); do pids="$pids $c"; done
  done
  for p in $pids; do
    c=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null) && t=$(( t + ${c:-0} ))
  done
  echo "$t"
}

cleanup() { stop_stall; stop_nginx; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------------------------------------ runner
# run_gen BASE TIMEOUT CMD...: as anchors.sh — CMD pinned to GEN_CPU under /usr/bin/time -v and
# `timeout`; stdout -> BASE.out, stderr -> BASE.err, rusage -> BASE.time, command -> BASE.cmd
run_gen() {
  local base=$1 tmo=$2; shift 2
  mkdir -p "$(dirname "$base")"
  { printf '%q ' taskset -c "$GEN_CPU" "$@"; echo; } >"$base.cmd"
  echo "$(cut -d' ' -f1-3 /proc/loadavg)" >"$base.load"
  local t0 s0
  head -1 /proc/stat >"$base.stat"   # whole-machine CPU before/after: shows other load (e.g. a compile)
  s0=$(server_ticks); t0=$(date +%s.%N)
  timeout -k 5 "$tmo" /usr/bin/time -v -o "$base.time" taskset -c "$GEN_CPU" "$@" >"$base.out" 2>"$base.err"
  echo $? >"$base.rc"
  echo "$s0 $(server_ticks) $t0 $(date +%s.%N) $(getconf CLK_TCK)" >"$base.server_cpu"
  head -1 /proc/stat >>"$base.stat"
  sleep 1  # let sockets drain between runs
}

# pado_run BASE TIMEOUT ARGS...: pado run --quiet --out BASE.pado ARGS (result dir -> BASE.pado/)
pado_run() {
  local base=$1 tmo=$2; shift 2
  rm -rf "$base.pado"
  run_gen "$base" "$tmo" "$PADO" run --quiet --out "$base.pado" "$@"
}

# Peer tools, command lines copied from anchors.sh gen_closed(). $1=tool $2=base $3=N $4=D $5=URL
# $6 = per-iteration sleep for k6 (memory runs)
gen_peer() {
  local tool=$1 base=$2 n=$3 d=$4 u=$5 w=${6:-0} tmo=$(( $4 + 25 ))
  case "$tool" in
    wrk) run_gen "$base" "$tmo" wrk -t1 -c"$n" -d"${d}s" --latency -s "$ANCHORS/wrk_report.lua" "$u" ;;
    oha) run_gen "$base" "$tmo" oha -z "${d}s" -c "$n" --no-tui --output-format json "$u" ;;
    k6)  run_gen "$base" $(( tmo + 60 )) k6 run --quiet --no-usage-report --vus "$n" --duration "${d}s" \
           -e TARGET="$u" -e SLEEP="$w" -e SUMMARY_JSON="$base.summary.json" "$ANCHORS/k6_load.js" ;;
    *) log "unknown tool $tool"; return 1 ;;
  esac
}

# ------------------------------------------------------------------------------------------ phases
phase_eff() {
  rm -rf "$OUT/eff"; mkdir -p "$OUT/eff"
  start_nginx || return 1
  local r t
  for r in $(seq 1 "$REPEATS"); do          # interleave tools so drift hits all of them alike
    log "eff: pado run $r/$REPEATS (${CONNS} VUs, ${DUR}s)"
    pado_run "$OUT/eff/pado-$r" $(( DUR + 25 )) --url "$URL" --vus "$CONNS" --duration "${DUR}s"
    if [ -n "${BASELINE:-}" ]; then        # the same run with an earlier pado, paired
      log "eff: pado_base run $r/$REPEATS ($BASELINE)"
      rm -rf "$OUT/eff/pado_base-$r.pado"
      run_gen "$OUT/eff/pado_base-$r" $(( DUR + 25 )) "$BASELINE" run --quiet --out "$OUT/eff/pado_base-$r.pado" \
        --url "$URL" --vus "$CONNS" --duration "${DUR}s"
    fi
    for t in $TOOLS; do
      in_list "$t" "$TOOLS" || { log "eff: $t not installed, skipped"; continue; }
      log "eff: $t run $r/$REPEATS (${CONNS} conns, ${DUR}s)"
      gen_peer "$t" "$OUT/eff/$t-$r" "$CONNS" "$DUR" "$URL"
    done
  done
  stop_nginx
}

phase_mem() {
  rm -rf "$OUT/mem"; mkdir -p "$OUT/mem"
  start_nginx || return 1
  local r n tmo=$(( MEM_DUR + 40 ))
  for r in $(seq 1 "$REPEATS"); do
    for n in 1 $MEM_VUS; do
      log "mem: pado $n VUs, think 1s, run $r/$REPEATS (${MEM_DUR}s)"
      pado_run "$OUT/mem/pado_${n}vu_think-$r" "$tmo" --url "$URL" --vus "$n" --think 1s --duration "${MEM_DUR}s"
    done
    log "mem: pado 1000 VUs, no think time, run $r/$REPEATS"
    pado_run "$OUT/mem/pado_1000vu_nothink-$r" "$tmo" --url "$URL" --vus 1000 --duration "${MEM_DUR}s"
    if in_list wrk "$MEM_PEERS"; then
      log "mem: wrk -c 1000 run $r"; gen_peer wrk "$OUT/mem/wrk_1000c-$r" 1000 "$MEM_DUR" "$URL"
    fi
    if in_list k6 "$MEM_PEERS"; then
      log "mem: k6 1000 VUs (get + sleep 1) run $r"; gen_peer k6 "$OUT/mem/k6_1000vu-$r" 1000 "$MEM_DUR" "$URL" 1
    fi
  done
  stop_nginx
}

phase_pace() {
  rm -rf "$OUT/pace"; mkdir -p "$OUT/pace"
  start_nginx || return 1
  local r rate
  for r in $(seq 1 "$REPEATS"); do
    for rate in $PACE_RATES; do
      log "pace: pado --rate $rate run $r/$REPEATS (${DUR}s, --max-vus $PACE_MAX_VUS)"
      echo "$rate $DUR" >"$OUT/pace/pado_rate${rate}-$r.plan"
      pado_run "$OUT/pace/pado_rate${rate}-$r" $(( DUR + 30 )) --url "$URL" --rate "$rate" \
        --duration "${DUR}s" --max-vus "$PACE_MAX_VUS"
    done
  done
  stop_nginx
}

phase_co() {
  rm -rf "$OUT/co"; mkdir -p "$OUT/co"
  local r name base tmo=$(( CO_DUR + 25 ))
  for r in $(seq 1 "$REPEATS"); do
    for name in pado_r200 k6_car200 wrk_closed; do
      case "$name" in
        k6_*)  in_list k6 "$CO_PEERS" || continue ;;
        wrk_*) in_list wrk "$CO_PEERS" || continue ;;
      esac
      base="$OUT/co/$name-$r"
      start_stall "$base.server.json" || return 1
      log "co: $name run $r/$REPEATS (${CO_DUR}s)"
      case "$name" in
        pado_r200)  pado_run "$base" "$tmo" --url "$STALL_URL" --rate "$CO_RATE" --duration "${CO_DUR}s" \
                      --max-vus "$CO_MAX_VUS" ;;
        k6_car200)  run_gen "$base" $(( tmo + 30 )) k6 run --quiet --no-usage-report -e TARGET="$STALL_URL" \
                      -e RATE="$CO_RATE" -e DURATION="${CO_DUR}s" -e SUMMARY_JSON="$base.summary.json" \
                      "$ANCHORS/k6_open.js" ;;
        wrk_closed) WRK_SLOW_MS=100 run_gen "$base" "$tmo" wrk -t1 -c"$CONNS" -d"${CO_DUR}s" --latency \
                      -s "$ANCHORS/wrk_report.lua" "$STALL_URL" ;;
      esac
      stop_stall
    done
  done
}

# ------------------------------------------------------------------------------------------ main
log "OUT=$OUT PHASES='$PHASES' REPEATS=$REPEATS DUR=$DUR load: $(cut -d' ' -f1-3 /proc/loadavg)"
install_tools
build_pado || exit 1
# Snapshot the binary: the tree may be rebuilt by someone else while this runs; every pado run of
# this benchmark then uses the same build.
PADO_SRC="$PADO"
for i in $(seq 1 30); do   # a copy taken mid-link would not run: retry for up to 5 min
  cp -f "$PADO_SRC" "$OUT/pado.bin" 2>/dev/null && "$OUT/pado.bin" --version >/dev/null 2>&1 && break
  log "pado binary not usable yet (being rebuilt?), retrying in 10 s"; sleep 10
done
"$OUT/pado.bin" --version >/dev/null 2>&1 || { log "no usable pado binary at $PADO_SRC"; exit 1; }
PADO="$OUT/pado.bin"
have nginx || { log "nginx missing"; exit 1; }
[ -x /usr/bin/time ] || { log "/usr/bin/time missing"; exit 1; }
record_versions
has_phase eff && phase_eff
has_phase mem && phase_mem
has_phase pace && phase_pace
has_phase co && phase_co
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/versions.txt"
if [ "${SKIP_REPORT:-0}" != 1 ]; then
  python3 "$HERE/report.py" "$OUT" | tee "$OUT/tables.md"
fi
