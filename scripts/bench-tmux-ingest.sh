#!/usr/bin/env bash
# Compares agent/term's ingest speed with tmux's on the same bytes.
#
# The bytes are the recorded streams in agent/term/testdata/replay, joined as
# BenchmarkReplay joins them. tmux gets them through a real PTY (cat in a
# detached 120x40 pane, no client attached, so nothing is drawn), repeated
# until there are about 20 MB; the time runs until cat has written the last
# byte and tmux has answered a wait-for sent after it. The emulator's
# figure comes from `go test -bench BenchmarkReplay` in the same run.
#
# Usage: scripts/bench-tmux-ingest.sh [MB]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET_MB=${1:-20}
WORK=$(mktemp -d)
SOCK=chorus-bench-$$
CONF=$(mktemp)
echo 'set -g history-limit 10000' >"$CONF" # as the emulator's default
T=(tmux -L "$SOCK" -f "$CONF")
cleanup() {
	"${T[@]}" kill-server 2>/dev/null || true
	rm -rf "$WORK" "$CONF"
}
trap cleanup EXIT

one=$WORK/one.raw
: >"$one"
for d in "$ROOT"/agent/term/testdata/replay/*/; do
	cat "$d/stream.raw" >>"$one"
	printf '\033[?1049l\033[!p\033[2J\033[H' >>"$one"
done
size=$(stat -c %s "$one")
reps=$(((TARGET_MB * 1000000 + size - 1) / size))
for ((i = 0; i < reps; i++)); do cat "$one"; done >"$WORK/all.raw"
total=$(stat -c %s "$WORK/all.raw")

start=$(date +%s.%N)
"${T[@]}" new-session -d -s bench -x 120 -y 40 \
	"stty raw -echo; cat '$WORK/all.raw'; tmux -L '$SOCK' wait-for -S ingested; sleep 600"
"${T[@]}" wait-for ingested
end=$(date +%s.%N)
tmux_mbs=$(echo "$total $start $end" | awk '{printf "%.2f", $1 / ($3 - $2) / 1e6}')

go_out=$(cd "$ROOT" && go test -run '^$' -bench '^BenchmarkReplay$' -benchtime 3s ./agent/term/)
go_mbs=$(echo "$go_out" | awk '/^BenchmarkReplay/ {for (i = 1; i <= NF; i++) if ($(i+1) == "MB/s") print $i}')
allocs=$(echo "$go_out" | awk '/^BenchmarkReplay/ {for (i = 1; i <= NF; i++) if ($(i+1) == "allocs/KB") print $i}')

echo "bytes fed to tmux:   $total ($reps x $size)"
echo "tmux through a PTY:  $tmux_mbs MB/s"
echo "agent/term (4 KiB):     $go_mbs MB/s, $allocs allocs/KB"
echo "ratio agent/term/tmux:  $(echo "$go_mbs $tmux_mbs" | awk '{printf "%.1f", $1 / $2}')x"
