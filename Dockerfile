# syntax=docker/dockerfile:1
# Switchboard: a multi-stage build — the release binary is built in the
# official Rust image and copied into a small Debian runtime with a non-root
# user. DATA_DIR (database, spool, media, logs) is a volume.
#
#   docker build -t switchboard .
#   docker run --env-file .env -v switchboard-data:/data -p 9464:9464 switchboard

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
# Dependencies first: their layer is reused while only the sources change.
COPY Cargo.toml Cargo.lock rust-toolchain.toml build.rs ./
COPY adapters adapters
COPY crates crates
COPY src src
COPY migrations migrations
COPY benches benches
COPY examples examples
COPY tests tests
# The release profile already strips symbols (Cargo.toml, [profile.release]).
RUN cargo build --release --locked --bin switchboard

FROM debian:bookworm-slim AS runtime
# ca-certificates for the HTTPS endpoints; bubblewrap for EXEC_SANDBOX=bwrap
# (Landlock needs nothing); curl for the health check.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates bubblewrap curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin switchboard \
 && mkdir -p /data /workspace \
 && chown switchboard:switchboard /data /workspace
COPY --from=build /src/target/release/switchboard /usr/local/bin/switchboard
USER switchboard
WORKDIR /data
ENV DATA_DIR=/data \
    WORKSPACE_DIR=/workspace \
    HEALTH_LISTEN=0.0.0.0:9464 \
    LOG_FORMAT=json
VOLUME ["/data"]
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD curl -fsS http://127.0.0.1:9464/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/switchboard"]
CMD ["run"]
