#!/usr/bin/env bash
# Records terminal sessions under tmux for the agent/term replay tests.
#
# For each case it runs a program in a detached tmux pane, saves every byte
# the program wrote (pipe-pane -O) to stream.raw, and at checkpoints taken
# only after the output went quiet saves tmux's own view of the screen
# (capture-pane), cursor and alternate-screen flag. The replay test feeds
# stream.raw to the emulator and compares at the same byte offsets, so CI
# needs no tmux.
#
# Usage: scripts/record-term.sh [case...]   (default: all cases)
# Cases: ls vim less htop claude-fullscreen claude-classic
# Needs tmux, vim, less, htop; Claude Code from
#   npm install --prefix .tools/npm @anthropic-ai/claude-code
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/agent/term/testdata/replay
SOCK=chorus-record-$$
CONF=$(mktemp)
cat >"$CONF" <<'EOF'
set -g default-terminal tmux-256color
set -g status off
set -g history-limit 10000
set -g escape-time 0
EOF
TMUX_CMD=(tmux -L "$SOCK" -f "$CONF")
QUIET_MS=${QUIET_MS:-800}

cleanup() {
	"${TMUX_CMD[@]}" kill-server 2>/dev/null || true
	rm -f "$CONF"
}
trap cleanup EXIT

# wait_quiet waits until the stream has not grown for QUIET_MS, giving up
# after $1 seconds (default 20); returns 1 when it never went quiet.
wait_quiet() {
	local limit=${1:-20} last=-1 same=0 size waited=0
	while :; do
		size=$(stat -c %s "$DIR/stream.raw" 2>/dev/null || echo 0)
		if [[ $size == "$last" ]]; then
			same=$((same + 100))
			((same >= QUIET_MS)) && return 0
		else
			same=0
			last=$size
		fi
		sleep 0.1
		waited=$((waited + 100))
		((waited >= limit * 1000)) && return 1
	done
}

# check records a checkpoint once the output is quiet. The capture must
# fall between two equal readings of the stream size, or output that
# arrived meanwhile would make the screen newer than its offset.
check() {
	local off after info n tries=0
	while :; do
		if ! wait_quiet "${1:-20}"; then
			echo "  $CASE: output never went quiet, checkpoint skipped" >&2
			return 0
		fi
		off=$(stat -c %s "$DIR/stream.raw")
		info=$("${TMUX_CMD[@]}" display -p -t rec '#{cursor_x} #{cursor_y} #{alternate_on}')
		"${TMUX_CMD[@]}" capture-pane -p -t rec >"$DIR/capture.tmp"
		sleep 0.2
		after=$(stat -c %s "$DIR/stream.raw")
		[[ $off == "$after" ]] && break
		tries=$((tries + 1))
		if ((tries >= 5)); then
			echo "  $CASE: screen kept changing, checkpoint skipped" >&2
			rm -f "$DIR/capture.tmp"
			return 0
		fi
	done
	n=$NCHECK
	NCHECK=$((NCHECK + 1))
	mv "$DIR/capture.tmp" "$DIR/screen-$n.txt"
	read -r cx cy alt <<<"$info"
	echo "check $off $cx $cy $alt screen-$n.txt" >>"$DIR/script"
}

# resize changes the pane size at a quiet point and logs the byte offset.
resize() {
	wait_quiet 20 || true
	local off
	off=$(stat -c %s "$DIR/stream.raw")
	echo "resize $off $1 $2" >>"$DIR/script"
	"${TMUX_CMD[@]}" resize-window -t rec -x "$1" -y "$2"
}

keys() { "${TMUX_CMD[@]}" send-keys -t rec "$@"; }

# start runs a command in a w×h pane. The pane first waits for a key so
# that pipe-pane is attached before the program writes anything.
start() {
	local w=$1 h=$2
	shift 2
	DIR=$OUT/$CASE
	rm -rf "$DIR"
	mkdir -p "$DIR"
	: >"$DIR/stream.raw"
	echo "size $w $h" >"$DIR/script"
	NCHECK=0
	"${TMUX_CMD[@]}" kill-server 2>/dev/null || true
	"${TMUX_CMD[@]}" new-session -d -s rec -x "$w" -y "$h" \
		-e "LANG=C.UTF-8" -e "LC_ALL=C.UTF-8" \
		"stty -echo; read _; stty echo; $*; exec sleep 600"
	# Set here, not in the config file: tmux 3.3a crashes on it there.
	"${TMUX_CMD[@]}" set -g window-size manual
	"${TMUX_CMD[@]}" pipe-pane -O -t rec "cat >>'$DIR/stream.raw'"
	keys Enter
}

stop() {
	"${TMUX_CMD[@]}" kill-server 2>/dev/null || true
	echo "  $CASE: $(stat -c %s "$DIR/stream.raw") bytes, $NCHECK checkpoints" >&2
}

