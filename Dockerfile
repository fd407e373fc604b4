# The Switchboard image: one definition for every way it is built.
#
#   docker build -t switchboard/switchboard:local .          # from source (BuildKit, the
#                                                            # default builder since Docker 23;
#                                                            # Docker 20.10: DOCKER_BUILDKIT=1)
#   docker build --target prebuilt -t … CONTEXT              # from a binary built on the host:
#                                                            # CONTEXT holds this file,
#                                                            # `switchboard` and deploy/docker/ca/
#                                                            # (scripts/switchboard-image.sh)
#
# Stages: `runtime-base` (Debian, libssl, CA certificates, user 10001, the data volume, the
# health check), `prebuilt` (runtime-base + a binary from the build context), `build` (rustup,
# the toolchain of rust-toolchain.toml, `cargo build --release --locked`), `runtime` (the
# default: runtime-base + the binary of `build`). `prebuilt` comes before `build` so that
# `--target prebuilt` never compiles, with BuildKit or with the classic builder (which builds
# every stage up to its target); building from source needs BuildKit, which skips `prebuilt`.
#
# BASE_IMAGE: any Debian trixie image, e.g. `debian:trixie-slim` from a registry; the default
# is the debootstrap-made base scripts/agent-server-image.sh imports (no registry needed). The
# runtime packages are trixie's: libssl3t64 (the one library the binary links beyond glibc:
# libpq and SQLite are linked in statically) and ca-certificates.
ARG BASE_IMAGE=switchboard/debian:trixie-minbase

# ------------------------------------------------------------------------------ runtime-base
FROM ${BASE_IMAGE} AS runtime-base

ARG RUNTIME_PACKAGES="libssl3t64 ca-certificates"

# Site CA certificates (deploy/docker/ca/*.crt, usually none) are trusted besides Debian's:
# for a database, an LLM gateway or a proxy with a certificate of the site's own CA.
COPY deploy/docker/ca/ /usr/local/share/ca-certificates/
RUN set -eux; \
    find /usr/local/share/ca-certificates -type f ! -name '*.crt' -delete; \
    export DEBIAN_FRONTEND=noninteractive; \
    apt-get update; \
    apt-get install -y --no-install-recommends ${RUNTIME_PACKAGES}; \
    update-ca-certificates; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/*.log /var/log/apt/*

# A non-root user (uid and gid 10001) owning the data directory /var/lib/switchboard: the
# SQLite database when no PostgreSQL is given, the installation key unless
# --secret-key-file names another file, and each replica's id.
RUN set -eux; \
    groupadd --system --gid 10001 switchboard; \
    useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/switchboard \
        --shell /usr/sbin/nologin switchboard; \
    install -d -o switchboard -g switchboard -m 0700 /var/lib/switchboard

LABEL org.opencontainers.image.title="Switchboard" \
      org.opencontainers.image.description="Control plane for software-agent conversations" \
      org.opencontainers.image.licenses="Apache-2.0"

# The process runtime's confinement (bwrap, pasta, nft) is not in the image: sandboxes run on
# Docker (mount the daemon's socket) or Kubernetes (--sandbox-runtime kubernetes).
ENV LANG=C.UTF-8 \
    HOME=/var/lib/switchboard \
    SWITCHBOARD_DATA_DIR=/var/lib/switchboard \
    SWITCHBOARD_BIND=0.0.0.0:8080 \
    SWITCHBOARD_SANDBOX_RUNTIME=docker
VOLUME ["/var/lib/switchboard"]
EXPOSE 8080
# Liveness: GET /health on the address of SWITCHBOARD_BIND (0.0.0.0 asked on 127.0.0.1) must
# answer 200. bash's /dev/tcp: the image has no HTTP client.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["bash", "-c", "a=${SWITCHBOARD_BIND:-0.0.0.0:8080}; h=${a%:*}; case $h in 0.0.0.0|'[::]'|'') h=127.0.0.1;; esac; exec 3<>/dev/tcp/${h//[\\[\\]]/}/${a##*:} && printf 'GET /health HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
USER 10001:10001
WORKDIR /var/lib/switchboard
ENTRYPOINT ["/usr/local/bin/switchboard"]
CMD ["serve"]

# ------------------------------------------------------------------------------ prebuilt
# A binary built on the host (for glibc 2.41 or older: one built on Debian 12 or 13 runs).
FROM runtime-base AS prebuilt
COPY switchboard /usr/local/bin/switchboard
RUN ["/usr/local/bin/switchboard", "--version"]

# ------------------------------------------------------------------------------ build
FROM ${BASE_IMAGE} AS build

COPY deploy/docker/ca/ /usr/local/share/ca-certificates/
RUN set -eux; \
    find /usr/local/share/ca-certificates -type f ! -name '*.crt' -delete; \
    export DEBIAN_FRONTEND=noninteractive; \
    apt-get update; \
    apt-get install -y --no-install-recommends ca-certificates curl gcc libc6-dev make pkg-config libssl-dev; \
    update-ca-certificates; \
    rm -rf /var/lib/apt/lists/*

# rustup from static.rust-lang.org, checked against its published SHA-256; then the toolchain
# rust-toolchain.toml pins (with its components).
ENV RUSTUP_HOME=/opt/rustup CARGO_HOME=/opt/cargo PATH=/opt/cargo/bin:$PATH
WORKDIR /src
COPY rust-toolchain.toml ./
RUN set -eux; \
    case "$(dpkg --print-architecture)" in \
        amd64) triple=x86_64-unknown-linux-gnu ;; \
        arm64) triple=aarch64-unknown-linux-gnu ;; \
        *) echo "no rustup-init for $(dpkg --print-architecture)" >&2; exit 1 ;; \
    esac; \
    url="https://static.rust-lang.org/rustup/dist/$triple/rustup-init"; \
    curl -fsSL --retry 3 -o /tmp/rustup-init "$url"; \
    echo "$(curl -fsSL --retry 3 "$url.sha256" | cut -c1-64)  /tmp/rustup-init" | sha256sum -c -; \
    chmod +x /tmp/rustup-init; \
    /tmp/rustup-init -y --no-modify-path --profile minimal --default-toolchain none; \
    rm /tmp/rustup-init; \
    rustup toolchain install; \
    cargo --version

COPY .cargo/ .cargo/
COPY Cargo.toml Cargo.lock ./
COPY migrations/ migrations/
COPY crates/ crates/
COPY bins/ bins/
RUN set -eux; \
    cargo build --release --locked -p switchboard --bin switchboard; \
    install -D -m 0755 target/release/switchboard /out/switchboard; \
    /out/switchboard --version

# ------------------------------------------------------------------------------ runtime
# The default target: runtime-base + the binary built above.
FROM runtime-base AS runtime
COPY --from=build /out/switchboard /usr/local/bin/switchboard
RUN ["/usr/local/bin/switchboard", "--version"]
