-- obook_twas: time-weighted average spread per ticker.
--   Each BBO row's spread holds from its time until the ticker's next BBO row (feed order),
--   the last one until end_time. Intervals are clipped to [start_time, end_time];
--   start_time defaults to the ticker's first row, end_time to the last BBO time of the
--   whole feed. Time with an empty side (no spread) counts in neither sum.
--   quoted_time  UBIGINT  time (feed units) with both sides quoted, inside the window
--   updates      BIGINT   BBO rows of the ticker with both sides quoted
--   twas_ticks   DOUBLE   sum(spread_ticks * duration) / quoted_time: an average, so DOUBLE
--   twas         DOUBLE   the same in the feed's currency (twas_ticks / the feed's price_scale)
--   min_spread_ticks, max_spread_ticks  BIGINT  over the rows that carry weight, exact
CREATE OR REPLACE TEMP MACRO obook_twas(path, start_time := NULL, end_time := NULL,
                                        workers := NULL, format := NULL, on_error := 'raise',
                                        date := NULL, tickers := NULL) AS TABLE
WITH b AS MATERIALIZED (
    SELECT seq, time, ticker, ask_px - bid_px AS spread_ticks
    FROM obook_bbo(path, workers := workers, format := format, on_error := on_error, date := date,
                   tickers := tickers)
),
u AS (
    SELECT CAST(obook_unit(to_json(path), format, 'price_scale') AS DOUBLE) AS scale
),
win AS (
    SELECT CAST(start_time AS HUGEINT) AS t0,
           CAST(coalesce(end_time, max(time)) AS HUGEINT) AS t1
    FROM b
),
iv AS (
    SELECT b.ticker, b.spread_ticks,
           greatest(0, least(coalesce(CAST(lead(b.time) OVER w AS HUGEINT), win.t1), win.t1)
                       - greatest(CAST(b.time AS HUGEINT), coalesce(win.t0, 0))) AS dur
    FROM b, win
    WINDOW w AS (PARTITION BY b.ticker ORDER BY b.seq)
)
SELECT
    ticker,
    CAST(coalesce(sum(dur) FILTER (WHERE spread_ticks IS NOT NULL), 0) AS UBIGINT) AS quoted_time,
    count(*) FILTER (WHERE spread_ticks IS NOT NULL) AS updates,
    CAST(sum(spread_ticks * dur) FILTER (WHERE spread_ticks IS NOT NULL) AS DOUBLE)
        / CAST(nullif(sum(dur) FILTER (WHERE spread_ticks IS NOT NULL), 0) AS DOUBLE) AS twas_ticks,
    twas_ticks / any_value(u.scale) AS twas,
    min(spread_ticks) FILTER (WHERE spread_ticks IS NOT NULL AND dur > 0) AS min_spread_ticks,
    max(spread_ticks) FILTER (WHERE spread_ticks IS NOT NULL AND dur > 0) AS max_spread_ticks
FROM iv, u
GROUP BY ticker
ORDER BY ticker;
