#!/usr/bin/env bash
# Cost of templating and extraction: pado's requests per generator CPU-second on a
# plain URL versus a scenario that renders a feed value, a random int and a header
# per request and extracts a value from every response with a regex. nginx (the
# anchors config) on CPU 0, pado on CPU 1, 64 VUs, DUR seconds, REPEATS runs each.
#   bash bench/templating.sh            (DUR=10 REPEATS=3)
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DUR="${DUR:-10}"
REPEATS="${REPEATS:-3}"
OUT="${OUT:-${TMPDIR:-/tmp}/pado-bench-templating}"
PORT=18080
NGX_PREFIX=/tmp/pado-bench-tpl-nginx
mkdir -p "$OUT" "$NGX_PREFIX"
command -v nginx >/dev/null || { echo "nginx missing: run bench/run.sh once (it installs it)"; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing: apt-get install time"; exit 1; }
(cd "$ROOT" && cargo build --release --quiet -p pado) || exit 1
PADO="$OUT/pado.bin"; cp "$ROOT/target/release/pado" "$PADO"
ANCHORS="${ANCHORS:-$ROOT/../shared/bench}"    # the shared bench folder beside the repository
sed -e "s#/tmp/bench-anchors-nginx#$NGX_PREFIX#g" "$ANCHORS/nginx-anchors.conf" >"$NGX_PREFIX/nginx.conf" || exit 1
taskset -c 0 nginx -p "$NGX_PREFIX/" -e "$NGX_PREFIX/error.log" -c "$NGX_PREFIX/nginx.conf" &
NGX=$!
trap 'kill $NGX 2>/dev/null' EXIT
sleep 1
cat >"$OUT/keywords.csv" <<'CSV'
term,class
검색 엔진,high
파도,rare
부하 테스트,mid
rust,mid
CSV
cat >"$OUT/plain.yaml" <<YAML
target: http://127.0.0.1:$PORT
scenarios:
  s: { executor: constant-vus, vus: 64, duration: ${DUR}s, flow: [ { name: plain, request: "GET /api/search?q=static" } ] }
YAML
cat >"$OUT/templated.yaml" <<YAML
target: http://127.0.0.1:$PORT
data:
  keywords: { file: keywords.csv }
scenarios:
  s:
    executor: constant-vus
    vus: 64
    duration: ${DUR}s
    flow:
      - name: templated
        request: { url: "/api/search?q={{ keywords.term }}&id={{ random_int(1, 100000) }}", headers: { X-User: "u{{ vu }}-{{ iter }}" } }
        extract: { digits: { regex: '([0-9]+)abc' } }
YAML
for kind in plain templated; do
  for i in $(seq 1 "$REPEATS"); do
    /usr/bin/time -f "%U %S" -o "$OUT/$kind-$i.time" timeout $((DUR + 30)) taskset -c 1 \
      "$PADO" run "$OUT/$kind.yaml" --quiet --out "$OUT/$kind-$i" >/dev/null 2>&1
  done
done
python3 - "$OUT" "$REPEATS" <<'PY'
import json, sys, statistics
out, n = sys.argv[1], int(sys.argv[2])
res = {}
for kind in ("plain", "templated"):
    eff = []
    for i in range(1, n + 1):
        u, s = map(float, open(f"{out}/{kind}-{i}.time").read().split()[-2:])
        sm = json.load(open(f"{out}/{kind}-{i}/summary.json"))
        eff.append(sm["requests"] / (u + s))
    res[kind] = statistics.median(eff)
    print(f"| {kind} | {res[kind]:,.0f} req per CPU-s | runs {', '.join(f'{e:,.0f}' for e in eff)} |")
print(f"| templated / plain | **{res['templated'] / res['plain']:.3f}** | cost {100 * (1 - res['templated'] / res['plain']):.1f}% |")
PY
