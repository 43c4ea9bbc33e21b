# syntax=docker/dockerfile:1
#
# nanobot container image.
#   docker build --build-arg VERSION=$(git describe --tags --always) -t nanobot .
# Build stage: cgo is required by github.com/mattn/go-sqlite3.
# Runtime stage: distroless base (glibc, ca-certificates, tzdata), running
# as the distroless "nonroot" user, uid/gid 65532.
#
# The default is the debug variant because it carries busybox (sh, ls, grep,
# wget, ... in /busybox): the agent's `exec` tool needs a shell. For an
# image without any shell (exec then cannot run commands) build with
#   --build-arg RUNTIME_IMAGE=gcr.io/distroless/base-debian12:nonroot
ARG RUNTIME_IMAGE=gcr.io/distroless/base-debian12:debug-nonroot

FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=1
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# build-flags: keep identical to the `go build` line in .ci/run (deploy_test.go checks it).
RUN go build -trimpath -tags sqlite_fts5 -ldflags="-s -w -X main.version=${VERSION}" -o /out/nanobot ./cmd/nanobot
# An empty data directory, copied below owned by the runtime user, so a fresh
# named volume on /data is writable (distroless has no shell to chown with).
RUN mkdir -p /out/data

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/nanobot /usr/local/bin/nanobot
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
WORKDIR /data
# config.yaml, the SQLite database and the workspace all live on this volume.
# Inside a container, set gateway.listen to 0.0.0.0:18790 so the host can
# reach the admin endpoint (see deploy/config.docker.yaml); the health check
# runs inside the container and probes 127.0.0.1 either way.
VOLUME ["/data"]
ENV NANOBOT_CONFIG=/data/config.yaml
EXPOSE 18790
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["nanobot", "health"]
ENTRYPOINT ["nanobot"]
CMD ["gateway"]
