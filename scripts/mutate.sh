#!/usr/bin/env bash
# Mutation testing (make mutate; not part of make test) with gremlins over the code where a bug
# costs money or trust: session's tickets, principal, metering and quota; door; meter; the service
# token check in cmd/voiced. Each mutant runs its package's tests; a LIVED mutant is a bug no test
# notices. Results: var/mutate/<name>.json (gremlins' report) and var/mutate/summary.txt.
# Usage: scripts/mutate.sh [name...]   (names: session door meter auth; default all; session is
# session-auth (ticket, tickets_redis, principal, mint) and session-meter (metering), each alone too)
# MUTATE_WORKERS (1) mutants run at once; MUTATE_TIMEOUT (3600 s) per package.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
GREMLINS=github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
bin="$PWD/var/mutate/bin"
out="$PWD/var/mutate"
mkdir -p "$bin" "$out"
eval "$(scripts/test-services.sh 2>/dev/null || true)" # the Redis ticket store's tests
[[ -x "$bin/gremlins" ]] || GOBIN="$bin" "$GO" install "$GREMLINS"

# keep PKG FILE...: an --exclude-files argument for every non-test file of PKG not named.
keep() {
  local pkg=$1 f base args=()
  shift
  for f in "$pkg"/*.go; do
    base=$(basename "$f")
    [[ $base == *_test.go ]] && continue
    [[ " $* " == *" $base "* ]] && continue
    args+=(--exclude-files "(^|/)${base//./\\.}\$") # gremlins matches paths relative to the package
  done
  printf '%s\n' "${args[@]}"
}

# run NAME PKG TESTS ARGS-COMMAND...: TESTS (a -run pattern, or "") narrows the tests each mutant runs.
run() {
  local name=$1 pkg=$2 tests=$3 args=()
  shift 3
  mapfile -t args < <("$@")
  echo "== $name ($pkg)"
  GOFLAGS="${GOFLAGS:-}${tests:+ -run=$tests}" timeout "${MUTATE_TIMEOUT:-3600}" "$bin/gremlins" unleash --workers "${MUTATE_WORKERS:-1}" \
    --timeout-coefficient 3 -o "$out/$name.json" "${args[@]}" "./$pkg" 2>&1 | tee "$out/$name.log" |
    grep -E 'LIVED|TIMED OUT|Killed:|Timed out:|Test efficacy|Mutator coverage' || true
}

names=()
for n in "${@:-session door meter auth}"; do
  for n in $n; do
    [[ $n == session ]] && names+=(session-auth session-meter) || names+=("$n")
  done
done
# Each session mutant runs only the tests of its files (the whole suite runs conversations: minutes).
session_auth_tests='TestVerifier.*|TestReservedSubject|TestMint.*|TestTicketStore.*|TestRedisTickets.*|TestOrgRuleBindsTheTicket|TestOpenAIShapedMint|TestSocketAuth|TestSubprotocolTicketAndEcho|TestPlainGetKeepsTicket|TestJWTNotInQuery|TestPrincipalBuckets'
session_meter_tests='TestConversation.*Meter.*|TestConcurrentRepliesShareQuota|TestBudgetClosesConversation|TestCreatedAudioItemIsMetered|TestMeterWriteOutlivesTheConversation|TestEnginePlayerMetersPlayed|TestHeardAudioSpendsQuota|TestLedger.*'
for n in "${names[@]}"; do
  case $n in
  # session = session-auth (tickets, principal, mint) + session-meter (metering, quota).
  session-auth) run session-auth session "^($session_auth_tests)\$" keep session ticket.go tickets_redis.go principal.go mint.go ;;
  session-meter) run session-meter session "^($session_meter_tests)\$" keep session metering.go ;;
  door) run door door "" true ;;
  meter) run meter meter "" true ;;
  # cmd/voiced's whole suite starts servers (minutes): the service-token check has its own tests.
  auth) run auth cmd/voiced '^(TestBearerServiceToken|TestServiceTokenPrecedence|TestAuthValidate)$' keep cmd/voiced auth.go ;;
  *) echo "unknown package set $n (session session-auth session-meter door meter auth)" >&2; exit 2 ;;
  esac
done
{
  date -u +"%Y-%m-%d %H:%M UTC"
  for n in "${names[@]}"; do
    [[ -f $out/$n.log ]] || continue
    # Counted from the per-mutant lines, so a run cut by MUTATE_TIMEOUT still reports what it did.
    k=$(grep -c '^ *KILLED' "$out/$n.log" || true) l=$(grep -c '^ *LIVED' "$out/$n.log" || true)
    to=$(grep -c '^ *TIMED OUT' "$out/$n.log" || true) nc=$(grep -c '^ *NOT COVERED' "$out/$n.log" || true)
    echo "$n: killed $k, lived $l, timed out $to (counts as caught), not covered $nc;" \
      "score (killed+timed out)/(all covered) $(( (k + to) * 100 / (k + to + l > 0 ? k + to + l : 1) ))%" \
      "$(grep -q 'Test efficacy' "$out/$n.log" || echo '(cut short by MUTATE_TIMEOUT)')"
  done
} | tee "$out/summary.txt"
