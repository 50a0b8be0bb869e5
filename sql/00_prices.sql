-- obook_price / obook_ticks: a feed's integer prices <-> its currency, exact, on any format.
--   obook_price(price, feed, format := NULL)  DECIMAL(38,9)  price / the feed's price_scale
--   obook_ticks(price, feed, format := NULL)  BIGINT         currency * price_scale, rounded half to
--                                                            even to a whole price unit (a DECIMAL,
--                                                            or a DOUBLE of prices := 'float')
--   feed is the path given to the table macro (a file, a list or a glob pattern); its units
--   (obook_unit: the price_scale of the schema metadata) give the scale (a format := the file is not,
--   whose units differ, is an error). feed may also name
--   Parquet or Arrow files obook wrote (obook convert, a pipeline's dataset: a file, a list or a glob
--   pattern) of integer prices: the units their schema records give it (a file of decimal or float
--   prices, the currency already, is an error).
--   A DECIMAL or DOUBLE price (prices := 'decimal' or 'float': the currency already) is an error
--   saying so; any integer type is taken, up to 64 bits. Another type (true, '12', a DATE) is an error
--   naming the value and its type, never read as a number; so is an obook_ticks price that is not a
--   number, or NaN or infinite. (The __obook_ helpers are those of 05_options.sql: a macro's body
--   binds where it is used.)
CREATE OR REPLACE TEMP MACRO obook_price(price, feed, format := NULL) AS
    CASE WHEN typeof(price) LIKE 'DECIMAL%' OR typeof(price) IN ('DOUBLE', 'FLOAT')
         THEN error('obook_price: the price is a ' || typeof(price) || ', the currency already (prices := '
                    || '''decimal'' or ''float''); it takes the feed''s integer prices (prices := ''int'', '
                    || 'the default)')
         WHEN price IS NULL THEN NULL
         WHEN NOT __obook_integer(price)
         THEN error('obook_price: the price must be one of the feed''s integer prices, not '
                    || __obook_shown(price) || __obook_typed(price))
         WHEN TRY_CAST(price AS BIGINT) IS NULL
         THEN error('obook_price: price ' || CAST(price AS VARCHAR) || ' is beyond 64 bits (a feed''s prices are '
                    || 'BIGINT)')
         ELSE obook_scaled_price(TRY_CAST(price AS BIGINT),
                                 CAST(obook_unit(to_json(feed), format, 'price_scale') AS BIGINT)) END;
CREATE OR REPLACE TEMP MACRO obook_ticks(price, feed, format := NULL) AS
    obook_scaled_ticks(
        CASE WHEN price IS NULL THEN NULL
             WHEN NOT __obook_number(price)
             THEN error('obook_ticks: the price must be a number (the currency), not '
                        || __obook_shown(price) || __obook_typed(price))
             WHEN isnan(TRY_CAST(price AS DOUBLE)) OR isinf(TRY_CAST(price AS DOUBLE))
             THEN error('obook_ticks: price ' || CAST(price AS VARCHAR) || ' is not a finite number')
             -- past DECIMAL(38,18): far past the 2^63 price units of BIGINT at any scale
             WHEN abs(TRY_CAST(price AS DOUBLE)) >= 1e20
             THEN error('obook_ticks: a price of 2^63 price units or more (either sign) does not fit BIGINT')
             ELSE TRY_CAST(price AS DECIMAL(38, 18)) END,
        CAST(obook_unit(to_json(feed), format, 'price_scale') AS BIGINT));
-- obook_time_of_day(time, feed, format := NULL)  TIME  a feed time as the time of day, its unit
--   (obook_unit: 'time_unit_ns') the feed's: ns for ITCH, PITCH, Shanghai and Shenzhen, ms for CSV;
--   feed as for obook_price (Parquet files too: a file that records no units, obook sql --output's,
--   takes those of format := when given). TIME has microseconds: a finer unit is truncated. A feed
--   whose time counts from the epoch (Databento) is an error: its `timestamp` is the instant.
--   obook_time_of_day(time) alone is an error: the unit is the feed's. A time that is not an integer
--   from 0 (1.5, -1, '09:30', a TIME) is an error naming it.
CREATE OR REPLACE TEMP MACRO obook_time_of_day(time) AS
    error('obook_time_of_day(time) needs the feed of the time, e.g. obook_time_of_day(time, ''day.csv''): '
          || 'its unit is the feed''s (ns for ITCH, ms for CSV); or obook_scaled_time(time, time_unit_ns)'),
    (time, feed, format := NULL) AS
    obook_scaled_time(
        CASE WHEN time IS NULL THEN NULL
             WHEN NOT (__obook_integer(time) AND TRY_CAST(time AS UBIGINT) IS NOT NULL)
             -- 1.5 or -1 is no feed time: refused, never rounded to a clock time
             THEN error('obook_time_of_day: the time must be an integer from 0 in the feed''s time unit (ns for '
                        || 'ITCH, ms for CSV), not ' || __obook_not_int(time))
             WHEN TRY_CAST(time AS UBIGINT) > 86400000000000 // __obook_time_unit(feed, format)
             THEN error('obook_time_of_day: time ' || CAST(time AS VARCHAR) || ' is past 24:00:00 in the feed''s '
                        || 'time unit (' || CAST(__obook_time_unit(feed, format) AS VARCHAR) || ' ns): no time of day')
             ELSE TRY_CAST(time AS UBIGINT) END,
        __obook_time_unit(feed, format));
-- __obook_time_unit(feed, format): ns per unit of the feed's time since midnight; a feed whose time
-- counts from the epoch is an error naming its timestamp column.
CREATE OR REPLACE TEMP MACRO __obook_time_unit(feed, format) AS
    CASE WHEN obook_unit(to_json(feed), format, 'time_origin') = 'epoch'
         THEN error('obook_time_of_day: the time of ' || CAST(to_json(feed) AS VARCHAR)
                    || ' counts from the epoch, not midnight: use its timestamp column')
         ELSE CAST(obook_unit(to_json(feed), format, 'time_unit_ns') AS BIGINT) END;
