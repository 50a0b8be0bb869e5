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
CREATE OR REPLACE TEMP MACRO obook_price(price, feed, format := NULL) AS
    obook_scaled_price(price, CAST(obook_unit(to_json(feed), format, 'price_scale') AS BIGINT));
CREATE OR REPLACE TEMP MACRO obook_ticks(price, feed, format := NULL) AS
    obook_scaled_ticks(CAST(price AS DECIMAL(38, 18)),
                       CAST(obook_unit(to_json(feed), format, 'price_scale') AS BIGINT));
