-- obook_spread: every BBO row with its spread and mid.
--   spread_ticks  BIGINT         ask_px - bid_px in 1/10000 $ (NULL when a side is empty;
--                                negative when the book is crossed, reported as it is)
--   spread        DECIMAL(18,4)  the same in dollars, exact
--   mid           DECIMAL(18,5)  (bid + ask) / 2 in dollars, exact (half a tick needs a 5th decimal)
CREATE OR REPLACE TEMP MACRO obook_spread(path, workers := NULL, format := NULL, on_error := 'raise') AS TABLE
SELECT
    b.*,
    b.ask_px - b.bid_px AS spread_ticks,
    obook_price(b.ask_px - b.bid_px) AS spread,
    CAST(CAST(b.bid_px + b.ask_px AS DECIMAL(18, 0)) * 0.00005 AS DECIMAL(18, 5)) AS mid
FROM obook_bbo(path, workers := workers, format := format, on_error := on_error) AS b;
