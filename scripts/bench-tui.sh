#!/usr/bin/env bash
# CPU cost of the Chorus grid against tmux showing the same streams.
#
# Eight tiles each receive a recorded Claude Code stream (agent/term/testdata/
# replay/claude-fullscreen/stream.raw) in a loop at 10x its real rate, for
# SECONDS (default 60). The same run starts a tmux server with the same 8
# streams in 8 tiled panes and an attached client. Both "terminals" are
# script(1) PTYs of 200x60 draining into /dev/null, so each side pays for
# parsing the streams and drawing its screen, nothing else. Pacers are
# separate processes and are not counted.
#
# The recordings carry no timestamps; the real rate is taken as REAL_RATE
# bytes/s (default 600: a ~12 KB session recorded over ~20 s).
#
# Usage: scripts/bench-tui.sh            load run (ratio Chorus/tmux)
#        IDLE=1 scripts/bench-tui.sh     8 idle tiles: Chorus's CPU only
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_RUN=${SECONDS_RUN:-60}
REAL_RATE=${REAL_RATE:-600}
STREAM=${STREAM:-$ROOT/agent/term/testdata/replay/claude-fullscreen/stream.raw}
RATE=$((REAL_RATE * 10))
[[ ${IDLE:-} == 1 ]] && RATE=0
TMP=$(mktemp -d)
SOCK=chorus-bench-$$
BIN=$TMP/bench-tui
(cd "$ROOT" && go build -o "$BIN" ./scripts/bench-tui)
cleanup() {
	tmux -L "$SOCK" kill-server 2>/dev/null || true
	kill $(jobs -p) 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

# cpu PID: utime+stime of the process itself, in clock ticks. Fields are
# counted after the ")" closing the command name, which has a space in it
# for tmux ("tmux: server").
cpu() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12+$13}' || echo 0; }
HZ=$(getconf CLK_TCK)

# Chorus, in a 200x60 PTY drained to /dev/null.
script -qfc "stty cols 200 rows 60; exec $BIN chorus $STREAM $RATE $SECONDS_RUN" /dev/null >/dev/null 2>&1 &
if [[ ${IDLE:-} != 1 ]]; then
	cat >"$TMP/tmux.conf" <<CONF
set -g status off
set -g history-limit 5000
set -g escape-time 0
CONF
	T=(tmux -L "$SOCK" -f "$TMP/tmux.conf")
	"${T[@]}" new-session -d -x 200 -y 60 "$BIN pace $STREAM $RATE $((SECONDS_RUN + 5))"
	for _ in $(seq 7); do
		"${T[@]}" split-window -t 0 "$BIN pace $STREAM $RATE $((SECONDS_RUN + 5))"
		"${T[@]}" select-layout -t 0 tiled >/dev/null
	done
	script -qfc "stty cols 200 rows 60; exec tmux -L $SOCK attach" /dev/null >/dev/null 2>&1 &
fi
sleep 2 # let both start before the measured window opens
CH=$(pgrep -f "^$BIN chorus" | head -1)
if [[ ${IDLE:-} != 1 ]]; then
	SRV=$(tmux -L "$SOCK" display -p '#{pid}')
	CLI=$(pgrep -f "^tmux -L $SOCK attach" | head -1)
fi
c0=$(cpu "$CH")
if [[ ${IDLE:-} != 1 ]]; then s0=$(cpu "$SRV"); k0=$(cpu "$CLI"); fi
sleep $((SECONDS_RUN - 4))
c1=$(cpu "$CH")
if [[ ${IDLE:-} == 1 ]]; then
	echo "idle, 8 tiles, $((SECONDS_RUN - 4)) s: chorus $(echo "scale=3; ($c1-$c0)/$HZ" | bc) CPU s"
	exit 0
fi
s1=$(cpu "$SRV")
k1=$(cpu "$CLI")
chorus=$(echo "scale=3; ($c1-$c0)/$HZ" | bc)
tmuxs=$(echo "scale=3; ($s1-$s0+$k1-$k0)/$HZ" | bc)
echo "8 streams at ${RATE} B/s each, $((SECONDS_RUN - 4)) s: chorus ${chorus} CPU s, tmux server+client ${tmuxs} CPU s, ratio $(echo "scale=2; $chorus/$tmuxs" | bc)"
