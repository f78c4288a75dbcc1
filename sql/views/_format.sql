-- Number style of the words the views write (reasons), the same rules as pipeline/numfmt
-- (docs/report.md, "Number style"), so a reason reads like the report and the terminal:
--   fmt_count(n)  a count with 3 significant digits and a suffix: 950, 12.3k, 4.56M, 1.00B;
--                 whole below 1,000; the typographic minus for a negative count; '—' for NULL.
--   fmt_rank(r)   '#' and thousands separators: #314,815; '—' for NULL.

CREATE OR REPLACE MACRO fmt_sig3(v) AS
    CASE WHEN v < 9.995 THEN printf('%.2f', v) WHEN v < 99.95 THEN printf('%.1f', v) ELSE printf('%.0f', v) END;

CREATE OR REPLACE MACRO fmt_count(n) AS
    CASE
        WHEN n IS NULL THEN '—'
        ELSE CASE WHEN round(n) < 0 THEN '−' ELSE '' END
             || CASE
                    WHEN abs(n) < 999.5 THEN printf('%d', CAST(abs(round(n)) AS BIGINT))
                    WHEN abs(n) < 999.5e3 THEN fmt_sig3(abs(n) / 1e3) || 'k'
                    WHEN abs(n) < 999.5e6 THEN fmt_sig3(abs(n) / 1e6) || 'M'
                    WHEN abs(n) < 999.5e9 THEN fmt_sig3(abs(n) / 1e9) || 'B'
                    ELSE fmt_sig3(abs(n) / 1e12) || 'T'
                END
    END;

CREATE OR REPLACE MACRO fmt_rank(r) AS
    CASE WHEN r IS NULL THEN '—' ELSE '#' || printf('%,d', CAST(r AS BIGINT)) END;
