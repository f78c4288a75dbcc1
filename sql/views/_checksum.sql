-- rows_checksum(row_hash): an order-free checksum of a group's rows, for the sources of the
-- stored lists (changes_cache_sources, the attention_*_sources): a stored list is read only while
-- each source's row count and checksum are what they were when it was stored. Called as
-- rows_checksum(hash(a, b, c)) in place of an aggregate.
--
-- Why not bit_xor(hash(a, b, c)): DuckDB's hash() of several values XORs the last value's hash
-- into the mix of the others, so under bit_xor two rows whose last column moved alike cancel
-- (two countries of a domain both 0.175 -> 0.475: seed 699888 of TestStaleStoredListsNeverRead),
-- and so do two equal rows, whatever they hold. Here each row's hash is hashed again (a 64-bit
-- mix, not linear in XOR) and the terms are added modulo 2^64: a change goes unseen only by a
-- 64-bit coincidence. NULL over no rows, as bit_xor was.
CREATE OR REPLACE MACRO rows_checksum(row_hash) AS
    CAST(sum(hash(row_hash)) % 18446744073709551616 AS UBIGINT);
