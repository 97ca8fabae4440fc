#!/usr/bin/env bash
# CPU cost of 8 busy tiles through the engine's socket against the same 8
# tiles in one process, in the same run.
#
# In-process: `bench-tui chorus` (the pacers' PTYs, emulators and the UI in
# one process, as before the engine became a process of its own).
# Through the socket: `bench-tui serve` (the same PTYs and emulators, served
# by the remote package) and `bench-tui attach` (the real UI on a remote
# client, each tile a copy of the engine's emulator fed by batched output).
# Both UIs draw into script(1) PTYs of 200x60 drained into /dev/null. Each
# tile receives a recorded Claude Code stream in a loop at 10x its real
# rate (see bench-tui.sh). Pacers are separate processes, not counted.
#
# Usage: scripts/bench-remote.sh   (SECONDS_RUN, default 60; INPROC_REV, see below)
set -euo pipefail
# Built as the README installs Chorus: static, which starts about a
# millisecond sooner than with the C resolver linked in.
export CGO_ENABLED=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_RUN=${SECONDS_RUN:-60}
REAL_RATE=${REAL_RATE:-600}
STREAM=${STREAM:-$ROOT/agent/term/testdata/replay/claude-fullscreen/stream.raw}
RATE=$((REAL_RATE * 10))
TMP=$(mktemp -d)
[[ -n ${CPUPROFILE:-} ]] && export CPUPROFILE
BIN=$TMP/bench-tui
export BENCH_SOCK=$TMP/engine.sock
(cd "$ROOT" && go build -o "$BIN" ./scripts/bench-tui)
# INPROC_REV=<revision> builds the in-process side from that revision, to
# compare the socket with in-process as it was then, in the same run.
INBIN=$BIN
if [[ -n ${INPROC_REV:-} ]]; then
	INBIN=$TMP/bench-tui-inproc
	git -C "$ROOT" worktree add -q --detach "$TMP/inproc-src" "$INPROC_REV"
	(cd "$TMP/inproc-src" && go build -o "$INBIN" ./scripts/bench-tui)
	git -C "$ROOT" worktree remove --force "$TMP/inproc-src"
fi
cleanup() {
	pkill -f "^$TMP/bench-tui" 2>/dev/null || true
	kill $(jobs -p) 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
# cpu PID NAME: utime+stime in clock ticks; a process gone before the
# window was read is an error, never a figure.
cpu() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo "bench-remote: $2 (pid $1) ended before the window closed" >&2; exit 1; }
	echo "${s##*) }" | awk '{print $12+$13}'
}
LIVE=100000 # seconds: the load runs until this script ends it
HZ=$(getconf CLK_TCK)

script -qfc "stty cols 200 rows 60; exec $INBIN chorus $STREAM $RATE $LIVE" /dev/null >/dev/null 2>&1 &
"$BIN" serve "$STREAM" "$RATE" "$LIVE" >"$TMP/serve.log" 2>&1 &
script -qfc "stty cols 200 rows 60; exec env ${ATTACH_ENV:-} $BIN attach - - $LIVE" /dev/null >/dev/null 2>&1 &
sleep 2 # let all three start before the measured window opens
IN=$(pgrep -f "^$INBIN chorus" | head -1)
SRV=$(pgrep -f "^$BIN serve" | head -1)
CLI=$(pgrep -f "^$BIN attach" | head -1)
i0=$(cpu "$IN" in-process) s0=$(cpu "$SRV" engine) c0=$(cpu "$CLI" TUI)
sleep $((SECONDS_RUN - 4))
i1=$(cpu "$IN" in-process) s1=$(cpu "$SRV" engine) c1=$(cpu "$CLI" TUI)
inproc=$(echo "scale=3; ($i1-$i0)/$HZ" | bc)
srv=$(echo "scale=3; ($s1-$s0)/$HZ" | bc)
cli=$(echo "scale=3; ($c1-$c0)/$HZ" | bc)
total=$(echo "scale=3; $srv+$cli" | bc)
echo "8 streams at ${RATE} B/s each, $((SECONDS_RUN - 4)) s: in-process ${inproc} CPU s;" \
	"through the socket: engine ${srv} + TUI ${cli} = ${total} CPU s;" \
	"ratio socket/in-process $(echo "scale=2; $total/$inproc" | bc), TUI alone/in-process $(echo "scale=2; $cli/$inproc" | bc)"
