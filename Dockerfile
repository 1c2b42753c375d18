# The proxy as a container: `docker build -t compactor .` then
#   docker run -p 8787:8787 -v compactor-data:/data compactor --upstream https://api.openai.com
#
# Multi-stage: the CLI is built in the Rust image without the in-process local model
# (`--summarizer local` is for a workstation, and doubles the build), with PostgreSQL; the
# final image is distroless (glibc, CA certificates, no shell) and runs as a non-root user.
# The proxy listens on 0.0.0.0:8787 inside the container; sessions go to /data (a volume).
# `--ui` there needs `--ui-token-env VAR` (the proxy refuses to start without it off
# loopback). Health: GET /healthz answers "ok" (for an orchestrator's HTTP probe; the image
# has no shell or curl for a Docker HEALTHCHECK command).
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p compactor-cli --no-default-features --features postgres \
    && strip target/release/compactor

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/compactor /usr/local/bin/compactor
VOLUME ["/data"]
WORKDIR /data
EXPOSE 8787
ENTRYPOINT ["/usr/local/bin/compactor", "proxy", "--listen", "0.0.0.0:8787", "--store", "sqlite:/data/compactor-sessions.db"]
CMD ["--upstream", "https://api.openai.com"]
