-- __obook_integer(value): whether a macro's number option was given an integer type (2, not 2.0,
-- '2' or true: none is read as an integer, as in Python).
CREATE OR REPLACE TEMP MACRO __obook_integer(value) AS
    typeof(value) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT',
                      'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT', 'UHUGEINT');
-- __obook_number(value): whether a macro's number option was given a number type (not text or true).
CREATE OR REPLACE TEMP MACRO __obook_number(value) AS
    __obook_integer(value) OR typeof(value) IN ('FLOAT', 'DOUBLE') OR typeof(value) LIKE 'DECIMAL%';
-- __obook_shown(value): an option's value as an error shows it: text quoted, as Python's repr does.
CREATE OR REPLACE TEMP MACRO __obook_shown(value) AS
    CASE WHEN typeof(value) = 'VARCHAR' THEN chr(39) || CAST(value AS VARCHAR) || chr(39)
         ELSE coalesce(CAST(value AS VARCHAR), 'NULL') END;
-- __obook_typed(value): ' (a DOUBLE)', ' (an INTEGER[])': the type an error names after a value.
CREATE OR REPLACE TEMP MACRO __obook_typed(value) AS
    ' (' || CASE WHEN left(typeof(value), 1) IN ('A', 'E', 'I', 'O', 'U') THEN 'an ' ELSE 'a ' END
    || typeof(value) || ')';
-- __obook_not_int(value): a value an integer option refuses, as its error shows it: a float or a
-- decimal says its type (2.0 (a DOUBLE)), so that 2.0, a whole number, reads as refused for its type.
CREATE OR REPLACE TEMP MACRO __obook_not_int(value) AS
    __obook_shown(value) || CASE WHEN typeof(value) IN ('FLOAT', 'DOUBLE') OR typeof(value) LIKE 'DECIMAL%'
                                 THEN __obook_typed(value) ELSE '' END;
-- __obook_feed_time(value, what): a macro's start_time / end_time option as a feed time (UBIGINT),
-- NULL as NULL; 1.5, 2.0, -1, 2^63, '5' or true is an error naming the option (``what``), never
-- rounded (the times are computed as BIGINT, as in Python).
CREATE OR REPLACE TEMP MACRO __obook_feed_time(value, what) AS
    CASE WHEN value IS NULL THEN NULL
         WHEN __obook_integer(value) AND TRY_CAST(value AS BIGINT) >= 0
         THEN TRY_CAST(value AS UBIGINT)
         ELSE error(what || ' must be an integer from 0 to 2^63 - 1, not ' || __obook_not_int(value))
    END;
-- __obook_bbo_time(time, file, what): a BBO row's time, past 2^63 - 1 an error naming the macro
-- (``what``) and the file: the times are computed as BIGINT, as in Python (a CSV time is any
-- unsigned 64-bit number).
CREATE OR REPLACE TEMP MACRO __obook_bbo_time(time, file, what) AS
    CASE WHEN time > 9223372036854775807
         THEN error(what || ': BBO time ' || CAST(time AS VARCHAR) || ' of ' || file
                    || ' is past 2^63 - 1, the latest feed time the analytics compute with')
         ELSE time
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
-- __obook_by_position(value, macro, heads, options): the error of an argument given by position to a
-- table macro past its positional arguments (``heads``: 'path', 'path, every'), which DuckDB hands to
-- the macro's next parameter, __by_position; a name = value comparison (a BOOLEAN) is said as such.
CREATE OR REPLACE TEMP MACRO __obook_by_position(value, macro, heads, options) AS
    error(macro || ': ' || CASE WHEN typeof(value) = 'BOOLEAN'
          THEN 'an option is given as name := value: name = value is a comparison, whose true or false was '
               || 'given by position after ' || heads
          ELSE 'an option is given by name (name := value), not by position: ' || CAST(value AS VARCHAR)
               || ' came after ' || heads || '; its options: ' || options END);
