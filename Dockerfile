# syntax=docker/dockerfile:1
# pado's image: one static binary on `scratch` with a non-root user, for `pado k8s run`
# (whose pods run `/pado k8s generator -- run ...`) or plain `docker run pado:VERSION run ...`.
#
#   docker build -t pado:0.1.0 .
#   docker tag pado:0.1.0 REGISTRY/pado:0.1.0 && docker push REGISTRY/pado:0.1.0
#
# Without a Docker daemon, scripts/image.sh builds the same image with buildah: it lays
# out the same root file system (scripts/image-rootfs.sh) from a binary built on the
# host and builds this file's final stage (from `FROM scratch` on) on it.
# See docs/kubernetes.md. The builder is the pinned Rust version (the workspace's
# rust-version) on Alpine, whose native target is musl: the release binary is static
# (crt-static). TLS roots are compiled in (webpki-roots), so no CA bundle is needed.

ARG RUST_VERSION=1.89

FROM rust:${RUST_VERSION}-alpine AS build
RUN apk add --no-cache musl-dev gcc binutils
WORKDIR /src
COPY . .
ENV CARGO_INCREMENTAL=0 \
    RUSTFLAGS="-C target-feature=+crt-static"
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p pado \
    && cp target/release/pado /pado \
    && /pado --version \
    && sh scripts/image-rootfs.sh /pado /rootfs

FROM scratch
COPY --from=build /rootfs/ /
COPY --from=build --chown=65532:65532 /rootfs/home/nonroot/ /home/nonroot/
# distroless' "nonroot" ids; the Job's securityContext asks for the same.
USER 65532:65532
WORKDIR /home/nonroot
ENTRYPOINT ["/pado"]
