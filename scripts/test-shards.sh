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
# dealt round-robin in the order `-test.list` gives (file order), so the long ones of one file
# spread over the shards. Environment: TEST_TIMEOUT (default 40m), TEST_RUN (a -test.run
# pattern to restrict the tests, default all).
set -euo pipefail
shards=$1 pkg=$2
shift 2
go=${GO:-go}
timeout=${TEST_TIMEOUT:-40m}
work=$(mktemp -d "${TMPDIR:-/tmp}/test-shards.XXXXXX")
trap 'rm -rf "$work"' EXIT

dir=$($go list -f '{{.Dir}}' "$pkg")
$go test -c -o "$work/pkg.test" "$@" "$pkg"
if [[ $dir == */cmd/sitewatch ]]; then
  (cd "$dir" && $go build -o "$work/sitewatch" .)
  export SITEWATCH_TEST_BINARY=$work/sitewatch
fi
mapfile -t tests < <(cd "$dir" && "$work/pkg.test" -test.list "${TEST_RUN:-.}" | grep -E '^(Test|Example)')
if ((${#tests[@]} == 0)); then
  echo "test-shards: no tests in $pkg match ${TEST_RUN:-.}" >&2
  exit 1
fi

pids=()
for ((s = 0; s < shards; s++)); do
  names=()
  for ((i = s; i < ${#tests[@]}; i += shards)); do names+=("${tests[i]}"); done
  ((${#names[@]})) || continue
  pattern="^($(IFS='|'; echo "${names[*]}"))\$"
  (
    cd "$dir"
    start=$SECONDS
    code=0
    "$work/pkg.test" -test.run "$pattern" -test.timeout "$timeout" -test.count 1 >"$work/shard$s.out" 2>&1 || code=$?
    echo "$((SECONDS - start))" >"$work/shard$s.secs"
    exit $code
  ) &
  pids+=("$!:$s:${#names[@]}")
done

failed=0
for entry in "${pids[@]}"; do
  IFS=: read -r pid s n <<<"$entry"
  if wait "$pid"; then
    echo "ok   $pkg shard $((s + 1))/$shards: $n tests in $(cat "$work/shard$s.secs") s"
  else
    failed=1
    echo "FAIL $pkg shard $((s + 1))/$shards ($n tests):"
    cat "$work/shard$s.out"
  fi
done
exit $failed
