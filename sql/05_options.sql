-- __obook_feed_time(value, what): a macro's start_time / end_time option as a feed time (UBIGINT),
-- NULL as NULL; 1.5, -1, 'x' or true is an error naming the option (``what``), never rounded.
CREATE OR REPLACE TEMP MACRO __obook_feed_time(value, what) AS
    CASE WHEN value IS NULL THEN NULL
         WHEN typeof(value) <> 'BOOLEAN' AND TRY_CAST(value AS UBIGINT) = TRY_CAST(value AS DOUBLE)
         THEN TRY_CAST(value AS UBIGINT)
         ELSE error(what || ' must be a whole number, at least 0, not ' || CAST(value AS VARCHAR))
    END;
-- __obook_window(first_time, last_time, what): both feed times given (see __obook_feed_time), the
-- first after the last is an error naming the macro (``what``); else true.
CREATE OR REPLACE TEMP MACRO __obook_window(first_time, last_time, what) AS
    CASE WHEN first_time IS NOT NULL AND last_time IS NOT NULL AND first_time > last_time
         THEN error(what || ': start_time ' || CAST(first_time AS VARCHAR) || ' is after end_time '
                    || CAST(last_time AS VARCHAR) || ' (feed time units)')
         ELSE true
    END;
-- __obook_flag(value, what): true when a macro's true/false option is NULL, a BOOLEAN or its text
-- ('true', 'false' ...); 5 or 'x' is an error naming the option (``what``), not a cast error.
CREATE OR REPLACE TEMP MACRO __obook_flag(value, what) AS
    CASE WHEN value IS NULL OR (typeof(value) IN ('BOOLEAN', 'VARCHAR')
                                AND TRY_CAST(CAST(value AS VARCHAR) AS BOOLEAN) IS NOT NULL) THEN true
         ELSE error(what || ' must be true or false, not ' || CAST(value AS VARCHAR))
    END;