case_ls() {
	start 80 24 "sh -c 'ls --color=always -R /usr/share/vim/vim90/colors /usr/share/vim/vim90/autoload; ls -l --color=always /usr/share/vim/vim90/syntax | head -150; printf \"\\033[1;4;38;5;208mdone\\033[m \\033[48;2;10;20;30mtrue\\033[m\\n\"'"
	check
	stop
}

case_vim() {
	local f=$ROOT/agent/term/screen.go
	start 80 24 "vim -u NONE -i NONE -N -n -c 'syntax on' -c 'set number ruler laststatus=2' -R '$f'"
	check
	keys 40j
	check
	keys C-f
	check
	keys /wide Enter
	check
	resize 100 30
	check
	resize 60 18
	check
	keys ':set nonumber' Enter
	check
	keys G
	check
	keys ':q!' Enter
	check
	stop
}

case_less() {
	start 80 24 "less /usr/share/common-licenses/GPL-3"
	check
	keys Space
	check
	keys Space Space
	check
	keys b
	check
	keys /Program Enter
	check
	resize 72 20
	check
	keys G
	check
	keys q
	check
	stop
}

case_htop() {
	# A long delay so the screen holds still between checkpoints.
	start 100 30 "htop -d 600"
	check
	keys F5
	check
	keys Down Down Down
	check
	resize 120 35
	check
	resize 80 24
	check
	keys F1
	check
	keys Escape
	check
	keys q
	check
	stop
}

# claude_env prepares a throwaway HOME in which Claude Code starts without
# onboarding, and a local model server that streams one short scripted
# reply to every request, so the session runs offline and holds still.
claude_env() {
	CHOME=$(mktemp -d)
	local key=sk-test-0000000000000000000
	mkdir -p "$CHOME/.claude" "$CHOME/tmp" "$CHOME/proj"
	cat >"$CHOME/.claude.json" <<EOF
{"hasCompletedOnboarding": true, "theme": "dark",
 "projects": {"/": {"hasTrustDialogAccepted": true}},
 "customApiKeyResponses": {"approved": ["${key: -20}"], "rejected": []}}
EOF
	echo '{"skipDangerousModePermissionPrompt": true}' >"$CHOME/.claude/settings.json"
	cat >"$CHOME/server.py" <<'EOF'
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLY = ("Hello! This reply comes from a local test server.\n\n"
         "- **bold** item with `code`\n- second item: 中文 wide text\n\n"
         "```go\nfunc main() { println(\"hi\") }\n```\nDone.")

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_HEAD(self):
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def do_GET(self): self.do_HEAD()
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if "count_tokens" in self.path:
            out = json.dumps({"input_tokens": 10}).encode()
            self.send_response(200); self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out))); self.end_headers(); self.wfile.write(out)
            return
        req = json.loads(body or b"{}")
        text = REPLY
        if not req.get("tools"):
            text = json.dumps({"title": "Say hello"})
        usage = {"input_tokens": 10, "output_tokens": 20}
        ev = [("message_start", {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
               "model": req.get("model", "m"), "content": [], "stop_reason": None, "usage": usage}}),
              ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
              ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
              ("content_block_stop", {"type": "content_block_stop", "index": 0}),
              ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": usage}),
              ("message_stop", {"type": "message_stop"})]
        out = "".join("event: %s\ndata: %s\n\n" % (n, json.dumps(d)) for n, d in ev).encode()
        self.send_response(200); self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(out))); self.end_headers(); self.wfile.write(out)

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
EOF
	coproc SERVER { exec python3 "$CHOME/server.py"; }
	read -r PORT <&"${SERVER[0]}"
	CLAUDE_ENV="env -u CLAUDECODE HOME=$CHOME CLAUDE_CODE_TMPDIR=$CHOME/tmp ANTHROPIC_BASE_URL=http://127.0.0.1:$PORT ANTHROPIC_API_KEY=$key CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 IS_SANDBOX=1 TERM=tmux-256color"
	CLAUDE_BIN=$ROOT/.tools/npm/node_modules/.bin/claude
}

claude_session() {
	check 30
	keys -l 'say hello'
	check
	keys Enter
	check 40
	resize 100 30
	check 20
	resize 70 20
	check 20
	keys -l '/help'
	check
	keys Escape
	check
	keys -l 'again'
	keys Enter
	check 40
	stop
	kill "$SERVER_PID" 2>/dev/null || true
	wait "$SERVER_PID" 2>/dev/null || true
	rm -rf "$CHOME" 2>/dev/null || true
}

case_claude-fullscreen() {
	claude_env
	start 90 28 "sh -c 'cd $CHOME/proj && $CLAUDE_ENV CLAUDE_CODE_NO_FLICKER=1 $CLAUDE_BIN'"
	claude_session
}

case_claude-classic() {
	claude_env
	start 90 28 "sh -c 'cd $CHOME/proj && $CLAUDE_ENV CLAUDE_CODE_NO_FLICKER=0 $CLAUDE_BIN'"
	claude_session
}

cases=("$@")
((${#cases[@]})) || cases=(ls vim less htop claude-fullscreen claude-classic)
for CASE in "${cases[@]}"; do
	echo "recording $CASE" >&2
	"case_$CASE"
done
