#!/usr/bin/env bash
# soak.sh: start bin/voiced on a fixture mount on a free loopback port (temp token, data dir and
# JWT secret) and run voiced-bench soak against it: SOAK_CONVERSATIONS (4) conversations plus the
# raw doors for SOAK_DURATION (10m), sampling every SOAK_SAMPLE (5s). Bounded and self-stopping;
# loopback only. Report: $SOAK_OUT (default var/soak)/soak.json and soak.png; exit 1 on FAIL.
# Run through `make soak` (it exports the cgo and library variables).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${VOICED_BIN:-bin/voiced}
OUT=${SOAK_OUT:-var/soak}
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
"$BIN" assets fixture "$tmp/mount" >/dev/null
head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$tmp/token"
head -c 48 /dev/urandom | base64 | tr -d '/+=' >"$tmp/jwt.secret"
conv=${SOAK_CONVERSATIONS:-4}
"$BIN" serve --bind 127.0.0.1:0 --token-file "$tmp/token" --data-dir "$tmp/data" --speech-assets "$tmp/mount" \
	--jwt-secret-file "$tmp/jwt.secret" --max-conversations $((conv * 2)) --max-per-tenant $((conv * 2)) 2>"$tmp/server.log" &
server=$!
addr=""
for _ in $(seq 1 300); do
	addr=$(grep -o 'addr=[0-9.:]*' "$tmp/server.log" | head -1 | cut -d= -f2 || true)
	[[ -n $addr ]] && break
	kill -0 "$server" 2>/dev/null || { cat "$tmp/server.log"; exit 1; }
	sleep 0.1
done
[[ -n $addr ]] || { echo "soak: the server did not report its address"; cat "$tmp/server.log"; exit 1; }
echo "soak: voiced pid $server on http://$addr ($(nproc) CPUs here, shared)"
status=0
"$tmp/voiced-bench" soak -url "http://$addr" -token-file "$tmp/token" -jwt-secret-file "$tmp/jwt.secret" -pid "$server" \
	-conversations "$conv" -duration "${SOAK_DURATION:-10m}" -sample "${SOAK_SAMPLE:-5s}" -timeout 30m \
	-json "$OUT/soak.json" -png "$OUT/soak.png" || status=$?
if grep -q '"level":"ERROR"\|level=ERROR' "$tmp/server.log"; then
	echo "soak: the server logged errors:"; grep 'level=ERROR\|"level":"ERROR"' "$tmp/server.log" | head -20
fi
exit $status
