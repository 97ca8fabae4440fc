#!/usr/bin/env bash
# Compares agent/term's ingest with tmux's on the same bytes, both fed the
# same way: `cat` writing into a real PTY, read by the side measured.
#
# The bytes are the recorded streams in agent/term/testdata/replay, joined as
# BenchmarkReplay joins them and repeated to about MB megabytes. tmux reads
# them in a detached 120x40 pane (no client attached, so nothing is drawn);
# its time runs until cat has written the last byte and tmux has answered a
# wait-for sent after it, and its CPU is the server's over that span. Chorus
# reads them as the engine reads an agent (ptyproc into one emulator with
# tmux's scrollback, and the agent's log), in `bench-tui ingest`; its CPU is
# that process's own. Each side runs ROUNDS times, interleaved; medians are
# printed. HOST=1 adds a third side: the same bytes through an agent host
# (agents.host: the engine holds the terminal the host handed it), the
# engine's CPU and the host's apart.
#
# Usage: scripts/bench-tmux-ingest.sh [MB]
set -euo pipefail
# Built as the README installs Chorus: static, which starts about a
# millisecond sooner than with the C resolver linked in.
export CGO_ENABLED=0

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET_MB=${1:-20}
ROUNDS=${ROUNDS:-3}
WORK=$(mktemp -d)
SOCK=chorus-bench-$$
CONF=$WORK/tmux.conf
echo 'set -g history-limit 10000' >"$CONF" # as the emulator's scrollback here
T=(tmux -L "$SOCK" -f "$CONF")
cleanup() {
	"${T[@]}" kill-server 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
HZ=$(getconf CLK_TCK)
cpu() { local s; s=$(cat "/proc/$1/stat"); echo "${s##*) }" | awk '{print $12+$13}'; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

(cd "$ROOT" && go build -o "$WORK/bench-tui" ./scripts/bench-tui)
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

"${T[@]}" new-session -d -s idle -x 120 -y 40 "sleep 100000"
srv=$("${T[@]}" display -p '#{pid}')
: >"$WORK/tmux.txt"
: >"$WORK/chorus.txt"
: >"$WORK/hosted.txt"
for ((r = 1; r <= ROUNDS; r++)); do
	c0=$(cpu "$srv")
	start=$(date +%s.%N)
	"${T[@]}" new-window -d -t idle "stty raw -echo; cat '$WORK/all.raw'; tmux -L '$SOCK' wait-for -S ingested-$r; sleep 100000"
	"${T[@]}" wait-for "ingested-$r"
	end=$(date +%s.%N)
	c1=$(cpu "$srv")
	echo "$start $end $c0 $c1" | awk -v hz="$HZ" '{printf "%.3f %.3f\n", $2 - $1, ($4 - $3) / hz}' >>"$WORK/tmux.txt"
	"$WORK/bench-tui" ingest "$WORK/all.raw" >>"$WORK/chorus.txt"
	[[ ${HOST:-} == 1 ]] && HOST=1 "$WORK/bench-tui" ingest "$WORK/all.raw" >>"$WORK/hosted.txt"
done
tw=$(cut -d' ' -f1 "$WORK/tmux.txt" | median)
tc=$(cut -d' ' -f2 "$WORK/tmux.txt" | median)
cw=$(cut -d' ' -f1 "$WORK/chorus.txt" | median)
cc=$(cut -d' ' -f2 "$WORK/chorus.txt" | median)

echo "bytes fed to each side: $total ($reps x $size), $ROUNDS rounds, medians"
echo "tmux (server):          wall ${tw} s, CPU ${tc} s"
echo "Chorus (ptyproc+term):  wall ${cw} s, CPU ${cc} s"
echo "tmux/Chorus:            wall $(echo "$tw $cw" | awk '{printf "%.2f", $1 / $2}')x, CPU $(echo "$tc $cc" | awk '{printf "%.2f", $1 / $2}')x (above 1: Chorus is faster)"
if [[ ${HOST:-} == 1 ]]; then
	hw=$(cut -d' ' -f1 "$WORK/hosted.txt" | median)
	he=$(cut -d' ' -f2 "$WORK/hosted.txt" | median)
	hh=$(cut -d' ' -f3 "$WORK/hosted.txt" | median)
	echo "Chorus via agent host:  wall ${hw} s, engine CPU ${he} s, host CPU ${hh} s"
	echo "tmux/hosted:            wall $(echo "$tw $hw" | awk '{printf "%.2f", $1 / $2}')x, engine CPU $(echo "$tc $he" | awk '{printf "%.2f", $1 / $2}')x, engine+host CPU $(echo "$tc $he $hh" | awk '{printf "%.2f", $1 / ($2 + $3)}')x"
fi
