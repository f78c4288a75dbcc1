#!/usr/bin/env bash
# analyst-surfaces.sh DIR [BIN] — runs each analyst surface once on the warehouse whose config is
# DIR/domains.yaml (a copy of a kept BenchmarkAnalyst warehouse, opened once by a writer so its
# views and stored lists are current) and prints each one's user + system CPU, peak RSS, wall time
# and the load average: the figures of docs/report.md "What a reading command holds".
set -uo pipefail
dir=${1:?usage: analyst-surfaces.sh DIR [BIN]} bin=${2:-sitewatch}
month=${SNAPSHOT:-2026-10}
cd "$dir" || exit 1
t=$(mktemp)
trap 'rm -f "$t"' EXIT
measure() {
	local name=$1
	shift
	/usr/bin/time -f '%U %S %M %e' -o "$t" "$bin" "$@" --config domains.yaml >/dev/null 2>&1
	local rc=$? u s k e
	read -r u s k e <"$t"
	printf '%-16s exit %d  cpu %5.1f s  peak %5d MB  wall %5.1f s  load %s\n' "$name" "$rc" \
		"$(echo "$u + $s" | bc)" $((k / 1024)) "$e" "$(cut -d' ' -f1 /proc/loadavg)"
}
measure changes changes
measure attention query "select count(*) from needs_attention"
measure show show "${SHOW_DOMAIN:-brightriver.com}"
measure show-listed show "${SHOW_LISTED:-brightstack41.io}"
measure discover discover --snapshot "$month"
measure status status
measure report report --snapshot "$month" --out "$dir/report.html" --force
echo "report page: $(($(stat -c %s "$dir/report.html") / 1000)) kB"
