#!/usr/bin/env bash
# Throughput of Chorus's autopilot against a plain shell pipeline on the same
# trivial tasks, in one run per task count (see scripts/bench-throughput).
# Prints wall time of both, the ratio Chorus/shell, git processes per task
# for both, Chorus's own CPU per task and the longest merge queue.
#
# Usage: scripts/bench-throughput.sh [TASKS] [AGENTS]   e.g. 20,60,300 8
#        QUALITY='sleep 0.3' scripts/bench-throughput.sh 60   with a required check
#        ROUNDS=3 …  alternate the sides three times, print medians
#        KEEP=1 …   keep the scratch repositories
#        LATENCY=1 ROUNDS=5 scripts/bench-throughput.sh 10   signal→main, one agent,
#                   against the floor (signal start + three git processes) per round
#                   (BENCH_TRACE=1: each task's events in ms after its stamp)
#        CHECKS=1 QUALITY='sleep 5' ROUNDS=3 scripts/bench-throughput.sh 1 8   8 agents finishing
#                   together, last signal→last landing against the batching ideal per round
#                   (BENCH_TRACE=1: each task's events in ms after the first signal)
#        DIRECT=1 …  agents run as the engine's children (agents.host false)
#        BENCH_TRACE=1 …  each round's phases per task (assigned → started → signal →
#                   enqueued → landed, median/max ms), where Chorus's wall goes
set -euo pipefail
# Built as the README installs Chorus: static, which starts about a
# millisecond sooner than with the C resolver linked in.
export CGO_ENABLED=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
(cd "$ROOT" && go build -o "$TMP/chorus" ./cmd/chorus && go build -o "$TMP/chorus-signal" ./cmd/chorus-signal &&
	go build -o "$TMP/chorus-agent-host" ./cmd/chorus-agent-host &&
	go build -o "$TMP/bench-throughput" ./scripts/bench-throughput)
nice "$TMP/bench-throughput" -chorus "$TMP/chorus" -tasks "${1:-20,60}" -agents "${2:-8}" -rounds "${ROUNDS:-1}" ${QUALITY:+-quality "$QUALITY"} ${KEEP:+-keep} ${LATENCY:+-latency} ${CHECKS:+-checks}
