#!/usr/bin/env bash
# bench.sh: start bin/voiced on a fixture mount on a free loopback port (temp token, data dir and
# JWT secret), run the three voiced-bench modes briefly, stop the server. Bounded: ~4 minutes
# (the speculation comparison starts two more servers of its own).
# Run through `make bench` (it exports the cgo and library variables); results also go to
# $BENCH_OUT (default var/bench) as JSON.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${VOICED_BIN:-bin/voiced}
OUT=${BENCH_OUT:-var/bench}
mkdir -p "$OUT"
tmp=$(mktemp -d)
server=""
cleanup() {
	if [[ -n $server ]] && kill -0 "$server" 2>/dev/null; then
		kill -TERM "$server" && wait "$server" || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/voiced-bench" ./cmd/voiced-bench

mount=${VOICED_SPEECH_ASSETS:-$tmp/mount}
if [[ -z ${VOICED_SPEECH_ASSETS:-} ]]; then
	"$BIN" assets fixture "$mount" >/dev/null
fi
head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$tmp/token"
head -c 48 /dev/urandom | base64 | tr -d '/+=' >"$tmp/jwt.secret"

# Flags the binary may not have yet (the conversation component): pass only those it lists.
help=$("$BIN" serve -h 2>&1 || true)
extra=()
has() { grep -qE -- "^ +-$1( |$)" <<<"$help"; }  # a bool flag has no type after its name
converse=1
if has jwt-secret-file; then extra+=(--jwt-secret-file "$tmp/jwt.secret"); else converse=0; fi
has max-conversations && extra+=(--max-conversations 64)
has max-per-tenant && extra+=(--max-per-tenant 64)
profiling=0
if has debug-addr; then extra+=(--debug-addr 127.0.0.1:0); profiling=1; fi

"$BIN" serve --bind 127.0.0.1:0 --token-file "$tmp/token" --data-dir "$tmp/data" \
	--speech-assets "$mount" "${extra[@]}" 2>"$tmp/server.log" &
server=$!

# The listening line (log level info) names the port.
addr=""
for _ in $(seq 1 300); do
	addr=$(grep -o 'addr=[0-9.:]*' "$tmp/server.log" | head -1 | cut -d= -f2 || true)
	[[ -n $addr ]] && break
	kill -0 "$server" 2>/dev/null || { cat "$tmp/server.log"; exit 1; }
	sleep 0.1
done
[[ -n $addr ]] || { echo "bench: the server did not report its address"; cat "$tmp/server.log"; exit 1; }
url="http://$addr"
debug=()
if [[ $profiling == 1 ]]; then
	debugAddr=$(grep -o 'debugAddr=[0-9.:]*' "$tmp/server.log" | head -1 | cut -d= -f2 || true)
	[[ -n $debugAddr ]] && debug=(-debug-url "http://$debugAddr" -profile-out "$OUT/converse-cpu.pprof")
fi
echo "bench: voiced pid $server on $url, mount $mount ($(nproc) CPUs here, shared)"

bench=("$tmp/voiced-bench")
common=(-url "$url" -token-file "$tmp/token")
# converse first: its idle-memory phase wants a server that has served nothing yet.
if [[ $converse == 1 ]]; then
	"${bench[@]}" converse "${common[@]}" -jwt-secret-file "$tmp/jwt.secret" -pid "$server" "${debug[@]}" \
		-turns 12 -ramp-max 16 -ramp-turns 2 -idle 32 -json "$OUT/converse.json"
	# Speculation on/off side by side: the bench starts its own fake mind (first token after
	# 300 ms) and two servers on the same mount (--speculate true/false), semantic_vad. On the
	# fixture mount the speech carries the codec's tones of a question (-fixture-speech): real
	# speech alone reads as nonsense there, which never reads finished.
	if has speculate; then
		# The silero recordings' words are too short to carry a question's tones: pocketsphinx-testdata's
		# (scripts/install-deps.sh --test installs them) are used when present.
		fixture=()
		ps=/usr/share/pocketsphinx/test/data
		if [[ -z ${VOICED_SPEECH_ASSETS:-} ]]; then
			fixture=(-fixture-speech)
			for f in goforward something numbers; do [[ -f $ps/$f.raw ]] && fixture+=(-audio "$ps/$f.raw"); done
		fi
		"${bench[@]}" converse -mind-delay 300ms -voiced "$BIN" -speech-assets "$mount" -rounds 2 -turns 5 \
			-timeout 5m "${fixture[@]}" -json "$OUT/converse-speculation.json"
	fi
else
	echo "bench: converse skipped: this voiced has no --jwt-secret-file (the conversation component is not wired yet)"
fi
"${bench[@]}" transcribe "${common[@]}" -n 2 -duration 12s -json "$OUT/transcribe.json"
"${bench[@]}" transcribe "${common[@]}" -n 2 -duration 8s -paced=false -json "$OUT/transcribe-fast.json"
"${bench[@]}" synthesize "${common[@]}" -n 2 -duration 10s -json "$OUT/synthesize.json"

