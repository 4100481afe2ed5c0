#!/usr/bin/env bash
# `pado k8s run` on a real single-node Kubernetes (scripts/k8s-cluster.sh) with pado's
# image built here (scripts/image.sh) and the demo target on this machine. Too slow to
# build for every CI run (the Kubernetes binaries take long the first time); run it
# before a release or a change to `pado k8s`, as root:
#
#   scripts/k8s-e2e.sh            # brings the cluster up if needed, leaves it up
#   scripts/k8s-e2e.sh --down     # and takes it down at the end
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
set -uo pipefail
command -v jq >/dev/null || { echo "k8s-e2e: jq not found (Debian: apt-get install jq)" >&2; exit 1; }
cd "$(dirname "$0")/.."

down_after=0
[ "${1:-}" = "--down" ] && down_after=1
PADO=${PADO:-${CARGO_TARGET_DIR:-target}/debug/pado}
NS=pado-e2e
TAG=pado:k8s-e2e
# What each generator pod requests: three must fit on one small node.
CPU=${CPU:-250m}
failures=0
work=$(mktemp -d "${TMPDIR:-/tmp}/pado-k8s-e2e.XXXXXX")

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

if [ ! -x "$PADO" ]; then
  echo "building pado (debug)..." >&2
  nice -n 19 cargo build -p pado --quiet || exit 1
fi
scripts/k8s-cluster.sh up > "$work/up.out" || { cat "$work/up.out"; exit 1; }
eval "$(scripts/k8s-cluster.sh env)"
STATE=$(dirname "$KUBECONFIG")
export CONTAINERD_ADDRESS=$STATE/containerd.sock
kc() { kubectl "$@"; }
echo "cluster: $(kc version -o json | sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | tail -1), node $(kc get nodes -o name)"

scripts/image.sh --binary "$PADO" --tag "$TAG" --load containerd >/dev/null || exit 1

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

echo "$failures failed"
[ $failures = 0 ]
