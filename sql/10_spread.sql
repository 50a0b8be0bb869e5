-- obook_spread: every BBO row with its spread and mid, in the feed's currency, on any format.
--   spread_ticks  BIGINT          ask_px - bid_px in the feed's price integers (NULL when a side is
--                                 empty; negative when the book is crossed, reported as it is)
--   spread        DECIMAL(38,9)   the same in the currency, exact (the scale from the feed's units)
--   mid           DECIMAL(38,10)  (bid + ask) / 2 in the currency, exact
CREATE OR REPLACE TEMP MACRO obook_spread(path, workers := NULL, format := NULL, on_error := 'raise',
                                          date := NULL, tickers := NULL) AS TABLE
WITH u AS (
    -- nano-currency units per price integer: 10^9 / price_scale
    SELECT CAST(1000000000 // CAST(obook_unit(to_json(path), format, 'price_scale') AS BIGINT) AS HUGEINT) AS nano
)
SELECT
    b.*,
    b.ask_px - b.bid_px AS spread_ticks,
    CAST((CAST(b.ask_px AS HUGEINT) - b.bid_px) * u.nano AS DECIMAL(38, 0)) * 0.000000001 AS spread,
    CAST((CAST(b.bid_px AS HUGEINT) + b.ask_px) * u.nano AS DECIMAL(38, 0)) * 0.0000000005 AS mid
FROM obook_bbo(path, workers := workers, format := format, on_error := on_error, date := date,
               tickers := tickers) AS b, u;
