#!/bin/sh
# Lays out the root file system of pado's image in DIR from a pado BINARY: the one
# layout both scripts/image.sh (buildah, no Docker daemon) and the Dockerfile's build
# stage use, so both build the same image. POSIX sh: it also runs on Alpine.
#
#   scripts/image-rootfs.sh BINARY DIR
#
# What the image holds, and why:
# - /pado: the binary. A static one (musl, the default of scripts/image.sh and the
#   Dockerfile) is copied alone; a dynamically linked one (a glibc build, as the tests
#   use) comes with the libraries its ELF header asks for, at the same paths.
# - /etc/passwd and /etc/group: user and group 65532 ("nonroot", distroless' ids, as
#   the Kubernetes Job's securityContext asks), so the process has a name and a home.
# - /etc/nsswitch.conf: host names are looked up in /etc/hosts, then DNS (glibc reads
#   it; musl reads /etc/hosts and /etc/resolv.conf itself). The container runtime
#   provides /etc/hosts and /etc/resolv.conf.
# - /tmp (sticky, world-writable) and /home/nonroot (the working directory, where a
#   plain `pado run` writes its result directory; made the user's own by the COPY).
# - No CA bundle: pado's TLS client has the Mozilla roots compiled in (webpki-roots)
#   and adds the system's (SSL_CERT_FILE / SSL_CERT_DIR, for a private CA) when set.
set -eu
if [ $# -ne 2 ]; then
  echo "usage: $0 BINARY DIR" >&2
  exit 2
fi
bin=$1
dir=$2
[ -f "$bin" ] || { echo "image-rootfs: $bin: no such file" >&2; exit 1; }
mkdir -p "$dir/etc" "$dir/tmp" "$dir/home/nonroot"
chmod 1777 "$dir/tmp"
chmod 0755 "$dir/home/nonroot"
cp "$bin" "$dir/pado"
chmod 0755 "$dir/pado"
cat > "$dir/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
cat > "$dir/etc/group" <<'GROUP'
root:x:0:
nonroot:x:65532:
GROUP
echo "hosts: files dns" > "$dir/etc/nsswitch.conf"
# A dynamically linked binary: its interpreter and the libraries ldd resolves.
if readelf -l "$bin" 2>/dev/null | grep -q 'Requesting program interpreter'; then
  libs=$(ldd "$bin" | awk '/=> \//{print $3} /^[[:space:]]*\//{print $1}')
  for lib in $libs; do
    mkdir -p "$dir$(dirname "$lib")"
    cp -L "$lib" "$dir$lib"
  done
  # glibc before 2.34 keeps the files and dns lookups in modules of their own.
  for lib in $libs; do
    case "$lib" in
      */libc.so.*)
        for nss in "$(dirname "$lib")"/libnss_files.so.2 "$(dirname "$lib")"/libnss_dns.so.2; do
          if [ -e "$nss" ]; then cp -L "$nss" "$dir$nss"; fi
        done
        ;;
    esac
  done
fi
