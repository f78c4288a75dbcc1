-- latest_sites: each domain's row from its newest snapshot.
CREATE OR REPLACE VIEW latest_sites AS
SELECT *
FROM sites
QUALIFY row_number() OVER (PARTITION BY domain ORDER BY snapshot_month DESC) = 1;
