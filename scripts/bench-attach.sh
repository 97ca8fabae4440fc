#!/usr/bin/env bash
# Attaching to 8 agents that printed LINES lines each, and the memory that
# holds them: Chorus against tmux (server + client, 8 tiled panes,
# history-limit 10000 as the engine's scrollback) in the same run, ROUNDS
# interleaved attaches each, on 200x60 PTYs that answer like a terminal.
# An attach is timed from the client's start until every agent's last line
# is on its screen. See scripts/bench-attach/main.go.
#
# Two Chorus sides: "chorus" is the real program as installed (`chorus
# --autopilot --headless` running 8 tasks whose hosted agents print, then
# `chorus attach`; its memory counts the engine, the agent hosts and the
# TUI), "ui+remote" the remote package serving the same emulators to the
# real ui package, without the rest of the engine or of chorus's start.
# Memory is each side's VmRSS and Pss, also Pss by process name (the
# engine, the agent hosts together, the client), with the client attached
# a second; CHORUS_HEAPPROFILE reaches the engine and the TUI.
#
# Usage: scripts/bench-attach.sh                 LINES=10000 ROUNDS=7
#        BENCH_TRACE=1 scripts/bench-attach.sh   also each chunk a client
#            writes, on stderr: when it arrives (µs) and its size
#        BENCH_DUMP=<dir> scripts/bench-attach.sh   also the bytes each
#            attach's client wrote, one file per attach in <dir>
#        BASE_REV=<revision> scripts/bench-attach.sh
#            also measures Chorus built from that revision, in the same
#            run: its real program ("chorus@base": engine, agent hosts and
#            TUI) and its ui+remote ("ui+remote@base").
set -euo pipefail
# Built as the README installs Chorus: static, which starts about a
# millisecond sooner than with the C resolver linked in.
export CGO_ENABLED=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LINES=${LINES:-10000}
ROUNDS=${ROUNDS:-7}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
(cd "$ROOT" && go build -o "$TMP/bench-attach" ./scripts/bench-attach)
# The real program, installed as the README does (its helpers beside it).
mkdir -p "$TMP/bin" && (cd "$ROOT" && go build -o "$TMP/bin/" ./cmd/...)
export BENCH_CHORUS=$TMP/bin/chorus
if [[ -n ${BASE_REV:-} ]]; then
	git -C "$ROOT" worktree add -q --detach "$TMP/base-src" "$BASE_REV"
	# The benchmark itself is today's, built against that revision.
	rm -rf "$TMP/base-src/scripts/bench-attach"
	cp -r "$ROOT/scripts/bench-attach" "$TMP/base-src/scripts/"
	# A revision before ui.OpenTerminal builds with the UI opening it.
	(cd "$TMP/base-src" && { go build -o "$TMP/bench-attach-base" ./scripts/bench-attach 2>/dev/null ||
		go build -tags oldui -o "$TMP/bench-attach-base" ./scripts/bench-attach; })
	# Its real program too, installed the same way.
	mkdir -p "$TMP/base-bin" && (cd "$TMP/base-src" && go build -o "$TMP/base-bin/" ./cmd/...)
	git -C "$ROOT" worktree remove --force "$TMP/base-src"
	export BENCH_BASE=$TMP/bench-attach-base BENCH_CHORUS_BASE=$TMP/base-bin/chorus
fi
"$TMP/bench-attach" run "$LINES" "$ROUNDS"
