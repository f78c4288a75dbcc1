#!/usr/bin/env bash
# test-shards.sh SHARDS PACKAGE [go test build flags…] — runs one package's tests as SHARDS
# processes side by side, each a share of its test list, and fails if any shard fails.
#
# Why: many of cmd/sitewatch's end-to-end tests wait (a lease expiring, a catalog's lock
# timeout, a cron tick, rate limits, retry pauses), one after another, in one process. They
# cannot simply call t.Parallel(): the AWS SDK and the Iceberg catalog read their credentials
# from the process environment, which the tests set with t.Setenv. Separate processes each
# have their own environment, so the tests run unchanged, SHARDS at a time.
#
# The test binary is built once (with the given flags, e.g. -race) and the sitewatch binary
# the end-to-end tests start is built once for all shards (SITEWATCH_TEST_BINARY). Tests are
# dealt longest first, each to the shard with the least work so far, by the seconds a measured
# run took (TEST_SECONDS, default scripts/<package dir name>-test-seconds: "seconds name" lines,
# written by `make test-seconds`, to hundredths; a test not in it counts as 5 s). Round-robin in file order
# left one of three shards 170 s shorter than the others in CI. Environment: TEST_TIMEOUT
# (default 40m), TEST_RUN (a -test.run pattern to restrict the tests, default all),
# TEST_SECONDS_WRITE=1 (run verbose and write the seconds each test took to the seconds file).
set -euo pipefail
shards=$1 pkg=$2
shift 2
go=${GO:-go}
timeout=${TEST_TIMEOUT:-40m}
work=$(mktemp -d "${TMPDIR:-/tmp}/test-shards.XXXXXX")
trap 'rm -rf "$work"' EXIT

dir=$($go list -f '{{.Dir}}' "$pkg")
# The two builds run side by side: once the packages they share are compiled, each is mostly a
# link of DuckDB's static library, one core's work.
binary=""
if [[ $dir == */cmd/sitewatch ]]; then
  (cd "$dir" && $go build -o "$work/sitewatch" .) &
  binary=$!
fi
$go test -c -o "$work/pkg.test" "$@" "$pkg"
if [[ -n $binary ]]; then
  wait "$binary" || { echo "test-shards: go build of the sitewatch binary in $dir failed" >&2; exit 1; }
  export SITEWATCH_TEST_BINARY=$work/sitewatch
fi
mapfile -t tests < <(cd "$dir" && "$work/pkg.test" -test.list "${TEST_RUN:-.}" | grep -E '^(Test|Example)')
if ((${#tests[@]} == 0)); then
  echo "test-shards: no tests in $pkg match ${TEST_RUN:-.}" >&2
  exit 1
fi

# Longest first, each to the least-loaded shard, in hundredths of a second (a test the file
# lacks counts as 5 s). Whole seconds dropped the fractions of the many short tests, so one
# shard got 71 of 165 tests and finished 145 s after the others (CI run 39). Each test also
# counts 2 s more than measured: the seconds are measured with nothing else running, and in
# make test, beside the other passes, a short test's fixed costs (a warehouse's open, its
# migrations, a process start: all CPU) stretch with the load while a long test mostly waits
# on a timer that does not; dealt by the measured seconds alone, the shard of 61 short tests
# ended 90-130 s after the three of 32-38 (run 40: 841 s against 712-752).
seconds_file=${TEST_SECONDS:-$(dirname "$0")/$(basename "$dir")-test-seconds}
declare -A cost=()
if [[ -f $seconds_file ]]; then
  while read -r c name; do cost[$name]=$c; done < <(awk '{ printf "%d %s\n", $1 * 100 + 0.5, $2 }' "$seconds_file")
fi
unknown=500 overhead=200
for t in "${tests[@]}"; do cost[$t]=$((${cost[$t]:-$unknown} + overhead)); done
mapfile -t tests < <(for t in "${tests[@]}"; do echo "${cost[$t]} $t"; done | sort -k1,1nr -k2 | cut -d' ' -f2)
load=() dealt=()
for ((s = 0; s < shards; s++)); do load[s]=0 dealt[s]=""; done
for t in "${tests[@]}"; do
  least=0
  for ((s = 1; s < shards; s++)); do ((load[s] < load[least])) && least=$s; done
  load[least]=$((load[least] + ${cost[$t]}))
  dealt[least]+="${dealt[least]:+|}$t"
done

pids=()
for ((s = 0; s < shards; s++)); do
  [[ -n ${dealt[s]} ]] || continue
  names=()
  IFS='|' read -r -a names <<<"${dealt[s]}"
  pattern="^($(IFS='|'; echo "${names[*]}"))\$"
  (
    cd "$dir"
    start=$SECONDS
    code=0
    "$work/pkg.test" -test.run "$pattern" -test.timeout "$timeout" -test.count 1 ${TEST_SECONDS_WRITE:+-test.v} >"$work/shard$s.out" 2>&1 || code=$?
    echo "$((SECONDS - start))" >"$work/shard$s.secs"
    exit $code
  ) &
  pids+=("$!:$s:${#names[@]}")
done

failed=0
for entry in "${pids[@]}"; do
  IFS=: read -r pid s n <<<"$entry"
  if wait "$pid"; then
    echo "ok   $pkg shard $((s + 1))/$shards: $n tests in $(cat "$work/shard$s.secs") s (dealt $((load[s] / 100)) s: the measured seconds + $((overhead / 100)) s a test)"
  else
    failed=1
    echo "FAIL $pkg shard $((s + 1))/$shards ($n tests):"
    cat "$work/shard$s.out"
  fi
done
if [[ -n ${TEST_SECONDS_WRITE:-} ]] && ((failed == 0)); then
  cat "$work"/shard*.out | sed -nE 's/^--- (PASS|SKIP): ([^ ]+) \(([0-9.]+)s\)$/\3 \2/p' | sort -k1,1gr -k2 >"$seconds_file"
  echo "wrote $(wc -l <"$seconds_file") tests' seconds to $seconds_file"
fi
exit $failed
