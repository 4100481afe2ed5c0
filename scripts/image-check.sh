#!/usr/bin/env bash
# Runs pado's image (built by scripts/image.sh) with podman against the demo target on
# this machine's loopback and checks what the image must give a generator, printing
# one PASS or FAIL line each with its figures:
#
#   scripts/image-check.sh [--tag NAME]     # default pado:VERSION, as image.sh tags it
#
#  1. The binary in the image: what `file` says of it, and whether it needs a loader
#     (a static one needs none).
#  2. `localhost`: the request count in the result the container wrote equals the
#     demo target's own count (its /metrics); the result directory's Hangul name
#     round-trips.
#  3. A name only the container's /etc/hosts knows (`--add-host`): the same count.
#  4. TLS roots: an https URL to the target's self-signed certificate, whose CA is in
#     no trust store, fails every request as "unknown issuer" and none reaches the
#     target; with --insecure the same URL is counted (the TLS code itself works).
#  5. The user: files the container wrote are owned by 65532:65532 (the image has no
#     shell to run `id` in), and the image's configured user says the same.
#
# PADO (default: the static build image.sh makes, else target/debug/pado) serves the
# demo target on the host. podman runs with runc (crun refuses cgroup v1 in hybrid
# mode) and no default ulimits (podman's own exceed some hosts' hard limits).
set -uo pipefail
cd "$(dirname "$0")/.."
command -v podman >/dev/null || { echo "image-check: podman not found (Debian: apt-get install podman)" >&2; exit 1; }
command -v jq >/dev/null || { echo "image-check: jq not found (Debian: apt-get install jq)" >&2; exit 1; }

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
tag="pado:$version"
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag=${2:?--tag needs a name}; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "image-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
static=${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-musl/release/pado
if [ -z "${PADO:-}" ]; then
  if [ -x "$static" ]; then PADO=$static; else PADO=${CARGO_TARGET_DIR:-target}/debug/pado; fi
fi
[ -x "$PADO" ] || { echo "image-check: $PADO not found (set PADO to a pado binary)" >&2; exit 1; }
podman image exists "$tag" || { echo "image-check: podman has no image $tag (build it: scripts/image.sh)" >&2; exit 1; }

NONROOT=65532
HOST_NAME=pado-target.test
failures=0
work=$(mktemp -d "${TMPDIR:-/tmp}/pado-image-check.XXXXXX")
chmod 0777 "$work"
printf '[containers]\ndefault_ulimits = []\n' > "$work/containers.conf"
export CONTAINERS_CONF=$work/containers.conf
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

"$PADO" target serve --port 0 --tls --exit-after 10m > "$work/target.out" 2>&1 &
target_pid=$!
container=""
cleanup() {
  kill "$target_pid" 2>/dev/null
  [ -n "$container" ] && podman rm --force "$container" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 100); do grep -q 'listening on' "$work/target.out" && break; sleep 0.2; done
# (It prints its https:// address; plain http:// is served on the same port.)
port=$(grep -o '://127.0.0.1:[0-9]*' "$work/target.out" | head -1 | sed 's/.*://')
[ -n "$port" ] || { echo "image-check: the demo target did not start: $(cat "$work/target.out")" >&2; exit 1; }
target_count() {
  curl -fsS "http://127.0.0.1:$port/metrics" \
    | awk '/^http_server_requests_seconds_count\{.*uri="\/api\/posts\/\{id\}"/ {n += $NF} END {print n + 0}'
}
# `podman run` of the image on the host's network, $work mounted at /out; bounded.
run_image() {
  timeout 180 podman --runtime runc run --rm --network host --volume "$work:/out" "$@"
}

echo "image: $tag ($(podman image inspect --format '{{.Size}}' "$tag" | awk '{printf "%.1f MB", $1 / 1e6}'))"

# 1. The binary the image holds.
container=$(podman create "$tag")
podman cp "$container:/pado" "$work/pado.bin"
podman rm "$container" >/dev/null && container=""
kind=$(file -b "$work/pado.bin")
size=$(stat -c %s "$work/pado.bin")
if [[ "$kind" == *"statically linked"* || "$kind" == *"static-pie linked"* ]] \
  && ! readelf -l "$work/pado.bin" | grep -q 'Requesting program interpreter'; then
  pass "static binary: /pado is $((size / 1024 / 1024)) MiB, $kind"
else
  fail "static binary: /pado is $kind"
fi
rm -f "$work/pado.bin"

# 2 and 3. The merged count against the target's, by two names.
count_check() {
  local what=$1 host=$2 out=$3; shift 3
  local before after got requests failed
  before=$(target_count)
  run_image "$@" "$tag" run --url "http://$host:$port/api/posts/1" --vus 4 --duration 3s \
    --out "/out/$out" --quiet > "$work/$out.log" 2>&1
  local code=$?
  after=$(target_count)
  got=$((after - before))
  requests=$(jq -r .requests "$work/$out/summary.json" 2>/dev/null)
  failed=$(jq -r .failed "$work/$out/summary.json" 2>/dev/null)
  if [ $code = 0 ] && [ "$requests" = "$got" ] && [ "$got" -gt 0 ] && [ "$failed" = 0 ]; then
    pass "$what: $requests requests in the result = the target's count $got"
  else
    fail "$what: exit $code, result '$requests' requests ('$failed' failed), target counted $got"
    tail -5 "$work/$out.log"
  fi
}
count_check "localhost" localhost "결과-localhost"
count_check "/etc/hosts name $HOST_NAME" "$HOST_NAME" "결과-hosts" --add-host "$HOST_NAME:127.0.0.1"
if [ -f "$work/결과-localhost/summary.json" ]; then
  pass "Hangul: the container wrote $(basename "$work/결과-localhost")/ under that name"
else
  fail "Hangul: no result directory named 결과-localhost: $(ls "$work")"
fi

# 4. TLS: the image trusts only its own roots.
before=$(target_count)
run_image "$tag" run --url "https://localhost:$port/api/posts/1" --vus 2 --duration 2s \
  --out /out/tls --quiet > "$work/tls.log" 2>&1
got=$(( $(target_count) - before ))
requests=$(jq -r .requests "$work/tls/summary.json" 2>/dev/null)
failed=$(jq -r .failed "$work/tls/summary.json" 2>/dev/null)
reason=$(jq -r 'select(.category == "tls") | .reason' "$work/tls/failures.jsonl" 2>/dev/null | sort -u | head -1)
if [ -n "$requests" ] && [ "$requests" -gt 0 ] && [ "$failed" = "$requests" ] && [ "$got" = 0 ] \
  && [[ "$reason" == *"unknown issuer"* ]]; then
  pass "TLS roots: all $requests requests to the self-signed https target failed ($reason), the target counted $got"
else
  fail "TLS roots: result '$requests' requests, '$failed' failed, reason '$reason', target counted $got"
  tail -5 "$work/tls.log"
fi
before=$(target_count)
run_image "$tag" run --url "https://localhost:$port/api/posts/1" --vus 2 --duration 2s --insecure \
  --out /out/insecure --quiet > "$work/insecure.log" 2>&1
code=$?
got=$(( $(target_count) - before ))
requests=$(jq -r .requests "$work/insecure/summary.json" 2>/dev/null)
if [ $code = 0 ] && [ "$requests" = "$got" ] && [ "$got" -gt 0 ]; then
  pass "TLS with --insecure: $requests requests = the target's count $got"
else
  fail "TLS with --insecure: exit $code, result '$requests', target counted $got"; tail -5 "$work/insecure.log"
fi

# 5. The user.
owner=$(stat -c %u:%g "$work/결과-localhost/summary.json" 2>/dev/null)
user=$(podman image inspect --format '{{.Config.User}}' "$tag")
if [ "$owner" = "$NONROOT:$NONROOT" ] && [ "$user" = "$NONROOT:$NONROOT" ]; then
  pass "non-root: the result files are owned by $owner, the image's user is $user"
else
  fail "non-root: the result files are owned by '$owner', the image's user is '$user'"
fi

echo "$failures failed"
[ $failures = 0 ]
