#!/usr/bin/env bash
# Whole-daemon figures: builds nanobot with the release flags, then runs
# bench/daemon_test.go (build tag "bench") against that binary, the in-repo
# Bot API fake and the model stub, and prints a markdown table.
#
# Usage: bench/gateway.sh        (from anywhere; takes about 2 to 3 minutes)
set -euo pipefail

cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

CGO_ENABLED=1 go build -trimpath -tags sqlite_fts5 -ldflags="-s -w -X main.version=bench" -o "$TMP/nanobot" ./cmd/nanobot
echo "$(go version), kernel $(uname -r), $(nproc) cores"
size=$(stat -c %s "$TMP/nanobot")
awk -v s="$size" 'BEGIN { printf "binary: %d bytes (%.2f MB)\n", s, s / 1e6 }'

# -count=1: the binary is outside what go test's cache sees, so never reuse a result.
set +e
NANOBOT_BIN="$TMP/nanobot" NANOBOT_BENCH_TABLE="$TMP/table.md" \
	go test -tags bench,sqlite_fts5 -count=1 -run TestDaemon -v -timeout 20m ./bench/
status=$?
set -e

echo
if [[ -s "$TMP/table.md" ]]; then
	cat "$TMP/table.md"
else
	echo "no table: the run failed before the end (see above)"
fi
exit "$status"
