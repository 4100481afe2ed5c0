#!/usr/bin/env bash
# HTTP/2 requests per generator CPU-second: pado vs h2load (nghttp2-client) vs k6, in
# the same run, against nginx serving HTTP/2 over TLS on loopback (self-signed
# certificate). nginx on CPU 0, the generator on CPU 1, CONNS connections × STREAMS
# streams each (h2load -c CONNS -m STREAMS; pado CONNS×STREAMS VUs with max_streams
# STREAMS on one worker; k6 CONNS×STREAMS VUs, which have a connection each: k6 does
# not multiplex one VU's requests), DUR seconds, REPEATS runs each, interleaved.
#   bash bench/h2.sh                  (DUR=10 REPEATS=3 CONNS=4 STREAMS=16; PADO=FILE: that binary;
#                                     BASELINE=FILE: an earlier pado run beside it, interleaved,
#                                     printed as pado_base with the ratio pado / pado_base)
# Not part of the test suite. Needs root for apt-get when nginx or h2load is missing.
set -uo pipefail
# Bench runs stay out of the user's run history (pado history).
export PADO_HOME="${TMPDIR:-/tmp}/pado-bench-history"
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DUR="${DUR:-10}"
REPEATS="${REPEATS:-3}"
CONNS="${CONNS:-4}"
STREAMS="${STREAMS:-16}"
OUT="${OUT:-${TMPDIR:-/tmp}/pado-bench-h2}"
PORT=18443
NGX_PREFIX=/tmp/pado-bench-h2-nginx
K6="${K6:-$(command -v k6 || echo "${GOPATH:-$HOME/go}/bin/k6")}"
export K6_NO_USAGE_REPORT=true
mkdir -p "$OUT" "$NGX_PREFIX/logs"
if ! command -v nginx >/dev/null || ! command -v h2load >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y nginx nghttp2-client >"$OUT/apt.log" 2>&1 \
    || { echo "apt-get install nginx nghttp2-client failed (see $OUT/apt.log)"; exit 1; }
fi
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing: apt-get install time"; exit 1; }
# PADO=FILE measures that binary (e.g. an older build, for a paired before/after);
# otherwise this checkout's release build.
if [ -n "${PADO:-}" ]; then
  cp "$PADO" "$OUT/pado.bin" || exit 1
else
  (cd "$ROOT" && cargo build --release --quiet -p pado) || exit 1
  cp "$ROOT/target/release/pado" "$OUT/pado.bin"
fi
PADO="$OUT/pado.bin"

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
  -keyout "$NGX_PREFIX/key.pem" -out "$NGX_PREFIX/cert.pem" >/dev/null 2>&1 || exit 1
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
  http2_max_concurrent_streams 256;
  server {
    listen 127.0.0.1:$PORT ssl http2;
    ssl_certificate $NGX_PREFIX/cert.pem;
    ssl_certificate_key $NGX_PREFIX/key.pem;
    location / { default_type text/plain; return 200 "ok\n"; }
  }
}
CONF
taskset -c 0 nginx -p "$NGX_PREFIX/" -e "$NGX_PREFIX/error.log" -c "$NGX_PREFIX/nginx.conf" &
NGX=$!
trap 'kill $NGX 2>/dev/null' EXIT
sleep 1
URL="https://127.0.0.1:$PORT/"
VUS=$((CONNS * STREAMS))
cat >"$OUT/k6.js" <<JS
import http from 'k6/http';
export const options = { vus: $VUS, duration: '${DUR}s', insecureSkipTLSVerify: true,
  summaryTrendStats: ['avg', 'p(50)', 'p(99)'] };
export default function () { http.get('$URL'); }
JS

run() { # NAME I CMD...
  local base="$OUT/$1-$2"; shift 2
  /usr/bin/time -v -o "$base.time" taskset -c 1 "$@" >"$base.out" 2>"$base.err"
}
for i in $(seq 1 "$REPEATS"); do
  rm -rf "$OUT/pado-$i.dir"
  run pado "$i" "$PADO" run --url "$URL" --http2 --max-streams "$STREAMS" --vus "$VUS" \
    --duration "${DUR}s" --workers 1 --insecure --quiet --out "$OUT/pado-$i.dir"
  if [ -n "${BASELINE:-}" ]; then
    rm -rf "$OUT/pado_base-$i.dir"
    run pado_base "$i" "$BASELINE" run --url "$URL" --http2 --max-streams "$STREAMS" --vus "$VUS" \
      --duration "${DUR}s" --workers 1 --insecure --quiet --out "$OUT/pado_base-$i.dir"
  fi
  run h2load "$i" h2load -c "$CONNS" -m "$STREAMS" -t 1 -D "$DUR" "$URL"
  [ -x "$K6" ] && run k6 "$i" "$K6" run --quiet --summary-export "$OUT/k6-$i.json" "$OUT/k6.js"
done

python3 - "$OUT" "$REPEATS" "$CONNS" "$STREAMS" <<'PY'
import json, re, sys, os, statistics
out, reps, conns, streams = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def cpu(base):
    t = open(base + ".time").read()
    u = float(re.search(r"User time \(seconds\): ([\d.]+)", t).group(1))
    s = float(re.search(r"System time \(seconds\): ([\d.]+)", t).group(1))
    return u + s
def reqs(tool, i):
    base = f"{out}/{tool}-{i}"
    if tool in ("pado", "pado_base"):
        sm = json.load(open(f"{base}.dir/summary.json"))
        return sm["requests"], sm.get("failed", 0)
    if tool == "h2load":
        t = open(base + ".out").read()
        m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", t)
        return int(m.group(4)), int(m.group(5)) + int(m.group(6))
    sm = json.load(open(f"{out}/k6-{i}.json"))
    n = sm["metrics"]["http_reqs"]["count"]
    return n, round(sm["metrics"]["http_req_failed"].get("value", 0) * n)
res = {}
for tool in ("pado", "pado_base", "h2load", "k6"):
    effs = []
    for i in range(1, reps + 1):
        try:
            n, failed = reqs(tool, i)
            c = cpu(f"{out}/{tool}-{i}")
            effs.append(n / c)
            print(f"{tool:7} run {i}: {n:>9} requests ({failed} failed), {c:6.2f} CPU-s, {n / c:10.0f} req/CPU-s")
        except Exception as e:
            print(f"{tool:7} run {i}: no result ({e})")
    if effs:
        res[tool] = statistics.median(effs)
print(f"\n{conns} connections x {streams} streams; median requests per generator CPU-second:")
for t, v in res.items():
    print(f"  {t:7} {v:10.0f}")
if "pado" in res:
    for t in ("pado_base", "h2load", "k6"):
        if t in res:
            print(f"  pado / {t}: {res['pado'] / res[t]:.2f}")
PY
