#!/usr/bin/env bash
# Builds pado's OCI image without a Docker daemon (buildah, `FROM scratch`), the same
# image the Dockerfile builds: the root file system scripts/image-rootfs.sh lays out,
# then the Dockerfile's final stage on it.
#
#   scripts/image.sh [--binary PATH] [--tag NAME] [--save FILE] [--load podman|containerd]
#
#   --binary PATH   put this pado binary in the image instead of building one (a
#                   dynamically linked one comes with its libraries; debug info is
#                   stripped from a copy). Default: a static release build for
#                   x86_64-unknown-linux-musl (needs that Rust target and Debian's
#                   musl-tools).
#   --tag NAME      the image's name (default pado:VERSION, VERSION from Cargo.toml)
#   --save FILE     also write the image to FILE as an OCI archive
#   --load podman   make sure podman sees it (buildah and podman share their storage)
#   --load containerd
#                   import it into containerd's k8s.io namespace as
#                   docker.io/library/NAME, where the kubelet finds it
#                   (CONTAINERD_ADDRESS picks the socket)
#
# Needs buildah (Debian: `apt-get install buildah`).
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
binary=""
tag="pado:$version"
save=""
load=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=${2:?--binary needs a path}; shift 2 ;;
    --tag) tag=${2:?--tag needs a name}; shift 2 ;;
    --save) save=${2:?--save needs a file}; shift 2 ;;
    --load) load=${2:?--load needs podman or containerd}; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$load" in ""|podman|containerd) ;; *) echo "image.sh: --load takes podman or containerd, not $load" >&2; exit 2 ;; esac
command -v buildah >/dev/null || { echo "image.sh: buildah not found (Debian: apt-get install buildah)" >&2; exit 1; }

if [ -z "$binary" ]; then
  target=x86_64-unknown-linux-musl
  rustup target list --installed 2>/dev/null | grep -qx "$target" \
    || { echo "image.sh: the Rust target $target is missing: rustup target add $target (or pass --binary)" >&2; exit 1; }
  command -v musl-gcc >/dev/null \
    || { echo "image.sh: musl-gcc not found (Debian: apt-get install musl-tools), needed for the C code of a static build (or pass --binary)" >&2; exit 1; }
  echo "image.sh: building a static release pado for $target (long)..." >&2
  RUSTFLAGS="-C target-feature=+crt-static" nice -n 19 cargo build --release --locked -p pado --target "$target"
  binary=${CARGO_TARGET_DIR:-target}/$target/release/pado
fi
[ -x "$binary" ] || { echo "image.sh: $binary is not an executable file" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/pado-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A debug build's symbols are most of its size and useless in the image.
strip -o "$work/pado" "$binary" 2>/dev/null || cp "$binary" "$work/pado"
sh scripts/image-rootfs.sh "$work/pado" "$work/rootfs"
rm "$work/pado"
# The Dockerfile's final stage, reading the root file system from the context.
sed -n '/^FROM scratch/,$p' Dockerfile | sed 's#--from=build \(--chown=[0-9:]* \)\{0,1\}/rootfs/#\1rootfs/#' > "$work/Containerfile"
grep -q '^COPY rootfs/ /$' "$work/Containerfile" \
  || { echo "image.sh: the Dockerfile's final stage is not the expected shape (COPY --from=build /rootfs/ /)" >&2; exit 1; }
buildah bud --quiet --layers=false -f "$work/Containerfile" -t "$tag" "$work" >/dev/null
echo "image.sh: built $tag from $binary" >&2

if [ -n "$save" ]; then
  rm -f "$save"
  buildah push --quiet "$tag" "oci-archive:$save:$tag"
  echo "image.sh: saved $tag to $save (OCI archive)" >&2
fi
case "$load" in
  podman)
    command -v podman >/dev/null || { echo "image.sh: podman not found" >&2; exit 1; }
    podman image exists "$tag" || { echo "image.sh: podman does not see $tag (is it using another storage?)" >&2; exit 1; }
    echo "image.sh: podman has $tag" >&2
    ;;
  containerd)
    command -v ctr >/dev/null || { echo "image.sh: ctr not found (Debian: apt-get install containerd)" >&2; exit 1; }
    # The name the kubelet asks containerd for: a bare name is on docker.io/library.
    case "$tag" in */*) full=$tag ;; *) full=docker.io/library/$tag ;; esac
    buildah push --quiet "$tag" "docker-archive:$work/image.tar:$full"
    ctr -n k8s.io images import "$work/image.tar" >/dev/null
    echo "image.sh: containerd (namespace k8s.io) has $full" >&2
    ;;
esac
echo "$tag"
