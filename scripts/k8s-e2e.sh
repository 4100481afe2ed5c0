#!/usr/bin/env bash
# `pado k8s run` on a real single-node Kubernetes (scripts/k8s-cluster.sh) with pado's
# image built here (scripts/image.sh) and the demo target on this machine. Too slow to
# build for every CI run (the Kubernetes binaries take long the first time); run it
# before a release or a change to `pado k8s`, as root:
#
#   scripts/k8s-e2e.sh            # brings the cluster up if needed, leaves it up
#   scripts/k8s-e2e.sh --down     # and takes it down at the end
#   scripts/k8s-e2e.sh --static   # the image scripts/image.sh builds by default (a
#                                 # static musl release build; long the first time)
#
# The image's binary: with --static, the static release build (and the host side
# runs it too, unless PADO is set); without, PADO (default: the debug build, which
# image.sh puts in the image with its libraries).
#
# Checks, each printed PASS or FAIL with its figures:
#  1. 3 generators: the merged request count equals the demo target's own count
#     (its /metrics), and every segment is there.
#  2. An abort_on_fail threshold failing on the merged seconds stops every pod: the
#     run ends long before its planned 10 minutes, exit code 99.
#  3. Ctrl-C: the Job, the ConfigMap and the Secret are deleted.
#  4. A pod that cannot start (an image the node does not have, never pulled) fails the run within
#     --pending-timeout, naming the pod's reason.
#  5. `pado k8s render` applies cleanly with `kubectl apply --dry-run=server`.
#  6. The dashboard of the whole test (`--dashboard`): the target's metrics that
#     segment 0 scrapes reach the page (its pod's /observed through the API server's
#     pod proxy), a pause from the page reaches every pod (the target's count stands
#     still), a stop from the page ends the test, and the merged count equals the
#     target's.
set -uo pipefail
command -v jq >/dev/null || { echo "k8s-e2e: jq not found (Debian: apt-get install jq)" >&2; exit 1; }
cd "$(dirname "$0")/.."

down_after=0
static=0
for arg in "$@"; do
  case "$arg" in
    --down) down_after=1 ;;
    --static) static=1 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "k8s-e2e: unknown argument $arg (see --help)" >&2; exit 2 ;;
  esac
