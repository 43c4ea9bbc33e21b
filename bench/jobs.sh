#!/usr/bin/env bash
# Scheduled-jobs figures: builds nanobot with the release flags, then runs
# bench/jobs_test.go (build tag "bench") against that binary: start-up, idle
# RSS and CPU with 10,000 jobs against none, and due-to-sendMessage latency.
#
# Usage: bench/jobs.sh        (from anywhere; takes about 2 minutes)
set -euo pipefail

cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

CGO_ENABLED=1 go build -trimpath -tags sqlite_fts5 -ldflags="-s -w -X main.version=bench" -o "$TMP/nanobot" ./cmd/nanobot
echo "$(go version), kernel $(uname -r), $(nproc) cores"

set +e
NANOBOT_BIN="$TMP/nanobot" NANOBOT_BENCH_TABLE="$TMP/table.md" \
	go test -tags bench,sqlite_fts5 -count=1 -run TestJobs -v -timeout 10m ./bench/
status=$?
set -e

echo
if [[ -s "$TMP/table.md" ]]; then
	cat "$TMP/table.md"
else
	echo "no table: the run failed before the end (see above)"
fi
exit "$status"
