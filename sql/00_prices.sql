-- obook_price / obook_ticks: a feed's integer prices <-> its currency, exact, on any format.
--   obook_price(price, feed, format := NULL)  DECIMAL(38,9)  price / the feed's price_scale
--   obook_ticks(price, feed, format := NULL)  BIGINT         currency * price_scale, rounded half to
--                                                            even to a whole price unit (a DECIMAL,
--                                                            or a DOUBLE of prices := 'float')
--   feed is the path given to the table macro (a file, a list or a glob pattern); its units
--   (obook_unit: the price_scale of the schema metadata) give the scale. feed may also name
--   Parquet files obook wrote (obook convert, a pipeline's dataset: a file, a list or a glob
--   pattern) of integer prices: the units their schema records give it (a file of decimal or float
--   prices, the currency already, is an error).
--   A DECIMAL or DOUBLE price (prices := 'decimal' or 'float': the currency already) is an error
--   saying so; any integer type is taken.
CREATE OR REPLACE TEMP MACRO obook_price(price, feed, format := NULL) AS
    CASE WHEN typeof(price) LIKE 'DECIMAL%' OR typeof(price) IN ('DOUBLE', 'FLOAT')
         THEN error('obook_price: the price is a ' || typeof(price) || ', the currency already (prices := '
                    || '''decimal'' or ''float''); it takes the feed''s integer prices (prices := ''int'', '
                    || 'the default)')
         ELSE obook_scaled_price(CAST(price AS BIGINT),
                                 CAST(obook_unit(to_json(feed), format, 'price_scale') AS BIGINT)) END;
CREATE OR REPLACE TEMP MACRO obook_ticks(price, feed, format := NULL) AS
    obook_scaled_ticks(CAST(price AS DECIMAL(38, 18)),
                       CAST(obook_unit(to_json(feed), format, 'price_scale') AS BIGINT));
-- obook_time_of_day(time, feed, format := NULL)  TIME  a feed time as the time of day, its unit
--   (obook_unit: 'time_unit_ns') the feed's: ns for ITCH, PITCH, Shanghai and Shenzhen, ms for CSV;
--   feed as for obook_price (Parquet files too: a file that records no units, obook sql --output's,
--   takes those of format := when given). TIME has microseconds: a finer unit is truncated. A feed
--   whose time counts from the epoch (Databento) is an error: its `timestamp` is the instant.
--   obook_time_of_day(time) alone is an error: the unit is the feed's.
CREATE OR REPLACE TEMP MACRO obook_time_of_day(time) AS
    error('obook_time_of_day(time) needs the feed of the time, e.g. obook_time_of_day(time, ''day.csv''): '
          || 'its unit is the feed''s (ns for ITCH, ms for CSV); or obook_scaled_time(time, time_unit_ns)'),
    (time, feed, format := NULL) AS
    obook_scaled_time(CAST(time AS UBIGINT),
        CASE WHEN obook_unit(to_json(feed), format, 'time_origin') = 'epoch'
             THEN error('obook_time_of_day: the time of ' || CAST(to_json(feed) AS VARCHAR)
                        || ' counts from the epoch, not midnight: use its timestamp column')
             ELSE CAST(obook_unit(to_json(feed), format, 'time_unit_ns') AS BIGINT) END);
