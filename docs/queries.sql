-- Ready analyst queries against the sitewatch views. Each is tested on a fixed dataset by
-- pipeline/report (TestReadyQueries). Run one with: sitewatch query "<SQL>"

-- 1. Traffic trend with growth, last 13 months per domain (changes in percent).
SELECT domain, month, visits, round(mom_change * 100, 1) AS mom_pct, round(yoy_change * 100, 1) AS yoy_pct
FROM traffic_monthly
WHERE month >= (SELECT max(month) FROM traffic_monthly) - INTERVAL 12 MONTH
ORDER BY domain, month;

-- 2. Channels where each domain differs most from the watchlist average (latest snapshot).
SELECT domain, channel, round(share * 100, 1) AS share_pct, round(watchlist_avg_share * 100, 1) AS avg_pct,
       round(diff_from_avg * 100, 1) AS diff_points
FROM channel_mix
WHERE snapshot_month = (SELECT max(snapshot_month) FROM sites)
ORDER BY abs(diff_from_avg) DESC
LIMIT 20;

-- 3. Top three visitor countries per domain (latest snapshot).
SELECT domain, country_position, coalesce(country_name, country_code) AS country, round(share * 100, 1) AS pct
FROM top_countries
WHERE snapshot_month = (SELECT max(snapshot_month) FROM sites) AND country_position <= 3
ORDER BY domain, country_position;

-- 4. Estimated AI-assistant visits by platform, per month, over the whole watchlist.
SELECT month, platform, round(sum(estimated_visits)) AS estimated_visits, round(avg(share_pct), 1) AS avg_share_pct
FROM ai_platform_trend
GROUP BY month, platform
ORDER BY month DESC, estimated_visits DESC;

-- 5. Competitors not yet on the watchlist, by how many watchlist domains list them (latest snapshot).
SELECT competitor, count(*) AS listed_by, max(competitor_total_visits) AS visits, min(competitor_global_rank) AS global_rank
FROM competitors
WHERE snapshot_month = (SELECT max(snapshot_month) FROM sites) AND NOT competitor_on_watchlist
GROUP BY competitor
ORDER BY listed_by DESC, visits DESC NULLS LAST
LIMIT 20;
