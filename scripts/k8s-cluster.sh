#!/usr/bin/env bash
# A single-node Kubernetes on this machine, from parts it can reach, for the real-cluster
# test of `pado k8s run` (scripts/k8s-e2e.sh) and for trying pado on Kubernetes by hand.
#
#   scripts/k8s-cluster.sh build   # only build (or find cached) the Kubernetes binaries
#   scripts/k8s-cluster.sh up      # build if needed, then start the cluster
#   scripts/k8s-cluster.sh down    # stop everything `up` started and remove its state
#   scripts/k8s-cluster.sh env     # print `export KUBECONFIG=...` for this cluster
#
# What it is made of:
# - kube-apiserver, kube-controller-manager, kube-scheduler and kubelet built from the
#   `k8s.io/kubernetes` Go module at $K8S_VERSION. Its staging modules (k8s.io/api,
#   k8s.io/client-go, ...) are published as separate modules, and the main module's own
#   go.mod points them at ./staging, which Go ignores in a dependency: the build module
#   made here has one `replace` line per staging module, at the matching v0.X.Y.
# - etcd: Debian's `etcd-server`.
# - containerd and runc: Debian's. The pause image is built here (a static C program
#   that sleeps until a signal) and imported into containerd.
# - Pods are on a bridge, pado0 (10.88.0.0/16, Debian's CNI plugins), whose host end
#   10.88.0.1 is this machine: a server a pod should reach listens there (loopback is
#   the pod's own). Not the host's network: pado's generator pods all listen on one
#   port, so on a single node host-network pods would conflict (only one scheduled).
# - Single node, no kube-proxy, no cluster DNS: pado's flow needs neither (it reaches
#   pods through the API server's pod proxy).
#
# The built binaries are cached in $PADO_K8S_CACHE (default ~/.cache/pado-k8s), with
# Go's build cache: a second `up` skips the (long) Go build, and a build that was
# interrupted goes on where it stopped. The running cluster's state lives in
# $PADO_K8S_STATE (default /tmp/pado-k8s); `down` removes it.
set -euo pipefail
cd "$(dirname "$0")/.."

K8S_VERSION=${K8S_VERSION:-v1.34.4}
CACHE=${PADO_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pado-k8s}
BIN=$CACHE/$K8S_VERSION/bin
STATE=${PADO_K8S_STATE:-/tmp/pado-k8s}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler kubelet)

log() { echo "k8s-cluster: $*" >&2; }
die() { log "error: $*"; exit 1; }

