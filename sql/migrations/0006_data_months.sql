-- Snapshots are data months (see docs/design.md). Before this version a snapshot was labelled
-- with the wall-clock month of the run, so a run early in a month could store the API's
-- previous month under the new label. This records, once, what the existing rows say of their
-- data months; rows loaded from now on are stored under their data month by construction.
CREATE TABLE snapshot_data_months (
    snapshot_month VARCHAR NOT NULL,
    data_month VARCHAR,
    domains INTEGER NOT NULL,
    recorded_at TIMESTAMP NOT NULL
);

INSERT INTO snapshot_data_months
SELECT snapshot_month,
       coalesce(traffic_period, strftime(snapshot_date, '%Y-%m')) AS data_month,
       count(*) AS domains,
       now()::TIMESTAMP AS recorded_at
FROM sites
GROUP BY ALL;

COMMENT ON TABLE snapshot_data_months IS 'What the rows held when sitewatch began storing snapshots under the API''s data month: per snapshot label, the data months its sites rows say they are for (traffic.period, else the month of snapshot_date). A row whose data_month differs from snapshot_month is a copy stored under the wrong label by an older version. Written once by migration 0006; empty for warehouses created after it.';
COMMENT ON COLUMN snapshot_data_months.snapshot_month IS 'The snapshot label the rows are stored under (YYYY-MM).';
COMMENT ON COLUMN snapshot_data_months.data_month IS 'The month the rows'' data is for (YYYY-MM): sites.traffic_period, else the month of sites.snapshot_date; NULL when neither was returned.';
COMMENT ON COLUMN snapshot_data_months.domains IS 'Number of sites rows of that label and data month.';
COMMENT ON COLUMN snapshot_data_months.recorded_at IS 'When the migration recorded it (UTC).';
