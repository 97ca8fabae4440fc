#!/usr/bin/env bash
# CPU cost of the Chorus grid against tmux showing the same streams: a
# micro-benchmark of a stand-in engine (PTYs, emulators, the UI; no signal
# or stuck scanning, no logs). scripts/bench-grid.sh measures the real
# program.
#
# For each recorded stream, eight tiles each receive it in a loop at 10x its
# real rate. The same run starts a tmux server with the same 8 streams in 8
# tiled panes and an attached client. Both "terminals" are script(1) PTYs of
# 200x60 draining into /dev/null, so each side pays for reading the PTYs,
# parsing the streams and drawing its screen, nothing else. Pacers are
# separate processes and are not counted. Both sides run until the measured
# window has closed and been read, then are killed: a side that is gone
# before that is an error, never a figure.
#
# Chorus is measured two ways in the same run, side by side with tmux:
#   in-process  `bench-tui chorus`: PTYs, emulators and the UI in one process
#               (chorus --in-process, and the planning screen);
#   attached    `bench-tui serve` + `bench-tui attach`: the engine's PTYs and
#               emulators served by the remote package, and the UI on a
#               remote client keeping its own copy of each emulator. This is
#               what `chorus` in a terminal runs; its figure is engine + TUI,
#               as tmux's is server + client.
# ATTACHED=0 leaves the attached pair out. CHORUS_ENV="K=V ..." is set for
# every Chorus process, TUI_ENV for the attached TUI alone. CPUPROFILE=FILE writes profiles
# (FILE for in-process, FILE.serve and FILE.attach).
#
# Streams are agent/term/testdata/replay/<name>/stream.raw (recorded with
# scripts/record-term.sh) plus "buildlog", a compiler's verbose log made on
# the spot. The recordings carry no timestamps; the real rate is taken as
# REAL_RATE bytes/s (default 600: a ~12 KB session recorded over ~20 s).
#
# Usage: scripts/bench-tui.sh                  all streams, WINDOW s each
#        STREAMS="vim htop" scripts/bench-tui.sh
#        IDLE=1 scripts/bench-tui.sh           8 idle tiles: Chorus's CPU only
set -euo pipefail
# Built as the README installs Chorus: static, which starts about a
# millisecond sooner than with the C resolver linked in.
export CGO_ENABLED=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WINDOW=${WINDOW:-30}
REAL_RATE=${REAL_RATE:-600}
STREAMS=${STREAMS:-claude-fullscreen claude-classic vim htop less buildlog}
RATE=$((REAL_RATE * 10))
[[ ${IDLE:-} == 1 ]] && RATE=0 && STREAMS=claude-fullscreen
TMP=$(mktemp -d)
SOCK=chorus-bench-$$
BIN=$TMP/bench-tui
LIVE=100000 # seconds: the load runs until this script kills it
[[ -n ${CPUPROFILE:-} ]] && export CPUPROFILE
(cd "$ROOT" && go build -o "$BIN" ./scripts/bench-tui)
cleanup() {
	tmux -L "$SOCK" kill-server 2>/dev/null || true
	kill $(jobs -p) 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
HZ=$(getconf CLK_TCK)

# cpu PID: utime+stime of the process, in clock ticks; fails when it is
# gone. Fields are counted after the ")" closing the command name, which
# has a space in it for tmux ("tmux: server").
cpu() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo "bench-tui: process $1 ($2) ended before the window closed" >&2; exit 1; }
	echo "${s##*) }" | awk '{print $12+$13}'
}
secs() { echo "scale=3; $1/$HZ" | bc; }

stream_file() {
	if [[ $1 == buildlog ]]; then
		# A verbose build: long plain lines, the shape of most agents' tool output.
		(cd "$ROOT" && go build -a -x -o /dev/null ./agent/term 2>&1 | head -c 200000 | sed 's/$/\r/') >"$TMP/buildlog.raw"
		echo "$TMP/buildlog.raw"
	else
		echo "$ROOT/agent/term/testdata/replay/$1/stream.raw"
	fi
}

ratio() { if (($2 > 0)); then echo "scale=2; $1/$2" | bc; else echo n/a; fi; }

