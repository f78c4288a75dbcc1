-- The stored lists' source checksums are rows_checksum (sql/views/_checksum.sql) since the views
-- of this release: a bit_xor of hash() missed two rows whose last column moved alike, and two
-- equal rows. A list stored under the old checksum no longer matches and is computed at the read
-- until a writer stores it again; these describe the columns as they now are.
COMMENT ON COLUMN attention_visit_sources.checksum IS 'rows_checksum(hash(domain, month, visits)) over those rows (sql/views/_checksum.sql; 0 when none): with row_count, tells whether the history changed since.';
COMMENT ON COLUMN attention_month_stat_sources.checksum IS 'rows_checksum of a hash of the columns the statistics read, over those rows (sql/views/_checksum.sql; 0 when none).';
COMMENT ON COLUMN attention_list_sources.checksum IS 'rows_checksum of a hash of the columns the list reads, over those rows (sql/views/_checksum.sql; 0 when none); definition: hash of the views stamp.';
COMMENT ON COLUMN changes_cached_sources.checksum IS 'rows_checksum of hash() of the columns the lists read, over those rows (sql/views/_checksum.sql): with row_count, tells whether the table changed since.';