# Builds the four Kubernetes binaries into $BIN unless they are there already.
build() {
  local missing=()
  for c in "${COMPONENTS[@]}"; do [ -x "$BIN/$c" ] || missing+=("$c"); done
  if [ ${#missing[@]} = 0 ]; then log "binaries cached in $BIN"; return; fi
  [ -x "$GO" ] || die "Go not found (set GO=/path/to/go)"
  local src=$CACHE/$K8S_VERSION/src
  mkdir -p "$src" "$BIN"
  local staging=v0.${K8S_VERSION#v1.}
  if [ ! -f "$src/go.sum" ]; then
    log "resolving k8s.io/kubernetes@$K8S_VERSION and its staging modules ($staging)..."
    local gomod
    gomod=$(cd "$src" && GOFLAGS=-mod=mod "$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" \
      | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
    [ -f "$gomod" ] || die "could not download k8s.io/kubernetes@$K8S_VERSION"
    {
      echo "module pado.local/k8s-build"
      echo
      echo "go $(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod")"
      echo
      echo "require k8s.io/kubernetes $K8S_VERSION"
      echo
      # The main module's `k8s.io/x => ./staging/src/k8s.io/x` lines, at the published version.
      grep -o 'k8s.io/[a-z0-9-]* => ./staging/src/k8s.io/[a-z0-9-]*' "$gomod" \
        | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
    } > "$src/go.mod"
    # Every command at the pinned version (without @version, `go get` takes the newest).
    local pkgs=()
    for c in "${COMPONENTS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c@$K8S_VERSION"); done
    (cd "$src" && "$GO" get "${pkgs[@]}" >/dev/null) \
      || die "go get of the Kubernetes commands failed (see above)"
  fi
  log "building ${missing[*]} ($K8S_VERSION; long: nice 19, one core)..."
  for c in "${missing[@]}"; do
    # Go's build cache beside the binaries: an interrupted build resumes where it was.
    (cd "$src" && GOCACHE=$CACHE/go-build CGO_ENABLED=0 GOMAXPROCS=${GOMAXPROCS:-1} nice -n 19 "$GO" build -p "${GO_BUILD_P:-1}" \
      -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION" \
      -o "$BIN/$c.tmp" "k8s.io/kubernetes/cmd/$c") || die "go build of $c failed"
    mv "$BIN/$c.tmp" "$BIN/$c"
    log "built $BIN/$c"
  done
}


PAUSE_IMAGE=registry.k8s.io/pause:3.10
POD_CIDR=10.88.0.0/16
# The host's end of the pods' bridge: where a pod reaches a server on this machine.
HOST_IP=10.88.0.1
SOCK=$STATE/containerd.sock
KUBECONFIG_FILE=$STATE/kubeconfig

# Debian's packages the cluster runs on; their services are not started (this script
# starts what it needs with its own state).
packages() {
  local need=()
  command -v containerd >/dev/null || need+=(containerd)
  command -v runc >/dev/null || need+=(runc)
  [ -x /usr/bin/etcd ] || need+=(etcd-server)
  [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
  command -v openssl >/dev/null || need+=(openssl)
  command -v musl-gcc >/dev/null || need+=(musl-tools)
  command -v buildah >/dev/null || need+=(buildah)
  command -v kubectl >/dev/null || need+=(kubernetes-client)
  [ ${#need[@]} = 0 ] && return
  [ "$(id -u)" = 0 ] || die "missing ${need[*]}; install them (Debian) or run as root"
  log "installing ${need[*]}..."
  local made=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && made=1
  fi
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  [ $made = 1 ] && rm -f /usr/sbin/policy-rc.d
  return 0
}

# A key and a certificate signed by the cluster's CA: certify NAME CN O [SANS].
certify() {
  local name=$1 cn=$2 o=$3 sans=${4:-}
  local pki=$STATE/pki
  openssl genrsa -out "$pki/$name.key" 2048 2>/dev/null
  local ext=$pki/$name.ext
  { echo "basicConstraints=CA:FALSE"; echo "keyUsage=digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=serverAuth,clientAuth"
    [ -n "$sans" ] && echo "subjectAltName=$sans"; } > "$ext"
  openssl req -new -key "$pki/$name.key" -subj "/CN=$cn${o:+/O=$o}" -out "$pki/$name.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 30 -extfile "$ext" -out "$pki/$name.crt" 2>/dev/null
}

# Starts a process in the background with its log in $STATE/logs and its pid kept.
start() {
  local name=$1; shift
  setsid "$@" > "$STATE/logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$STATE/$name.pid"
}

# Waits (bounded) until `$2...` succeeds; names $1 and its log when it does not.
wait_for() {
  local what=$1 limit=$2; shift 2
  local i
  for ((i = 0; i < limit; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  die "$what did not come up within ${limit}s; see $STATE/logs/"
}

kc() { kubectl --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# The pause image (each pod's sandbox): a static program that sleeps until a signal,
# built here and imported into containerd under the name the kubelet asks for.
pause_image() {
  if ctr -a "$SOCK" -n k8s.io images ls -q | grep -qx "$PAUSE_IMAGE"; then return; fi
  local work=$STATE/pause
  mkdir -p "$work/rootfs"
  cat > "$work/pause.c" <<'C'
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>
static void quit(int s) { (void)s; _exit(0); }
static void reap(int s) { (void)s; while (waitpid(-1, 0, WNOHANG) > 0) {} }
int main(void) {
  signal(SIGINT, quit); signal(SIGTERM, quit); signal(SIGCHLD, reap);
  for (;;) pause();
}
C
  musl-gcc -static -Os -o "$work/rootfs/pause" "$work/pause.c"
  printf 'FROM scratch\nCOPY rootfs/ /\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' > "$work/Containerfile"
  buildah bud --quiet -f "$work/Containerfile" -t "$PAUSE_IMAGE" "$work" >/dev/null
  buildah push --quiet "$PAUSE_IMAGE" "docker-archive:$work/pause.tar:$PAUSE_IMAGE"
  ctr -a "$SOCK" -n k8s.io images import "$work/pause.tar" >/dev/null
  rm -f "$work/pause.tar"
}

up() {
  [ "$(id -u)" = 0 ] || die "the kubelet and containerd need root"
  if [ -f "$STATE/kubelet.pid" ] && kill -0 "$(cat "$STATE/kubelet.pid")" 2>/dev/null; then
    log "already up"; env_line; return
  fi
  packages
  build
  mkdir -p "$STATE"/{pki,logs,etcd,cni,kubelet,containerd}
  local pki=$STATE/pki
  # Certificates: the CA, the API server's, one client identity (system:masters) for
  # every component and the user, and the service accounts' signing key.
  if [ ! -f "$pki/admin.crt" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" \
      -days 30 -subj "/CN=pado-k8s-ca" 2>/dev/null
    certify apiserver kube-apiserver "" \
      "IP:127.0.0.1,IP:10.0.0.1,IP:$HOST_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
    certify admin admin system:masters
    openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
    openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  fi
  cat > "$KUBECONFIG_FILE" <<KC
apiVersion: v1
kind: Config
clusters:
- name: pado
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: "$pki/ca.crt"}
users:
- name: admin
  user: {client-certificate: "$pki/admin.crt", client-key: "$pki/admin.key"}
contexts:
- name: pado
  context: {cluster: pado, user: admin, namespace: default}
current-context: pado
KC

  # containerd with its own root, state and socket; runc; the pods' bridge network.
  cat > "$STATE/containerd.toml" <<TOML
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
[grpc]
  address = "$SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # The kubelet asks for oom_score_adj -998 for sandboxes; lowering a score needs
  # CAP_SYS_RESOURCE, which a machine inside a container or a VM sandbox may not give
  # even to root (runc then fails with "can't get final child's PID from pipe").
  # Restricted, containerd never asks for less than its own score.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
TOML
  cat > "$STATE/cni/10-pado.conflist" <<CNI
{"cniVersion": "0.4.0", "name": "pado", "plugins": [
  {"type": "bridge", "bridge": "pado0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$HOST_IP"}]],
            "dataDir": "$STATE/cni/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CNI
  # The bridge now, with the host's address on it: the kubelet's node IP must exist.
  if ! ip link show pado0 >/dev/null 2>&1; then
    ip link add pado0 type bridge
    ip addr add "$HOST_IP/16" dev pado0
  fi
  ip link set pado0 up
  start containerd containerd --config "$STATE/containerd.toml"
  wait_for containerd 30 ctr -a "$SOCK" version
  pause_image

  start etcd etcd --name pado --data-dir "$STATE/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster pado=http://127.0.0.1:2380
  wait_for etcd 60 curl -fsS http://127.0.0.1:2379/health

  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=127.0.0.1 --advertise-address="$HOST_IP" --secure-port=6443 \
    --service-cluster-ip-range=10.0.0.0/24 --authorization-mode=RBAC \
    --client-ca-file="$pki/ca.crt" --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --kubelet-client-certificate="$pki/admin.crt" --kubelet-client-key="$pki/admin.key" \
    --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$pki/sa.pub" \
    --service-account-signing-key-file="$pki/sa.key" --enable-priority-and-fairness=false \
    --kubelet-preferred-address-types=InternalIP
  wait_for kube-apiserver 180 kc get --raw /readyz

  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$KUBECONFIG_FILE" \
    --leader-elect=false --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
    --use-service-account-credentials=false
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$KUBECONFIG_FILE" --leader-elect=false

  # The kubelet: cgroupfs (no systemd here), no per-QoS cgroups (the host's cgroups
  # are v1 in hybrid mode), eviction thresholds that a nearly full disk passes.
  cat > "$STATE/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$pki/ca.crt"}
authorization: {mode: AlwaysAllow}
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
resolvConf: /etc/resolv.conf
YAML
  start kubelet "$BIN/kubelet" --config="$STATE/kubelet.yaml" --kubeconfig="$KUBECONFIG_FILE" \
    --container-runtime-endpoint="unix://$SOCK" --root-dir="$STATE/kubelet" \
    --hostname-override=pado-node --node-ip="$HOST_IP"
  wait_for "the node" 180 kc wait --for=condition=Ready node/pado-node --timeout=5s
  log "up: Kubernetes $K8S_VERSION, one node; pods reach this machine at $HOST_IP"
  env_line
}

env_line() { echo "export KUBECONFIG=$KUBECONFIG_FILE"; }

down() {
  # The pods' containers first (containerd's shims outlive it), then the components.
  if [ -S "$SOCK" ]; then
    for t in $(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr -a "$SOCK" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
    done
  fi
  local c pid
  for c in kubelet kube-scheduler kube-controller-manager kube-apiserver etcd containerd; do
    [ -f "$STATE/$c.pid" ] || continue
    pid=$(cat "$STATE/$c.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$STATE/$c.pid"
  done
  # What the kubelet and containerd mounted under the state directory.
  if [ -d "$STATE" ]; then
    { grep -o " $STATE[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
    rm -rf "$STATE"
  fi
  ip link delete pado0 2>/dev/null || true
  log "down"
}

case "${1:-}" in
  build) build ;;
  up) up ;;
  down) down ;;
  env) env_line ;;
  *) echo "usage: $0 build|up|down|env" >&2; exit 2 ;;
esac
