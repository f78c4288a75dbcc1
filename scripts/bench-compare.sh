#!/usr/bin/env bash
# bench-compare.sh BASE [ROUNDS] — runs benchmarks of BASE (a commit) and of the work tree
# alternately, ROUNDS times each (default 3), and prints each metric's median for both and
# their ratio (work tree ÷ base): a refactor shows "no regression" as ratios near 1 measured in
# one run on one machine, not as figures from different days.
#
# Why alternate: a neighbour that starts halfway would otherwise load one side only.
# Environment: BENCH (a -bench pattern, default the run's scale at 1,000 domains and the
# in-process rebuild: 'BenchmarkRunScale|BenchmarkRebuild$'), PKGS (default ./cmd/sitewatch/
# ./pipeline/warehouse/), SITEWATCH_SCALE_SIZES (default 1000), GO (default go).
# Lower is better for every metric these benchmarks print except rates (calls/s, MB/s): read the
# ratio with the unit.
set -euo pipefail
base=${1:?usage: bench-compare.sh BASE [ROUNDS]} rounds=${2:-3}
GO=${GO:-go}
bench=${BENCH:-'BenchmarkRunScale|BenchmarkRebuild$'}
pkgs=${PKGS:-./cmd/sitewatch/ ./pipeline/warehouse/}
export SITEWATCH_SCALE_SIZES=${SITEWATCH_SCALE_SIZES:-1000}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/base" "$base" >/dev/null
here=$PWD
for ((i = 1; i <= rounds; i++)); do
	for side in base head; do
		dir=$here
		[[ $side == base ]] && dir=$work/base
		echo "round $i/$rounds: $side ($(cut -d' ' -f1-3 /proc/loadavg) load)" >&2
		# shellcheck disable=SC2086 # pkgs is a list
		(cd "$dir" && $GO test -run '^$' -bench "$bench" -benchtime 1x -timeout 60m $pkgs) |
			awk -v side="$side" '/^Benchmark/ { name = $1; sub(/-[0-9]+$/, "", name)
				for (f = 3; f < NF; f += 2) print side, name, $(f + 1), $f }' >>"$work/metrics"
	done
done
# median per (side, benchmark, unit), then the ratio head ÷ base
sort -k1,1 -k2,2 -k3,3 -k4,4g "$work/metrics" | awk '
	{ key = $1 " " $2 " " $3; v[key, ++n[key]] = $4; keys[key] = 1 }
	END { for (k in keys) { c = n[k]; print k, v[k, int((c + 1) / 2)] } }' | sort >"$work/medians"
printf '%-28s %-26s %14s %14s %8s\n' benchmark unit base head "head/base"
awk '$1 == "base" { b[$2 " " $3] = $4 } $1 == "head" { h[$2 " " $3] = $4 }
	END { for (k in b) if (k in h) { split(k, p, " ")
		printf "%-28s %-26s %14.4g %14.4g %8.3f\n", p[1], p[2], b[k], h[k], (b[k] == 0 ? 0 : h[k] / b[k]) } }' "$work/medians" | sort
