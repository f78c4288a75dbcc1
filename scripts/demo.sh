#!/usr/bin/env bash
# make demo: start atlas-sim on loopback, run one snapshot of domains.yaml against it into
# data/, print a short analyst query, stop the simulator. Needs only bin/ (make build).
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
bin/atlas-sim --addr 127.0.0.1:0 --keys demo-key=500 --rate 3 --latency 200ms-800ms \
  --marketplace-host intel.example --marketplace-key demo-listing-key --quota 20 --marketplace-rate 5 >"$log" 2>/dev/null &
sim=$!
trap 'kill $sim 2>/dev/null; wait $sim 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 100); do grep -q '^listening on ' "$log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$log" | head -1)
[[ -n $url ]] || { echo "demo: atlas-sim did not start"; exit 1; }
echo "demo: atlas-sim listening on $url (key demo-key, 500 credits, 3 req/s, 200-800 ms latency)"

export ATLAS_BASE_URL=$url ATLAS_API_KEY=demo-key
bin/sitewatch validate --config domains.yaml || true
bin/sitewatch check --config domains.yaml
bin/sitewatch run --config domains.yaml
echo
echo "demo: latest traffic and AI share per domain (sitewatch query):"
bin/sitewatch query --config domains.yaml "
  SELECT domain, global_rank, round(total_visits / 1e6, 1) AS visits_m,
         round(bounce_rate * 100, 1) AS bounce_pct, round(ai_global_traffic_share * 100, 2) AS ai_share_pct
  FROM latest_sites ORDER BY global_rank NULLS LAST LIMIT 10"
echo
# Two credit sources (docs/sources.md): the same simulator's marketplace listing (a quota of 20
# that resets at the start of next month) and the direct wallet; check prints who would pay.
two=$(mktemp -d)
trap 'kill $sim 2>/dev/null; wait $sim 2>/dev/null; rm -rf "$log" "$two"' EXIT
{
  printf 'api:\n  sources:\n'
  printf '    - {name: marketplace, mode: marketplace, base_url: %s, marketplace_host: intel.example, marketplace_key_env: DEMO_LISTING_KEY, rate_limit: 5}\n' "$url"
  printf '    - {name: direct, mode: direct, base_url: %s, key_env: ATLAS_API_KEY, rate_limit: 3}\n' "$url"
  printf 'domains:\n'
  sed -n 's/^  - /  - /p' domains.yaml
} >"$two/domains.yaml"
echo "demo: two credit sources, a marketplace quota and direct credits (sitewatch check, 0 credits):"
# The config names each source's base_url, so ATLAS_BASE_URL (which would replace them all and
# make check warn about the override) is left out here.
env -u ATLAS_BASE_URL DEMO_LISTING_KEY=demo-listing-key bin/sitewatch check --config "$two/domains.yaml" || true
echo
echo "demo: warehouse at data/sitewatch.duckdb, Parquet under data/parquet/; try: bin/sitewatch status"
