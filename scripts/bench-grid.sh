#!/usr/bin/env bash
# CPU of the real program against tmux on the same 8 busy streams.
#
# Chorus side: the real `chorus --autopilot` in a 200x60 PTY (script(1),
# draining into /dev/null): the TUI and the background engine it starts,
# running 8 tasks whose agents replay a recorded Claude Code stream. The
# agent profile is a Claude Code one (transcript "claude": signals come from
# session records, the screen is watched for stuck prompts and limits), its
# command the pacer (`bench-tui pace`), so the engine pays for PTYs,
# emulators, signal and stuck scanning, logs and serving the TUI, and the
# TUI for its own copy of each tile and drawing it. PROFILE=custom makes it
# a custom agent instead (transcript "none": the screen is its signal
# channel). HOST=1 runs each agent in an agent host (agents.host), whose
# processes count on Chorus's side.
#
# tmux side, at the same time: a tmux server with the same 8 pacers in 8
# tiled panes and an attached client in a 200x60 PTY. Figures are CPU
# seconds (utime+stime from /proc) of chorus TUI + engine against tmux
# server + client over the same window; pacers are not counted on either
# side. Rounds repeat the pair; the ratio is printed per round and as the
# median with min–max.
#
# Each stream arrives at RATE bytes/s per tile in WPS writes a second; the
# default runs both cadences: 100 writes/s (small writes) and 10 writes/s
# (a busy CLI's status-line cadence).
#
# Usage: scripts/bench-grid.sh
#        ROUNDS=5 WINDOW=20 WPS_LIST="100 10" RATE=1000 STREAM=claude-classic scripts/bench-grid.sh
#        CPUPROFILE=/tmp/p scripts/bench-grid.sh   Go CPU profiles of the engine and the TUI, /tmp/p.PID
set -euo pipefail
# Built as the README installs Chorus: static, which starts about a
# millisecond sooner than with the C resolver linked in.
export CGO_ENABLED=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WINDOW=${WINDOW:-20}
ROUNDS=${ROUNDS:-3}
RATE=${RATE:-1000}
WPS_LIST=${WPS_LIST:-100 10}
STREAM=${STREAM:-claude-classic}
PROFILE=${PROFILE:-claude}
FILE=$ROOT/agent/term/testdata/replay/$STREAM/stream.raw
TMP=$(mktemp -d /tmp/bench-grid.XXXXXX)
SOCK=chorus-grid-$$
LIVE=100000
(cd "$ROOT" && go build -o "$TMP/chorus" ./cmd/chorus && go build -o "$TMP/bench-tui" ./scripts/bench-tui)
CH=$TMP/chorus
# The pacer named as Claude Code, so the profile is an interactive Claude
# Code one by its command (as trustWorktrees requires).
mkdir -p "$TMP/bin" && ln -s "$TMP/bench-tui" "$TMP/bin/claude"
PACE=$TMP/bin/claude
HZ=$(getconf CLK_TCK)
export HOME=$TMP/home GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
mkdir -p "$HOME"

cleanup() {
	tmux -L "$SOCK" kill-server 2>/dev/null || true
	# An aborted round leaves its background engine: it runs in its own session.
	for d in "$TMP"/repo-*; do
		[[ -d $d/.chorus ]] && timeout 20 "$CH" -C "$d" stop --wait >/dev/null 2>&1 || true
	done
	kill $(jobs -p) 2>/dev/null || true
	wait 2>/dev/null || true
	[[ -n ${KEEP:-} ]] && echo "kept $TMP" >&2 || rm -rf "$TMP"
}
trap cleanup EXIT

cpu() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo "bench-grid: process $1 ($2) ended before the window closed" >&2; exit 1; }
	echo "${s##*) }" | awk '{print $12+$13}'
}
secs() { echo "scale=2; $1/$HZ" | bc; }

# repo WPS: a repository set up for 8 pacing agents.
repo() {
	local dir=$TMP/repo-$1-$2
	mkdir -p "$dir"
	git -C "$dir" init -q -b main
	echo bench >"$dir/README.md"
	git -C "$dir" add -A && git -C "$dir" commit -q -m start
	"$CH" -C "$dir" init --yes >/dev/null 2>&1
	python3 - "$dir/.chorus/config.json" "$PACE" "$FILE" "$RATE" "$LIVE" "$1" "$PROFILE" "${HOST:-}" <<'PY'
import json, sys
path, pace, file, rate, live, wps, profile, host = sys.argv[1:]
cfg = json.load(open(path))
p = {"command": pace, "args": ["pace", file, rate, live], "env": ["WPS=" + wps]}
if profile == "custom":
    p["transcript"] = "none"
else:
    p["trustWorktrees"] = True
cfg["agents"]["available"]["pace"] = p
cfg["agents"]["default"] = "pace"
cfg["agents"]["maxParallel"] = 8
cfg["agents"]["scrollback"] = 10000
cfg["agents"]["host"] = host == "1"  # on by default: direct is said
json.dump(cfg, open(path, "w"), indent=2)
PY
	git -C "$dir" add -A && git -C "$dir" commit -q -m "chorus setup"
	for i in $(seq 8); do "$CH" -C "$dir" task create "replay $i" --acceptance "the replay runs" >/dev/null 2>&1; done
	echo "$dir"
}

