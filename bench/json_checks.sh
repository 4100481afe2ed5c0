#!/usr/bin/env bash
# Cost of JSON checks: requests per generator CPU-second against a 2 KiB JSON body,
# with no check, with checks of names-and-indexes paths (`json_exists: [$.total]`,
# `json: { $.items[3].id: 4 }`, walked on the body's bytes), and with a wildcard path
# (`$.items[*].id`, which parses the body into a tree, as every JSON check did
# before); k6 with the same check in JavaScript (`r.json('total')`) as the peer.
# nginx on CPU 0, the generator on CPU 1, 64 VUs, DUR seconds, REPEATS runs each,
# interleaved. BEFORE=path/to/an/older/pado also runs the walked scenario with that
# binary (`before`), for a change's own before and after.
#   bash bench/json_checks.sh            (DUR=10 REPEATS=3)
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DUR="${DUR:-10}"
REPEATS="${REPEATS:-3}"
OUT="${OUT:-${TMPDIR:-/tmp}/pado-bench-json}"
PORT=18081
NGX_PREFIX=/tmp/pado-bench-json-nginx
export CARGO_INCREMENTAL=0
rm -rf "$OUT"
mkdir -p "$OUT" "$NGX_PREFIX"
command -v nginx >/dev/null || { echo "nginx missing: run bench/run.sh once (it installs it)"; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing: apt-get install time"; exit 1; }
(cd "$ROOT" && cargo build --release --quiet -p pado) || exit 1
PADO="$OUT/pado.bin"; cp "$ROOT/target/release/pado" "$PADO"

# The body: 20 posts with Hangul titles and tags, about 2 KiB.
BODY=$(python3 -c '
import json
items = [{"id": i, "title": f"파도 글 {i}", "author": f"user{i}", "tags": ["부하", "rust", str(i)], "views": i * 37} for i in range(1, 21)]
print(json.dumps({"total": 20, "page": 0, "items": items}, ensure_ascii=False, separators=(",", ":")))')
cat >"$NGX_PREFIX/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $NGX_PREFIX/nginx.pid;
error_log $NGX_PREFIX/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    server_tokens off;
    client_body_temp_path $NGX_PREFIX/client_body;
    proxy_temp_path $NGX_PREFIX/proxy;
    fastcgi_temp_path $NGX_PREFIX/fastcgi;
    uwsgi_temp_path $NGX_PREFIX/uwsgi;
    scgi_temp_path $NGX_PREFIX/scgi;
    keepalive_requests 100000000;
    keepalive_timeout 75s;
    server {
        listen 127.0.0.1:$PORT backlog=4096;
        location / {
            default_type application/json;
            return 200 '$BODY';
        }
    }
}
NGX
taskset -c 0 nginx -p "$NGX_PREFIX/" -e "$NGX_PREFIX/error.log" -c "$NGX_PREFIX/nginx.conf" &
NGX=$!
trap 'kill $NGX 2>/dev/null' EXIT
sleep 1
curl -sf "http://127.0.0.1:$PORT/api/posts" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["total"] == 20' \
  || { echo "nginx does not serve the JSON body"; exit 1; }

scenario() { # name, check (YAML flow mapping entries or empty)
  cat >"$OUT/$1.yaml" <<YAML
target: http://127.0.0.1:$PORT
scenarios:
  s:
    executor: constant-vus
    vus: 64
    duration: ${DUR}s
    flow:
      - { name: $1, request: "GET /api/posts"$2 }
YAML
}
scenario none ""
scenario walked ', check: { json_exists: [$.total], json: { "$.items[3].id": 4 } }'
scenario tree ', check: { json_exists: ["$.items[*].id"] }'
cat >"$OUT/k6.js" <<JS
import http from 'k6/http';
import { check } from 'k6';
export default function () {
  const r = http.get('http://127.0.0.1:$PORT/api/posts');
  check(r, { total: (x) => x.json('total') !== undefined, id: (x) => x.json('items.3.id') === 4 });
}
export function handleSummary(data) {
  const out = { stdout: '' };
  if (__ENV.SUMMARY_JSON) out[__ENV.SUMMARY_JSON] = JSON.stringify(data);
  return out;
}
JS

KINDS="none walked tree"
if [ -n "${BEFORE:-}" ]; then
  cp "$BEFORE" "$OUT/before.bin" || exit 1
  cp "$OUT/walked.yaml" "$OUT/before.yaml"
  KINDS="$KINDS before"
fi
command -v k6 >/dev/null && KINDS="$KINDS k6"
for i in $(seq 1 "$REPEATS"); do
  for kind in $KINDS; do
    if [ "$kind" = k6 ]; then
      SUMMARY_JSON="$OUT/k6-$i.json" /usr/bin/time -f "%U %S" -o "$OUT/k6-$i.time" \
        timeout $((DUR + 60)) taskset -c 1 k6 run --quiet --vus 64 --duration "${DUR}s" "$OUT/k6.js" >/dev/null 2>&1
    else
      bin="$PADO"
      [ "$kind" = before ] && bin="$OUT/before.bin"
      /usr/bin/time -f "%U %S" -o "$OUT/$kind-$i.time" timeout $((DUR + 30)) taskset -c 1 \
        "$bin" run "$OUT/$kind.yaml" --quiet --no-history --out "$OUT/$kind-$i" >/dev/null 2>&1
    fi
  done
done

python3 - "$OUT" "$REPEATS" "$KINDS" <<'PY'
import json, sys, statistics
out, n, kinds = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
res = {}
for kind in kinds:
    eff = []
    for i in range(1, n + 1):
        try:
            u, s = map(float, open(f"{out}/{kind}-{i}.time").read().split()[-2:])
            if kind == "k6":
                m = json.load(open(f"{out}/k6-{i}.json"))["metrics"]
                reqs = m["http_reqs"]["values"]["count"]
                assert m["checks"]["values"]["fails"] == 0, "k6's checks failed"
            else:
                sm = json.load(open(f"{out}/{kind}-{i}/summary.json"))
                reqs = sm["requests"]
                assert sm["failed"] == 0, f"{kind}: {sm['failed']} failed"
        except (OSError, ValueError, KeyError, AssertionError) as e:
            print(f"{kind} run {i}: {e}")
            continue
        eff.append(reqs / (u + s))
    if eff:
        res[kind] = statistics.median(eff)
        print(f"| {kind} | {res[kind]:,.0f} req per CPU-s | runs {', '.join(f'{e:,.0f}' for e in eff)} |")
if "none" in res:
    for kind in ("walked", "tree"):
        if kind in res:
            print(f"| {kind} / none | **{res[kind] / res['none']:.3f}** | cost of the checks {100 * (1 - res[kind] / res['none']):.1f}% |")
if "walked" in res and "tree" in res:
    print(f"| walked / tree | **{res['walked'] / res['tree']:.2f}x** | |")
if "walked" in res and "before" in res:
    print(f"| walked / before | **{res['walked'] / res['before']:.2f}x** | the same scenario, this build against BEFORE |")
if "walked" in res and "k6" in res:
    print(f"| pado walked / k6 | **{res['walked'] / res['k6']:.1f}x** | the same checks |")
PY
