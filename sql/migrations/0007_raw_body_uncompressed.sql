-- raw_responses.body holds zstd-compressed bodies, which DuckDB cannot make smaller. Left to
-- choose, DuckDB still tries dictionary and FSST compression on the column at every
-- checkpoint of the table's last, partly filled row group (up to 122,880 bodies), and that
-- analysis allocates outside memory_limit in proportion to the bodies held there: a run of
-- 100,000 domains peaked at 527 MB, and at 383 MB with the column stored uncompressed (the
-- file is the same size; docs/warehouse-internals.md, "Memory"). DuckDB 1.1 cannot change a
-- column's compression in place, so the table is copied once, in this migration's
-- transaction. The column order and constraints are those of 0001 and 0003.
CREATE TABLE raw_responses_0007 (
    snapshot_month VARCHAR NOT NULL,
    domain         VARCHAR NOT NULL,
    endpoint       VARCHAR NOT NULL,
    fetched_at     TIMESTAMP NOT NULL,
    body           BLOB NOT NULL USING COMPRESSION uncompressed,
    body_encoding  VARCHAR NOT NULL,
    run_id         VARCHAR
);

INSERT INTO raw_responses_0007
SELECT snapshot_month, domain, endpoint, fetched_at, body, body_encoding, run_id FROM raw_responses;

DROP TABLE raw_responses;

ALTER TABLE raw_responses_0007 RENAME TO raw_responses;

-- A new table has no comments: these repeat those of 0002 and 0003.

COMMENT ON TABLE raw_responses IS 'Every successful API response body exactly as received; derived tables are rebuilt from it by `sitewatch rebuild`. Never contains API keys.';
COMMENT ON COLUMN raw_responses.snapshot_month IS 'Snapshot the response belongs to (YYYY-MM).';
COMMENT ON COLUMN raw_responses.domain IS 'Normalized watchlist domain; empty string for country-metadata.';
COMMENT ON COLUMN raw_responses.endpoint IS 'Operation called: site-overview, site-similar or country-metadata.';
COMMENT ON COLUMN raw_responses.fetched_at IS 'When the response was received (TIMESTAMP, UTC).';
COMMENT ON COLUMN raw_responses.body IS 'Response body exactly as received, compressed as body_encoding says (BLOB); sitewatch rebuild and Warehouse.RawBody decompress it.';
COMMENT ON COLUMN raw_responses.body_encoding IS 'Compression of body: zstd (the default) or identity (stored as received).';
COMMENT ON COLUMN raw_responses.run_id IS 'Run that fetched the body (runs.run_id); NULL for bodies stored before the ledger existed or by callers without a run.';
