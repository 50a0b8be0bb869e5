-- obook_spread: every BBO row with its spread and mid, in the feed's currency, on any format.
--   spread_ticks  BIGINT          ask_px - bid_px in the feed's price integers (NULL when a side is
--                                 empty; negative when the book is crossed, reported as it is)
--   spread        DECIMAL(38,9)   the same in the currency, exact (the scale from the feed's units)
--   mid           DECIMAL(38,10)  (bid + ask) / 2 in the currency, exact
--   prices := 'int' | 'decimal' | 'float'   the BBO's price columns as obook_bbo gives them (spread_ticks,
--                                 spread and mid are the same whichever)
--   filename := true              a last column `filename`: the feed file of each row
--   The price integers come back from decimal prices exactly, from float prices by rounding
--   (exact below 2^51 price units).
CREATE OR REPLACE TEMP MACRO obook_spread(path, __by_position := NULL, workers := NULL, format := NULL, on_error := 'raise',
                                          date := NULL, tickers := NULL, prices := 'int',
                                          filename := false) AS TABLE
WITH u AS (
    SELECT CAST(obook_unit(to_json(path), format, 'price_scale') AS BIGINT) AS scale
),
b AS (
    SELECT b.*,
           CAST(round(b.bid_px * CASE WHEN coalesce(lower(prices), 'int') = 'int' THEN 1 ELSE u.scale END) AS BIGINT) AS __bid,
           CAST(round(b.ask_px * CASE WHEN coalesce(lower(prices), 'int') = 'int' THEN 1 ELSE u.scale END) AS BIGINT) AS __ask,
           -- nano-currency units per price integer: 10^9 / price_scale
           CAST(1000000000 // u.scale AS HUGEINT) AS __nano
    FROM obook_bbo(CASE WHEN __by_position IS NULL THEN path ELSE __obook_by_position(__by_position, 'obook_spread', 'path', 'workers, format, on_error, date, tickers, prices, filename') END, workers := workers, format := format, on_error := on_error, date := date,
                   tickers := tickers, prices := prices, filename := filename) AS b, u
),
s AS (
    SELECT
        COLUMNS(lambda c: c NOT IN ('__bid', '__ask', '__nano')),
        __ask - __bid AS spread_ticks,
        CAST((CAST(__ask AS HUGEINT) - __bid) * __nano AS DECIMAL(38, 0)) * 0.000000001 AS spread,
        CAST((CAST(__bid AS HUGEINT) + __ask) * __nano AS DECIMAL(38, 0)) * 0.0000000005 AS mid
    FROM b
)
-- the BBO's columns, the spread's, then filename (when asked): a union by name puts a
-- column the first part lacks last
FROM (SELECT COLUMNS(lambda c: c != 'filename') FROM s LIMIT 0)
UNION ALL BY NAME
FROM s;
