#!/usr/bin/env bash
# Runs every Fuzz target in the module for FUZZTIME each (make fuzz), one after another.
#   FUZZTIME      how long each target runs (default 30s; go test's -fuzztime: 30s, 1m, 5000x)
#   FUZZ          a regexp: only targets whose name matches (default: all)
#   FUZZPARALLEL  fuzzing workers per target (default: go's, GOMAXPROCS)
#   FUZZMINIMIZE  how long go may shrink each new input that widened coverage (default 1s; go's own
#                 default is 60s, and its inputs are not counted as execs: a target that costs
#                 ~0.5 ms an input, like session.FuzzConversationEvents, read ~1 exec/s while it
#                 ran ~2,000 a second minimizing)
#   FUZZKEEP      1 (default): copy the inputs each run found that widened coverage from go's
#                 cache into the package's testdata/fuzz/<Target>/, so the corpus is kept with the
#                 code (commit it); 0: leave testdata alone.
# A crasher is written by go test to testdata/fuzz/<Target>/ (it then runs as a regression case
# in every go test); the script goes on with the other targets and exits 1 at the end, naming
# every target that failed.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
FUZZ=${FUZZ:-.}
FUZZKEEP=${FUZZKEEP:-1}
FUZZMINIMIZE=${FUZZMINIMIZE:-1s}
parallel=()
[[ -n "${FUZZPARALLEL:-}" ]] && parallel=(-parallel "$FUZZPARALLEL")
cache="$($GO env GOCACHE)/fuzz"
module=$($GO list -m)

failed=()
flaked=()
ran=0
while read -r dir; do
	pkg="$module/${dir#./}"
	[[ "$dir" == "." ]] && pkg=$module
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | cut -d' ' -f2 | sort -u); do
		[[ "$target" =~ $FUZZ ]] || continue
		echo "== $pkg $target ($FUZZTIME)"
		ran=$((ran + 1))
		# Only what this run found: the cache is shared by every checkout of this user, whose
		# targets may take other arguments.
		stamp=$(mktemp)
		seeds="$dir/testdata/fuzz/$target"
		had=$(ls "$seeds" 2>/dev/null | sort)
		out=$(mktemp)
		if ! $GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZE" "${parallel[@]}" "$dir" 2>&1 | tee "$out"; then
			# Go's coordinator can fail a run with a bare "context deadline exceeded" as -fuzztime
			# ends (golang/go#75804, fixed in Go 1.27): no crasher is written then. A run that
			# wrote one, or failed any other way, is a failure.
			if [[ "$(ls "$seeds" 2>/dev/null | sort)" == "$had" ]] && grep -q '^    context deadline exceeded$' "$out" &&
				! grep -q 'Failing input written' "$out"; then
				flaked+=("$pkg $target")
			else
				failed+=("$pkg $target")
			fi
		fi
		rm -f "$out"
		if [[ "$FUZZKEEP" == 1 && -d "$cache/$pkg/$target" ]]; then
			mkdir -p "$dir/testdata/fuzz/$target"
			kept=0
			while read -r f; do
				[[ -e "$dir/testdata/fuzz/$target/$(basename "$f")" ]] && continue
				cp "$f" "$dir/testdata/fuzz/$target/" && kept=$((kept + 1))
			done < <(find "$cache/$pkg/$target" -type f -newer "$stamp")
			rmdir "$dir/testdata/fuzz/$target" 2>/dev/null
			echo "   corpus: $kept new entries copied to $dir/testdata/fuzz/$target"
		fi
		rm -f "$stamp"
	done
done < <(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '^./third_party/' | xargs -n1 dirname | sort -u)

echo "== $ran fuzz targets, $FUZZTIME each: ${#failed[@]} failed, ${#flaked[@]} ended by go's fuzztime race (no crasher)"
for f in "${flaked[@]}"; do echo "   deadline race, no crasher: $f"; done
for f in "${failed[@]}"; do echo "   FAILED: $f (its crasher is under testdata/fuzz: see go test's output above)"; done
[[ ${#failed[@]} -eq 0 ]]
