# syntax=docker/dockerfile:1
# pado's image: one static binary and nothing else, for `pado k8s run` (whose pods
# run `/pado k8s generator -- run ...`) or plain `docker run pado:VERSION run ...`.
#
#   docker build -t pado:0.1.0 .
#   docker tag pado:0.1.0 REGISTRY/pado:0.1.0 && docker push REGISTRY/pado:0.1.0
#
# See docs/kubernetes.md. The builder is the pinned Rust version (the workspace's
# rust-version) on Alpine, whose native target is musl: the release binary is static
# (crt-static), so the final stage is `scratch` with a non-root user. TLS roots are
# compiled in (webpki-roots), so no CA bundle is needed.

ARG RUST_VERSION=1.89

FROM rust:${RUST_VERSION}-alpine AS build
RUN apk add --no-cache musl-dev gcc
WORKDIR /src
COPY . .
ENV CARGO_INCREMENTAL=0 \
    RUSTFLAGS="-C target-feature=+crt-static"
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p pado \
    && cp target/release/pado /pado \
    && /pado --version

FROM scratch
COPY --from=build /pado /pado
# distroless' "nonroot" ids; the Job's securityContext asks for the same.
USER 65532:65532
ENTRYPOINT ["/pado"]