done
STATIC_BIN=${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-musl/release/pado
if [ $static = 1 ]; then
  PADO=${PADO:-$STATIC_BIN}
else
  PADO=${PADO:-${CARGO_TARGET_DIR:-target}/debug/pado}
fi
NS=pado-e2e
TAG=pado:k8s-e2e
# What each generator pod requests: three must fit on one small node.
CPU=${CPU:-250m}
failures=0
work=$(mktemp -d "${TMPDIR:-/tmp}/pado-k8s-e2e.XXXXXX")

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

if [ $static = 0 ] && [ ! -x "$PADO" ]; then
  echo "building pado (debug)..." >&2
  nice -n 19 cargo build -p pado --quiet || exit 1
fi
scripts/k8s-cluster.sh up > "$work/up.out" || { cat "$work/up.out"; exit 1; }
eval "$(scripts/k8s-cluster.sh env)"
STATE=$(dirname "$KUBECONFIG")
export CONTAINERD_ADDRESS=$STATE/containerd.sock
kc() { kubectl "$@"; }
echo "cluster: $(kc version -o json | sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | tail -1), node $(kc get nodes -o name)"

if [ $static = 1 ]; then
  # image.sh's default build (cargo rebuilds only what changed since the last one).
  scripts/image.sh --tag "$TAG" --load containerd >/dev/null || exit 1
  echo "image: $TAG, the static build: $(file -b "$STATIC_BIN" | cut -d, -f1,2,4)"
else
  scripts/image.sh --binary "$PADO" --tag "$TAG" --load containerd >/dev/null || exit 1
  echo "image: $TAG with $PADO"
fi

# The demo target on the pods' bridge address (this machine; the pods' own loopback
# is theirs). Stops by itself.
HOST_IP=10.88.0.1
"$PADO" target serve --host "$HOST_IP" --allow-remote --port 0 --exit-after 20m > "$work/target.out" 2>&1 &
target_pid=$!
cleanup() {
  kill "$target_pid" 2>/dev/null
  kc delete namespace "$NS" --wait=false >/dev/null 2>&1
  rm -rf "$work"
  [ $down_after = 1 ] && scripts/k8s-cluster.sh down
}
trap cleanup EXIT
for _ in $(seq 50); do grep -q 'listening on' "$work/target.out" && break; sleep 0.2; done
TARGET=$(grep -o 'http://[0-9.]*:[0-9]*' "$work/target.out" | head -1)
[ -n "$TARGET" ] || { echo "the demo target did not start: $(cat "$work/target.out")"; exit 1; }
target_count() {
  curl -fsS "$TARGET/metrics" | awk '/^http_server_requests_seconds_count\{.*uri="\/api\/posts\/\{id\}"/ {n += $NF} END {print n + 0}'
}
kc create namespace "$NS" >/dev/null 2>&1 || true
kc -n "$NS" delete jobs,configmaps,secrets -l app.kubernetes.io/name=pado >/dev/null 2>&1

# 1. Three generators; the merged count against the target's.
cat > "$work/count.yaml" <<YAML
name: k8s-e2e-count
target: $TARGET
scenarios:
  s:
    executor: constant-vus
    vus: 2
    duration: 10s
    flow:
      - request: GET /api/posts/{{ vu }}
YAML
before=$(target_count)
"$PADO" k8s run "$work/count.yaml" -n 3 --namespace "$NS" --image "$TAG" --image-pull-policy Never --cpu $CPU \
  --start-at +20s --pending-timeout 2m --out "$work/count" --quiet > "$work/count.log" 2>&1
code=$?
got=$(( $(target_count) - before ))
merged=$(jq -r .requests "$work/count/merged/summary.json" 2>/dev/null)
segments=$(ls -d "$work/count"/segment-* 2>/dev/null | wc -l)
if [ $code = 0 ] && [ -n "$merged" ] && [ "$merged" = "$got" ] && [ "$got" -gt 0 ] && [ "$segments" = 3 ]; then
  pass "3 generators: merged requests $merged = the target's count $got, $segments segments"
else
  fail "3 generators: exit $code, merged '$merged', target counted $got, $segments segments"; tail -20 "$work/count.log"
fi

# 2. abort_on_fail on the merged seconds stops every pod.
cat > "$work/abort.yaml" <<YAML
name: k8s-e2e-abort
target: $TARGET
thresholds:
  http_req_failed:
    - { threshold: "rate < 0.1", abort_on_fail: true }
scenarios:
  s:
    executor: constant-vus
    vus: 2
    duration: 10m
    flow:
      - request: GET /no-such-page
YAML
t0=$(date +%s)
"$PADO" k8s run "$work/abort.yaml" -n 3 --namespace "$NS" --image "$TAG" --image-pull-policy Never --cpu $CPU \
  --start-at +20s --pending-timeout 2m --out "$work/abort" --quiet > "$work/abort.log" 2>&1
code=$?
took=$(( $(date +%s) - t0 ))
left=$(kc -n "$NS" get pods -l app.kubernetes.io/name=pado --no-headers 2>/dev/null | grep -c Running)
if [ $code = 99 ] && [ $took -lt 300 ] && [ "$left" = 0 ] && grep -q 'abort_on_fail' "$work/abort.log"; then
  pass "abort_on_fail: exit 99 after ${took}s of a planned 10m, no pod left running"
else
  fail "abort_on_fail: exit $code after ${took}s, $left pods running"; tail -20 "$work/abort.log"
fi

# 3. Ctrl-C deletes the Job, the ConfigMap and the Secret.
sed 's/duration: 10s/duration: 5m/' "$work/count.yaml" > "$work/long.yaml"
"$PADO" k8s run "$work/long.yaml" -n 3 --namespace "$NS" --image "$TAG" --image-pull-policy Never --cpu $CPU \
  --start-at +10s --pending-timeout 2m --out "$work/interrupted" --quiet > "$work/interrupt.log" 2>&1 &
run_pid=$!
for _ in $(seq 120); do
  [ "$(kc -n "$NS" get pods -l app.kubernetes.io/name=pado --no-headers 2>/dev/null | grep -c Running)" = 3 ] && break
  sleep 1
done
sleep 15
kill -INT $run_pid
for _ in $(seq 120); do kill -0 $run_pid 2>/dev/null || break; sleep 1; done
if kill -0 $run_pid 2>/dev/null; then kill -INT $run_pid; sleep 10; fi
wait $run_pid 2>/dev/null
objects=$(kc -n "$NS" get jobs,configmaps,secrets -l app.kubernetes.io/name=pado --no-headers 2>/dev/null | wc -l)
if [ "$objects" = 0 ]; then
  pass "Ctrl-C: the Job, ConfigMap and Secret are deleted"
else
  fail "Ctrl-C: $objects objects left: $(kc -n "$NS" get jobs,configmaps,secrets -l app.kubernetes.io/name=pado -o name)"
  tail -20 "$work/interrupt.log"
fi

# 4. An image nobody has: the run fails within --pending-timeout with the pod's reason.
t0=$(date +%s)
# (Never pulled: the kubelet says ErrImageNeverPull, and nothing leaves the machine.)
"$PADO" k8s run "$work/count.yaml" -n 3 --namespace "$NS" --image pado:no-such-tag --image-pull-policy Never --cpu $CPU \
  --start-at +10s --pending-timeout 30s --out "$work/badimage" --quiet > "$work/badimage.log" 2>&1
code=$?
took=$(( $(date +%s) - t0 ))
if [ $code != 0 ] && [ $took -lt 90 ] && grep -Eq 'ErrImageNeverPull|ErrImagePull|ImagePullBackOff' "$work/badimage.log"; then
  pass "wrong image: exit $code after ${took}s (--pending-timeout 30s): $(grep -Eo '[^:]*(ErrImageNeverPull|ErrImagePull|ImagePullBackOff)[^.]*' "$work/badimage.log" | head -1)"
else
  fail "wrong image: exit $code after ${took}s"; tail -20 "$work/badimage.log"
fi

# 5. The rendered manifests pass the API server's own validation.
if "$PADO" k8s render "$work/count.yaml" -n 3 --namespace "$NS" --image "$TAG" > "$work/render.yaml" 2> "$work/render.err" \
  && kc apply --dry-run=server -f "$work/render.yaml" > "$work/apply.out" 2>&1; then
  pass "pado k8s render | kubectl apply --dry-run=server: $(tr '\n' ';' < "$work/apply.out")"
else
  fail "render/apply: $(cat "$work/render.err" "$work/apply.out")"
fi

# 6. The dashboard of the whole test: the target's metrics from segment 0's pod, a
#    pause and a stop from the page reaching every pod through the pod proxy.
cat > "$work/dashboard.yaml" <<YAML
name: k8s-e2e-dashboard
target: $TARGET
observe:
  interval: 1s
  endpoints:
    - /metrics
scenarios:
  s:
    executor: constant-vus
    vus: 3
    duration: 5m
    flow:
      - request: GET /api/posts/{{ vu }}
YAML
# The control token from the environment: out of the process list.
export PADO_DASHBOARD_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
before=$(target_count)
t0=$(date +%s)
"$PADO" k8s run "$work/dashboard.yaml" -n 3 --namespace "$NS" --image "$TAG" --image-pull-policy Never --cpu $CPU \
  --start-at +10s --pending-timeout 2m --out "$work/dashboard" --quiet --dashboard --dashboard-linger 0 \
  > "$work/dashboard.log" 2>&1 &
dash_pid=$!
page=""
for _ in $(seq 60); do
  page=$(grep -o 'dashboard: http://[0-9.]*:[0-9]*' "$work/dashboard.log" | head -1 | sed 's/^dashboard: //')
  [ -n "$page" ] && break
  sleep 1
done
api() { curl -sS --max-time 20 "$@"; }
control() {
  api -o "$work/control.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $PADO_DASHBOARD_TOKEN" \
    -H 'Content-Type: application/json' --data "$1" "$page/api/control"
}
# Every generator reporting requests on the page.
reporting=0
for _ in $(seq 150); do
  [ -n "$page" ] || break
  reporting=$(api "$page/api/state" 2>/dev/null | jq '[.generators[]? | select(.reporting and .requests > 0)] | length' 2>/dev/null)
  [ "${reporting:-0}" = 3 ] && break
  sleep 1
done
paused_code=""
for _ in $(seq 30); do
  [ -n "$page" ] || break
  paused_code=$(control '{"action":"pause"}')
  [ "$paused_code" = 200 ] && break
  sleep 1
done
paused_answer=$(jq -r '.error // "ok"' "$work/control.out" 2>/dev/null)
# In-flight requests end; then the target must see none for 6 s.
sleep 3
c1=$(target_count)
sleep 6
c2=$(target_count)
observed=0
[ -n "$page" ] && observed=$(api "$page/api/seconds?from=0" | jq '[.seconds[] | (.observed // {}) | keys[]] | unique | length' 2>/dev/null)
stop_code=""
[ -n "$page" ] && stop_code=$(control '{"action":"stop"}')
for _ in $(seq 120); do kill -0 $dash_pid 2>/dev/null || break; sleep 1; done
if kill -0 $dash_pid 2>/dev/null; then kill -INT $dash_pid; sleep 10; fi
wait $dash_pid
code=$?
took=$(( $(date +%s) - t0 ))
got=$(( $(target_count) - before ))
merged=$(jq -r .requests "$work/dashboard/merged/summary.json" 2>/dev/null)
controls=$(jq -r 'select(.kind == "control") | .name' "$work/dashboard/merged/events.jsonl" 2>/dev/null | tr '\n' ',')
ncontrols=$(jq -s '[.[] | select(.kind == "control")] | length' "$work/dashboard/merged/events.jsonl" 2>/dev/null)
objects=$(kc -n "$NS" get jobs,configmaps,secrets -l app.kubernetes.io/name=pado --no-headers 2>/dev/null | wc -l)
if [ -n "$page" ] && [ "$reporting" = 3 ] && [ "$paused_code" = 200 ] && [ "$c1" = "$c2" ] && [ "${observed:-0}" -gt 0 ] \
  && [ "$stop_code" = 200 ] && [ $code = 0 ] && [ $took -lt 240 ] && [ "$merged" = "$got" ] && [ "$ncontrols" = 2 ] \
  && [ "$objects" = 0 ]; then
  pass "dashboard: 3 generators reporting, the target's metrics on the page ($observed series, from segment 0's /observed), paused by every pod (the target counted $c1 then $c2 six seconds later), stopped from the page: exit 0 after ${took}s of a planned 5m, merged requests $merged = the target's count $got, control events: ${controls%,}"
else
  fail "dashboard: page '$page', $reporting generators reporting, pause $paused_code ($paused_answer), target $c1 -> $c2 while paused, $observed observed series, stop $stop_code, exit $code after ${took}s, merged '$merged' vs the target's $got, $ncontrols control events, $objects objects left"
  tail -20 "$work/dashboard.log"
fi

echo "$failures failed"
[ $failures = 0 ]
