# syntax=docker/dockerfile:1
#
# nanobot container images: one build stage, two runtime targets.
#   docker build --target full --build-arg VERSION=$(git describe --tags --always) --build-arg VCS_REF=$(git rev-parse HEAD) -t nanobot .
#   docker build --target slim --build-arg VERSION=$(git describe --tags --always) --build-arg VCS_REF=$(git rev-parse HEAD) -t nanobot:slim .
#
# With Podman add --format docker: its default, OCI, has no HEALTHCHECK and
# drops it.
#
# full (the default: the last stage) is Debian slim with the tools owners ask
# the assistant to use: git, curl, python3, jq, ripgrep, sqlite3, plus
# ca-certificates and tzdata.
# slim is distroless base (glibc, ca-certificates, tzdata) in its debug
# variant, whose busybox (/busybox: sh, ls, grep, wget, ...) is the only shell
# the `exec` tool gets. For no shell at all (exec then cannot run commands,
# and `nanobot status` says so):
#   --target slim --build-arg SLIM_IMAGE=gcr.io/distroless/base-debian12:nonroot
#
# Both run as uid/gid 18790 (the admin port's number), a user of nanobot's
# own: the kernel counts RLIMIT_NPROC per uid, so sharing the distroless
# "nonroot" user (65532) with another container lets its processes use up
# the commands' limit. Override with --build-arg NANOBOT_UID=... --build-arg
# NANOBOT_GID=... (and the user of the manifests). Both have a read-only
# root in the manifests, keep everything on the /data volume and share the
# health check. Both are Debian 12 (bookworm), as the build stage is: the
# cgo binary needs the same glibc.
#
# The base images are named by tag. Pin them by digest where the build must
# be reproducible: --build-arg FULL_IMAGE=debian:bookworm-slim@sha256:...
# (`docker buildx imagetools inspect debian:bookworm-slim` prints it), and
# likewise BUILD_IMAGE and SLIM_IMAGE.
ARG BUILD_IMAGE=golang:1.26-bookworm
ARG SLIM_IMAGE=gcr.io/distroless/base-debian12:debug-nonroot
ARG FULL_IMAGE=debian:bookworm-slim
ARG NANOBOT_UID=18790
ARG NANOBOT_GID=18790

FROM ${BUILD_IMAGE} AS build
WORKDIR /src
# -Os for SQLite's C code: 0.4 MB smaller and twice as fast to compile; the
# daemon's SQLite work is bound by fsync, not by the CPU.
ENV CGO_ENABLED=1
ENV CGO_CFLAGS=-Os
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# The commit `nanobot version` prints: .dockerignore keeps .git out of the
# context, so the Go toolchain records no VCS information here.
ARG VCS_REF=
# build-flags: keep identical to the `go build` line in .ci/run (deploy_test.go checks it).
RUN go build -trimpath -tags sqlite_fts5 -ldflags="-s -w -X main.commit=${VCS_REF} -X main.version=${VERSION}" -o /out/nanobot ./cmd/nanobot
# An empty data directory, copied below owned by the runtime user, so a fresh
# named volume on /data is writable (distroless has no shell to chown with).
RUN mkdir -p /out/data

FROM ${SLIM_IMAGE} AS slim
ARG NANOBOT_UID
ARG NANOBOT_GID
COPY --from=build /out/nanobot /usr/local/bin/nanobot
COPY --from=build --chown=${NANOBOT_UID}:${NANOBOT_GID} /out/data /data
USER ${NANOBOT_UID}:${NANOBOT_GID}
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

FROM ${FULL_IMAGE} AS full
ARG NANOBOT_UID
ARG NANOBOT_GID
# tools: the packages the assistant's exec tool can use; deploy_test.go checks the list.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git curl python3 jq ripgrep sqlite3 ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid ${NANOBOT_GID} nanobot \
 && useradd --uid ${NANOBOT_UID} --gid ${NANOBOT_GID} --no-create-home --home-dir /tmp --shell /usr/sbin/nologin nanobot
COPY --from=build /out/nanobot /usr/local/bin/nanobot
COPY --from=build --chown=${NANOBOT_UID}:${NANOBOT_GID} /out/data /data
USER ${NANOBOT_UID}:${NANOBOT_GID}
WORKDIR /data
# The root file system is read-only in the manifests: the daemon's $HOME
# is the /tmp tmpfs, and Python writes no bytecode next to the system's
# modules. Under Landlock the exec tool's commands get the sandbox's own
# HOME and TMPDIR instead (/data/sandbox/home and /data/sandbox/tmp); /tmp
# is theirs only without Landlock.
ENV HOME=/tmp PYTHONDONTWRITEBYTECODE=1
VOLUME ["/data"]
ENV NANOBOT_CONFIG=/data/config.yaml
EXPOSE 18790
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["nanobot", "health"]
ENTRYPOINT ["nanobot"]
CMD ["gateway"]