run_one() {
	local name=$1 file attached=${ATTACHED:-1}
	file=$(stream_file "$name")
	[[ ${IDLE:-} == 1 ]] && attached=0
	script -qfc "stty cols 200 rows 60; exec env ${CHORUS_ENV:-} $BIN chorus $file $RATE $LIVE" /dev/null >/dev/null 2>&1 &
	if [[ $attached == 1 ]]; then
		export BENCH_SOCK=$TMP/engine-$name.sock
		env ${CHORUS_ENV:-} "$BIN" serve "$file" "$RATE" "$LIVE" >"$TMP/serve.log" 2>&1 &
		script -qfc "stty cols 200 rows 60; exec env ${CHORUS_ENV:-} ${TUI_ENV:-} $BIN attach - - $LIVE" /dev/null >/dev/null 2>&1 &
	fi
	local T=(tmux -L "$SOCK" -f "$TMP/tmux.conf")
	if [[ ${IDLE:-} != 1 ]]; then
		"${T[@]}" new-session -d -x 200 -y 60 "$BIN pace $file $RATE $LIVE"
		for _ in $(seq 7); do
			"${T[@]}" split-window -t 0 "$BIN pace $file $RATE $LIVE"
			"${T[@]}" select-layout -t 0 tiled >/dev/null
		done
		script -qfc "stty cols 200 rows 60; exec tmux -L $SOCK attach" /dev/null >/dev/null 2>&1 &
	fi
	sleep 2 # let all start before the measured window opens
	local ch srv cli es ea c0 c1 s0 s1 k0 k1 e0 e1 a0 a1 w0 w1
	ch=$(pgrep -f "^$BIN chorus" | head -1)
	if [[ $attached == 1 ]]; then
		es=$(pgrep -f "^$BIN serve" | head -1)
		ea=$(pgrep -f "^$BIN attach" | head -1)
	fi
	w0=$(date +%s.%N)
	c0=$(cpu "$ch" chorus)
	if [[ $attached == 1 ]]; then
		e0=$(cpu "$es" engine)
		a0=$(cpu "$ea" "attached TUI")
	fi
	if [[ ${IDLE:-} != 1 ]]; then
		srv=$("${T[@]}" display -p '#{pid}')
		cli=$(pgrep -f "^tmux -L $SOCK attach" | head -1)
		s0=$(cpu "$srv" "tmux server")
		k0=$(cpu "$cli" "tmux client")
	fi
	sleep "$WINDOW"
	c1=$(cpu "$ch" chorus)
	if [[ $attached == 1 ]]; then
		e1=$(cpu "$es" engine)
		a1=$(cpu "$ea" "attached TUI")
	fi
	if [[ ${IDLE:-} == 1 ]]; then
		echo "idle, 8 tiles, ${WINDOW} s: chorus $(secs $((c1 - c0))) CPU s"
	else
		s1=$(cpu "$srv" "tmux server")
		k1=$(cpu "$cli" "tmux client")
		w1=$(date +%s.%N)
		local c=$((c1 - c0)) t=$((s1 - s0 + k1 - k0))
		printf '%-18s wall %5.1f s   tmux server+client %6s CPU s   in-process %6s CPU s (ratio %s)' "$name" \
			"$(echo "$w1 - $w0" | bc)" "$(secs $t)" "$(secs $c)" "$(ratio $c $t)"
		if [[ $attached == 1 ]]; then
			local e=$((e1 - e0)) a=$((a1 - a0))
			printf '   attached engine %6s + TUI %6s = %6s CPU s (ratio %s)' "$(secs $e)" "$(secs $a)" "$(secs $((e + a)))" "$(ratio $((e + a)) $t)"
		fi
		echo
		"${T[@]}" kill-server 2>/dev/null || true
	fi
	# SIGTERM: a process given CPUPROFILE writes its profile first.
	pkill -f "^$BIN " 2>/dev/null || true
	wait 2>/dev/null || true
}

cat >"$TMP/tmux.conf" <<CONF
set -g status off
set -g history-limit 5000
set -g escape-time 0
CONF
echo "8 tiles per stream at ${RATE} B/s each, ${WINDOW} s window, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
for s in $STREAMS; do run_one "$s"; done
