-- channel_mix: each domain's traffic share per channel beside the watchlist's average share
-- for that channel in the same snapshot.
CREATE OR REPLACE VIEW channel_mix AS
SELECT
    snapshot_month,
    domain,
    channel,
    share,
    avg(share) OVER w AS watchlist_avg_share,
    share - avg(share) OVER w AS diff_from_avg,
    count(share) OVER w AS watchlist_domains
FROM sources_share
WINDOW w AS (PARTITION BY snapshot_month, channel);

COMMENT ON VIEW channel_mix IS 'Traffic share by channel per domain and snapshot, next to the average over the watchlist domains loaded in that snapshot. All shares are decimals 0-1.';
COMMENT ON COLUMN channel_mix.snapshot_month IS 'Snapshot (YYYY-MM).';
COMMENT ON COLUMN channel_mix.domain IS 'Normalized watchlist domain.';
COMMENT ON COLUMN channel_mix.channel IS 'Channel: direct, organic_search, paid_search, organic_social, paid_social, email, referrals, generative_ai, affiliate or display_ads.';
COMMENT ON COLUMN channel_mix.share IS 'Decimal share 0-1 of the domain''s visits from the channel (estimate).';
COMMENT ON COLUMN channel_mix.watchlist_avg_share IS 'Unweighted mean of share over the watchlist domains with a value for this channel in this snapshot (decimal 0-1).';
COMMENT ON COLUMN channel_mix.diff_from_avg IS 'share - watchlist_avg_share, in decimal share points (0.05 = 5 percentage points above average).';
COMMENT ON COLUMN channel_mix.watchlist_domains IS 'Number of domains the average is taken over (count).';
