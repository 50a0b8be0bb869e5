-- obook_bbo_grid: the BBO of every ticker sampled on a regular time grid (ASOF join).
--   every       grid step in feed time units (obook_unit(path, format, 'time_unit_ns') ns each:
--               ITCH, Shanghai, Shenzhen, Databento ns; CSV ms), a positive integer
--   start_time  first grid point; default: the feed's first BBO time rounded up to a multiple of every
--   end_time    last grid point (inclusive); default: the feed's last BBO time
--   For each (ticker, grid time) the row holds the ticker's last BBO at or before that time
--   (the row of the highest seq among rows sharing a time); before the ticker's first BBO
--   the quote columns are NULL. quote_seq / quote_time say which BBO row was picked.
--   The columns are the BBO's (the book key is the format's: locate, instrument_id ...), prices
--   and quantities exact integers in the feed's units as in obook_bbo.
CREATE OR REPLACE TEMP MACRO obook_bbo_grid(path, every, start_time := NULL, end_time := NULL,
                                            workers := NULL, format := NULL, on_error := 'raise',
                                            date := NULL, tickers := NULL) AS TABLE
WITH b AS MATERIALIZED (
    SELECT COLUMNS(lambda c: c NOT IN ('seq', 'time', 'ticker', 'timestamp')),
           seq AS quote_seq, time AS quote_time, ticker AS quote_ticker
    FROM obook_bbo(path, workers := workers, format := format, on_error := on_error, date := date,
                   tickers := tickers)
    QUALIFY row_number() OVER (PARTITION BY ticker, time ORDER BY seq DESC) = 1
),
step AS (
    SELECT CASE WHEN every > 0 THEN CAST(every AS UBIGINT)
                ELSE error('obook_bbo_grid: every must be a positive integer, not ' || coalesce(CAST(every AS VARCHAR), 'NULL'))
           END AS every
),
bounds AS (
    SELECT CAST(coalesce(start_time, ((min(quote_time) + step.every - 1) // step.every) * step.every) AS BIGINT) AS t0,
           CAST(coalesce(end_time, max(quote_time)) AS BIGINT) AS t1
    FROM b, step
    GROUP BY step.every
),
grid AS (
    SELECT CAST(unnest(generate_series(t0, t1, CAST(every AS BIGINT))) AS UBIGINT) AS time
    FROM bounds
    WHERE t0 IS NOT NULL AND t1 IS NOT NULL
),
g AS (
    SELECT t.ticker, grid.time FROM (SELECT DISTINCT quote_ticker AS ticker FROM b) AS t CROSS JOIN grid
)
SELECT g.time, g.ticker, b.* EXCLUDE (quote_ticker)
FROM g ASOF LEFT JOIN b ON g.ticker = b.quote_ticker AND g.time >= b.quote_time
ORDER BY g.ticker, g.time;
