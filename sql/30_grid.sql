-- obook_bbo_grid: the BBO of every ticker sampled on a regular time grid (ASOF join).
--   every       grid step in feed time units (obook_unit(path, format, 'time_unit_ns') ns each:
--               ITCH, Shanghai, Shenzhen, Databento ns; CSV ms), a positive integer
--   start_time  first grid point; default: the feed file's first BBO time rounded up to a multiple of every
--   end_time    last grid point (inclusive); default: the feed file's last BBO time
--   For each (ticker, grid time) the row holds the ticker's last BBO at or before that time
--   (the row of the highest seq among rows sharing a time); before the ticker's first BBO
--   the quote columns are NULL. quote_seq / quote_time say which BBO row was picked.
--   The columns are the BBO's (the book key is the format's: locate, instrument_id ...), prices
--   as obook_bbo gives them (prices := 'int' | 'decimal' | 'float') and quantities exact integers
--   in the feed's units. filename := true: a last column `filename`, the feed file of the row;
--   several files are gridded each on its own. With a session date (date :=, a Nasdaq file
--   name, an epoch format) `timestamp` after `time` is the grid point's instant (UTC).
CREATE OR REPLACE TEMP MACRO obook_bbo_grid(path, every, __by_position := NULL, start_time := NULL, end_time := NULL,
                                            workers := NULL, format := NULL, on_error := 'raise',
                                            date := NULL, tickers := NULL, prices := 'int',
                                            filename := false) AS TABLE
WITH b AS MATERIALIZED (
    -- the BBO's columns; with a session date also its `timestamp` (else __no_stamp alone: a column
    -- list that may be empty is an error), which places the file's midnight
    SELECT COLUMNS(lambda c: c NOT IN ('seq', 'time', 'ticker', 'filename')),
           q.seq AS quote_seq, __obook_bbo_time(q.time, q.filename, 'obook_bbo_grid') AS quote_time,
           q.ticker AS quote_ticker, q.filename AS quote_file
    FROM (SELECT *, CAST(NULL AS TIMESTAMPTZ_NS) AS __no_stamp
          FROM obook_bbo(CASE WHEN __by_position IS NULL THEN path ELSE __obook_by_position(__by_position, 'obook_bbo_grid', 'path, every', 'start_time, end_time, workers, format, on_error, date, tickers, prices, filename') END, workers := workers, format := format, on_error := on_error, date := date,
                         tickers := tickers, prices := prices, filename := true)) AS q
    QUALIFY row_number() OVER (PARTITION BY q.filename, q.ticker, q.time ORDER BY q.seq DESC) = 1
),
given AS (   -- integers only: 1.5, 2.0, '5' or true is an error, never rounded
    SELECT CASE WHEN __obook_integer(every) AND TRY_CAST(every AS BIGINT) > 0
                THEN TRY_CAST(every AS UBIGINT)
                ELSE error('obook_bbo_grid: every must be a positive integer up to 2^63 - 1, not '
                           || __obook_not_int(every))
           END AS every,
           __obook_feed_time(start_time, 'obook_bbo_grid: start_time') AS first_time,
           __obook_feed_time(end_time, 'obook_bbo_grid: end_time') AS last_time
),
step AS (   -- start_time after end_time is an error, not an empty grid
    SELECT * FROM given
    WHERE __obook_window(first_time, last_time, 'obook_bbo_grid') AND __obook_flag(filename, 'obook_bbo_grid: filename')
),
bounds AS (
    SELECT quote_file AS file,
           CAST(coalesce(any_value(step.first_time), ((min(quote_time) + any_value(step.every) - 1) // any_value(step.every))
                                     * any_value(step.every)) AS BIGINT) AS t0,
           CAST(coalesce(any_value(step.last_time), max(quote_time)) AS BIGINT) AS t1,
           CAST(any_value(step.every) AS BIGINT) AS step_size,
           count(DISTINCT quote_ticker) AS ticker_count,   -- (a name apart from the option `tickers`)
           -- ns since the epoch of the file's time 0, and of one time unit (no session date: NULL)
           any_value(epoch_ns(coalesce(*COLUMNS(lambda c: c IN ('timestamp', '__no_stamp'))))
                     - CAST(quote_time AS HUGEINT) * u.unit) AS origin_ns,
           any_value(u.unit) AS unit_ns
    FROM b, step, (SELECT CAST(obook_unit(to_json(path), format, 'time_unit_ns') AS BIGINT) AS unit) AS u
    GROUP BY quote_file
),
grid AS (   -- at most 500,000,000 rows a file, points x tickers (a step of 1 ns over a day would ask for
            -- 10**14 points), as in Python
    SELECT file, origin_ns, unit_ns,
           CAST(unnest(generate_series(t0, t1, CASE WHEN t1 < t0
                                                    OR (CAST((t1 - t0) // step_size AS HUGEINT) + 1) * ticker_count <= 500000000
                                               THEN step_size
        ELSE error('obook_bbo_grid: every ' || step_size || ' over ' || (t1 - t0) || ' time units gives '
                   || (CAST((t1 - t0) // step_size AS HUGEINT) + 1) || ' points for each of ' || ticker_count || ' tickers ('
                   || (CAST((t1 - t0) // step_size AS HUGEINT) + 1) * ticker_count || ' rows; at most 500000000): '
                   || 'a larger every (in the feed''s time unit), or start_time / end_time') END)) AS UBIGINT) AS time
    FROM bounds
    WHERE t0 IS NOT NULL AND t1 IS NOT NULL
),
g AS (
    SELECT t.file, t.ticker, grid.time,
           -- (a point past what ns timestamps hold is an error naming it, as in Python, not a cast error)
           timezone('UTC', make_timestamp_ns(CASE
               WHEN grid.origin_ns + CAST(grid.time AS HUGEINT) * grid.unit_ns
                    NOT BETWEEN -9223372036854775808 AND 9223372036854775807
               THEN error('obook_bbo_grid: time ' || CAST(grid.time AS VARCHAR) || ' of ' || grid.file
                          || ' gives an instant beyond 1677-2262, what ns timestamps hold')
               ELSE CAST(grid.origin_ns + CAST(grid.time AS HUGEINT) * grid.unit_ns AS BIGINT) END)) AS stamp
    FROM (SELECT DISTINCT quote_file AS file, quote_ticker AS ticker FROM b) AS t JOIN grid USING (file)
),
out AS (
    -- the grid point's instant as `timestamp` (after time, as in every table) when the BBO has one
    SELECT g.time, coalesce(g.stamp, COLUMNS(lambda c: c IN ('timestamp', '__no_stamp'))), g.ticker,
           COLUMNS(lambda c: c NOT IN ('time', 'ticker', 'file', 'stamp', 'timestamp', '__no_stamp',
                                       'quote_ticker', 'quote_file')),
           g.file AS filename
    FROM g ASOF LEFT JOIN b ON g.file = b.quote_file AND g.ticker = b.quote_ticker AND g.time >= b.quote_time
)
SELECT COLUMNS(lambda c: c != '__no_stamp'
                         AND (c != 'filename' OR coalesce(TRY_CAST(CAST(filename AS VARCHAR) AS BOOLEAN), false)))
FROM out
ORDER BY out.filename, out.ticker, out.time;