# wait_for CMD...: polls (bounded) until CMD succeeds.
wait_for() {
	for _ in $(seq 300); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
	echo "bench-grid: timed out waiting for: $*" >&2
	exit 1
}
agents_running() { [[ $(pgrep -fc "^$PACE pace $FILE") -ge 16 ]]; }

cat >"$TMP/tmux.conf" <<CONF
set -g status off
set -g history-limit 10000
set -g escape-time 0
CONF

# round WPS N: one side-by-side round; prints "ratio chorus tmux engine tui".
round() {
	local wps=$1 n=$2 dir tui eng srv cli
	dir=$(repo "$wps" "$n")
	local T=(tmux -L "$SOCK" -f "$TMP/tmux.conf")
	"${T[@]}" new-session -d -x 200 -y 60 "env WPS=$wps $PACE pace $FILE $RATE $LIVE"
	for _ in $(seq 7); do
		"${T[@]}" split-window -t 0 "env WPS=$wps $PACE pace $FILE $RATE $LIVE"
		"${T[@]}" select-layout -t 0 tiled >/dev/null
	done
	script -qfc "stty cols 200 rows 60; exec tmux -L $SOCK attach" /dev/null >/dev/null 2>&1 &
	local prof=""
	[[ -n ${CPUPROFILE:-} ]] && prof="CHORUS_CPUPROFILE=$CPUPROFILE.%p"
	script -qfc "stty cols 200 rows 60; exec env $prof ${CHORUS_ENV:-} $CH -C $dir --autopilot --max-agents 8" /dev/null >/dev/null 2>&1 &
	wait_for agents_running
	sleep 2 # past start-up, into the steady stream
	tui=$(pgrep -f "^$CH -C $dir --autopilot" | head -1)
	eng=$(pgrep -f "^$CH engine -C $dir" | head -1)
	srv=$("${T[@]}" display -p '#{pid}')
	cli=$(pgrep -f "^tmux -L $SOCK attach" | head -1)
	[[ -n $tui && -n $eng && -n $srv && -n $cli ]] || { echo "bench-grid: a process is missing (tui=$tui engine=$eng tmux=$srv client=$cli)" >&2; exit 1; }
	local hosts h0=0 h1=0 h
	# This round's hosts only: a host of the round before may still be ending.
	hosts=$(pgrep -f "^$CH agent-host --socket $dir/" || true)
	local t0 e0 s0 k0 t1 e1 s1 k1
	t0=$(cpu "$tui" TUI) e0=$(cpu "$eng" engine) s0=$(cpu "$srv" "tmux server") k0=$(cpu "$cli" "tmux client")
	for h in $hosts; do h0=$((h0 + $(cpu "$h" "agent host"))); done
	sleep "$WINDOW"
	t1=$(cpu "$tui" TUI) e1=$(cpu "$eng" engine) s1=$(cpu "$srv" "tmux server") k1=$(cpu "$cli" "tmux client")
	for h in $hosts; do h1=$((h1 + $(cpu "$h" "agent host"))); done
	# Agent hosts (HOST=1) count with the engine.
	local c=$((t1 - t0 + e1 - e0 + h1 - h0)) t=$((s1 - s0 + k1 - k0))
	echo "$(echo "scale=3; $c/$t" | bc) $(secs $c) $(secs $t) $(secs $((e1 - e0 + h1 - h0))) $(secs $((t1 - t0))) $(secs $((h1 - h0)))"
	"${T[@]}" kill-server 2>/dev/null || true
	kill -TERM "$eng" "$tui" $hosts 2>/dev/null || true
	for _ in $(seq 100); do kill -0 "$eng" 2>/dev/null || kill -0 "$tui" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$eng" "$tui" $hosts 2>/dev/null || true
	pkill -f "^$PACE pace $FILE" 2>/dev/null || true
	wait 2>/dev/null || true
	[[ -n ${KEEP:-} ]] || rm -rf "$dir"
}

echo "8 tiles of $STREAM at $RATE B/s, profile $PROFILE, ${WINDOW} s window, $ROUNDS rounds, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
for wps in $WPS_LIST; do
	rs=()
	for n in $(seq "$ROUNDS"); do
		read -r r c t e u h < <(round "$wps" "$n")
		hs=""
		[[ -n ${HOST:-} ]] && hs=", hosts $h of it"
		printf '  %3d writes/s round %d: chorus %6s CPU s (engine %s + TUI %s%s)  tmux %6s CPU s  ratio %s\n' "$wps" "$n" "$c" "$e" "$u" "$hs" "$t" "$r"
		rs+=("$r")
	done
	sorted=$(printf '%s\n' "${rs[@]}" | sort -n)
	printf '%3d writes/s: chorus/tmux CPU median %s (min %s, max %s, %d rounds)\n' "$wps" \
		"$(echo "$sorted" | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')" "$(echo "$sorted" | head -1)" "$(echo "$sorted" | tail -1)" "$ROUNDS"
done
