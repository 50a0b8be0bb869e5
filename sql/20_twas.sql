-- obook_twas: time-weighted average spread per ticker (per file and ticker for several files).
--   Each BBO row's spread holds from its time until the ticker's next BBO row (feed order),
--   the last one until end_time. Intervals are clipped to [start_time, end_time];
--   start_time defaults to the ticker's first row, end_time to the last BBO time of the
--   feed file (of the tickers replayed, with tickers :=). Time with an empty side (no
--   spread) counts in neither sum. A window of no BBO row of a file (start_time after its
--   last BBO time with end_time defaulted, end_time before its first) is an error.
--   quoted_time  UBIGINT  time (feed units) with both sides quoted, inside the window: a
--                         duration, no time of day (obook_time_of_day does not apply)
--   updates      BIGINT   BBO rows of the ticker with both sides quoted, inside the window
--   twas_ticks   DOUBLE   sum(spread_ticks * duration) / quoted_time: an average, so DOUBLE
--   twas         DOUBLE   the same in the feed's currency (twas_ticks / the feed's price_scale)
--   min_spread_ticks, max_spread_ticks  BIGINT  over the rows that carry weight, exact
--   prices := 'int' | 'decimal' | 'float'   accepted as by obook_bbo (the columns are the same)
--   filename := true     a last column `filename`: the feed file of the row
CREATE OR REPLACE TEMP MACRO obook_twas(path, __by_position := NULL, start_time := NULL, end_time := NULL,
                                        workers := NULL, format := NULL, on_error := 'raise',
                                        date := NULL, tickers := NULL, prices := 'int',
                                        filename := false) AS TABLE
WITH u AS (
    SELECT CAST(obook_unit(to_json(path), format, 'price_scale') AS BIGINT) AS scale
),
b AS MATERIALIZED (
    SELECT b.seq, __obook_bbo_time(b.time, b.filename, 'obook_twas') AS time, b.ticker, b.filename AS file,
           CAST(round(b.ask_px * CASE WHEN coalesce(lower(prices), 'int') = 'int' THEN 1 ELSE u.scale END) AS BIGINT)
           - CAST(round(b.bid_px * CASE WHEN coalesce(lower(prices), 'int') = 'int' THEN 1 ELSE u.scale END) AS BIGINT)
               AS spread_ticks
    FROM obook_bbo(CASE WHEN __by_position IS NULL THEN path ELSE __obook_by_position(__by_position, 'obook_twas', 'path', 'start_time, end_time, workers, format, on_error, date, tickers, prices, filename') END, workers := workers, format := format, on_error := on_error, date := date,
                   tickers := tickers, prices := prices, filename := true) AS b, u
),
given AS (   -- feed times: integers, at least 0 (1.5 or 'x' is an error, never rounded)
    SELECT __obook_feed_time(start_time, 'obook_twas: start_time') AS first_time,
           __obook_feed_time(end_time, 'obook_twas: end_time') AS last_time
),
opt AS (   -- start_time after end_time is an error, not rows of nothing
    SELECT first_time, last_time FROM given
    WHERE __obook_window(first_time, last_time, 'obook_twas') AND __obook_flag(filename, 'obook_twas: filename')
),
win AS (   -- a window of no BBO row is an error, as in Python (obook.analytics)
    SELECT file,
           CAST(any_value(opt.first_time) AS HUGEINT) AS t0,
           CAST(CASE
               WHEN any_value(opt.last_time) IS NULL AND any_value(opt.first_time) > max(time)
               THEN error('obook_twas: start_time ' || CAST(any_value(opt.first_time) AS VARCHAR)
                          || ' is after the last BBO time ' || CAST(max(time) AS VARCHAR) || ' of ' || file
                          || ' (the default end_time): the window is empty; give an end_time, or an '
                          || 'earlier start_time')
               WHEN any_value(opt.last_time) < min(time)
               THEN error('obook_twas: end_time ' || CAST(any_value(opt.last_time) AS VARCHAR)
                          || ' is before the first BBO time ' || CAST(min(time) AS VARCHAR) || ' of ' || file
                          || ': the window holds no quote; give a later end_time')
               ELSE coalesce(any_value(opt.last_time), max(time))
           END AS HUGEINT) AS t1
    FROM b, opt
    GROUP BY file
),
iv AS (
    SELECT b.file, b.ticker, b.spread_ticks,
           CAST(b.time AS HUGEINT) BETWEEN coalesce(win.t0, 0) AND win.t1 AS inside,
           greatest(0, least(coalesce(CAST(lead(b.time) OVER w AS HUGEINT), win.t1), win.t1)
                       - greatest(CAST(b.time AS HUGEINT), coalesce(win.t0, 0))) AS dur
    FROM b JOIN win USING (file)
    WINDOW w AS (PARTITION BY b.file, b.ticker ORDER BY b.seq)
),
t AS (
    SELECT
        ticker,
        CAST(coalesce(sum(dur) FILTER (WHERE spread_ticks IS NOT NULL), 0) AS UBIGINT) AS quoted_time,
        count(*) FILTER (WHERE spread_ticks IS NOT NULL AND inside) AS updates,
        CAST(sum(spread_ticks * dur) FILTER (WHERE spread_ticks IS NOT NULL) AS DOUBLE)
            / CAST(nullif(sum(dur) FILTER (WHERE spread_ticks IS NOT NULL), 0) AS DOUBLE) AS twas_ticks,
        twas_ticks / CAST(any_value(u.scale) AS DOUBLE) AS twas,
        min(spread_ticks) FILTER (WHERE spread_ticks IS NOT NULL AND dur > 0) AS min_spread_ticks,
        max(spread_ticks) FILTER (WHERE spread_ticks IS NOT NULL AND dur > 0) AS max_spread_ticks,
        file AS filename
    FROM iv, u
    GROUP BY file, ticker
)
SELECT COLUMNS(lambda c: c != 'filename' OR coalesce(TRY_CAST(CAST(filename AS VARCHAR) AS BOOLEAN), false))
FROM t
ORDER BY t.filename, t.ticker;
