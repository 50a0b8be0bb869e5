-- obook_bars: OHLCV bars (K-lines) of every ticker's printed trades, any format.
--   interval    the bar length as a DuckDB interval text ('1 minute', '1 second', '5 minutes')
--   A bar covers [start, start + interval) of the feed's own time (ITCH, Shanghai, Shenzhen:
--   ns since midnight; CSV: ms); prices stay exact integers; turnover = sum(price * shares);
--   vwap = turnover / volume (DOUBLE: an average); trades = the count. Broken trades are left out.
CREATE OR REPLACE TEMP MACRO obook_bars(path, interval := '1 minute', workers := NULL, format := NULL,
                                        on_error := 'raise', date := NULL) AS TABLE
WITH t AS (
    SELECT ticker, time, seq, price, shares
    FROM obook_trades(path, workers := workers, format := format, on_error := on_error, date := date)
    WHERE price IS NOT NULL AND NOT broken
),
u AS (
    SELECT greatest(1, CAST(round(epoch(CAST(interval AS INTERVAL)) * 1e9) AS BIGINT)
                       // obook_time_unit_ns(path, format)) AS step
)
SELECT
    t.ticker,
    CAST(t.time // u.step * u.step AS UBIGINT) AS start,
    arg_min(t.price, t.seq) AS open,
    max(t.price) AS high,
    min(t.price) AS low,
    arg_max(t.price, t.seq) AS close,
    CAST(sum(t.shares) AS BIGINT) AS volume,
    CAST(sum(t.price * t.shares) AS BIGINT) AS turnover,
    sum(t.price * t.shares) / sum(t.shares) AS vwap,
    count(*) AS trades
FROM t, u
GROUP BY t.ticker, start
ORDER BY t.ticker, start;
