"""The options of the runs (``obook.match`` ...) as every front end offers them, declared
once: the DuckDB macros (``name := default``, typed), the polars scans' keywords and
``obook sql --help`` derive from these declarations; the Python functions take the same
names with the same defaults (a test holds them to it).

Cheap to import (no pyarrow, no kernels): the polars adapter reads it when it loads.
"""

from __future__ import annotations

from . import Option

#: ``obook.match``'s options: the DuckDB macros' ``name := value`` (``levels``: ``obook_match_depth``'s),
#: ``scan_match``'s keywords, ``obook match``'s flags
MATCH = (
    Option("workers", 1, "BIGINT", "processes the instruments are sharded over (same output for any number; "
                                   "Python's None: one per core, at most 8)"),
    Option("tick", 1, "BIGINT", "prices must be multiples of it"),
    Option("stp", None, "VARCHAR", "self-trade prevention between orders of one owner",
           ("cancel_resting", "cancel_incoming")),
    Option("instruments", None, "VARCHAR[]", "the known instruments (others are rejected; default: all in the "
                                             "input)"),
    Option("levels", 10, "BIGINT", "depth levels a side (1 to 50)"),
    Option("day_end", True, "BOOLEAN", "DAY orders expire after the last instruction"),
    Option("date", None, "VARCHAR", "the session date YYYY-MM-DD: `time` is ns since midnight New York and "
                                    "every table gets `timestamp` (UTC) after it"),
)

#: ``obook.match``'s options that only Python takes, and why
MATCH_PYTHON_ONLY = {"tables": "a DuckDB macro or a polars scan (table=) is one table; obook match writes them all"}

#: ``obook.simulate``'s options: the DuckDB macros' ``name := value`` (``levels``:
#: ``obook_simulate_depth``'s), ``scan_simulate``'s keywords, ``obook simulate``'s flags
SIMULATE = (
    Option("latency", 0, "VARCHAR", "ns from decision to book: an integer, a column of the orders, or a "
                                    "distribution 'uniform:LO:HI', 'exponential:MEAN', 'normal:MEAN:SD', "
                                    "'lognormal:MU:SIGMA' drawn with seed"),
    Option("seed", 0, "BIGINT", "the seed of a latency distribution"),
    Option("horizon", 1.0, "DOUBLE", "seconds after arrival of the summary's later mid"),
    Option("workers", None, "BIGINT", "worker processes (default: one per core, at most 8)"),
    Option("format", None, "VARCHAR", "the feed format, a name in any case (default, or '': detected)"),
    Option("on_error", "raise", "VARCHAR", "raise: stop at the first bad feed record; skip: skip such records",
           ("raise", "skip")),
    Option("day_end", True, "BOOLEAN", "DAY orders expire after the feed's last record"),
    Option("levels", 10, "BIGINT", "depth_with_own's levels a side (1 to 50)"),
    Option("date", None, "VARCHAR", "the session date YYYY-MM-DD (default: the feed's own, e.g. a "
                                    "MMDDYYYY.NASDAQ_ITCH50 name): every table with `time` gets `timestamp` "
                                    "(UTC) after it"),
)

#: ``obook.simulate``'s options that only Python (and the command, which writes the feed's
#: tables too) takes, and why
SIMULATE_PYTHON_ONLY = {
    "feed_tables": "the feed's own tables are obook_<table> / scan_<table>; obook simulate --tables names them",
    "own_tables": "a DuckDB macro or a polars scan (table=) is one table; obook simulate --tables names them",
    "progress": "a Python callable (obook simulate shows a progress bar)",
}

#: ``obook.backtest``'s options: the DuckDB macros' ``name := value``, ``obook backtest``'s
#: flags (``scan_backtest`` takes ``obook.backtest``'s keywords as they are); ``fees`` is
#: ``maker_fee``, ``taker_fee`` and ``fee_per`` (:data:`BACKTEST_FEES`)
BACKTEST = (
    Option("tickers", None, "VARCHAR[]", "the instruments it trades and sees (default: the strategy's "
                                         "`tickers`, else every instrument)"),
    Option("feed_latency", 0, "VARCHAR", "ns venue -> strategy: an integer, 'uniform:LO:HI', 'exponential:MEAN', "
                                         "'normal:MEAN:SD', 'lognormal:MU:SIGMA', or a CSV/Parquet table "
                                         "(time, latency)"),
    Option("order_latency", 0, "VARCHAR", "ns strategy -> venue (the same forms)"),
    Option("response_latency", 0, "VARCHAR", "ns venue -> strategy for acks and fills (the same forms)"),
    Option("seed", 0, "BIGINT", "the seed of latency distributions"),
    Option("timer", None, "BIGINT", "ns of feed time between calls of the strategy's on_timer"),
    Option("timer_start", None, "BIGINT", "the first timer call's time (feed time units)"),
    Option("maker_fee", 0, "VARCHAR", "fee a share in the feed's price units, decimals allowed (or bps of the "
                                      "notional with fee_per 'bps'); < 0: a rebate"),
    Option("taker_fee", 0, "VARCHAR", "fee a share in the feed's price units (or bps with fee_per 'bps')"),
    Option("fee_per", "share", "VARCHAR", "what a fee is of", ("share", "bps")),
    Option("interval", 60.0, "DOUBLE", "seconds between equity samples and Sharpe returns"),
    Option("capital", None, "DOUBLE", "the return's denominator, price units x quantity units (default: half the "
                                      "traded notional)"),
    Option("format", None, "VARCHAR", "the feed format, a name in any case (default, or '': detected)"),
    Option("date", None, "VARCHAR", "the session date YYYY-MM-DD (default: the format's)"),
    Option("on_error", "raise", "VARCHAR", "raise: a feed record that cannot be read stops the run; skip: such "
                                           "records are skipped", ("raise", "skip")),
    Option("day_end", True, "BOOLEAN", "DAY orders expire after the feed's last record"),
    Option("queue", None, "VARCHAR", "the queue model: fifo (order-level feeds) or, for L2 inputs, power:N "
                                     "(default power:2), power2:N, power3:N, log, log2, risk-averse"),
)

#: ``obook.backtest``'s ``fees`` (an ``obook.backtest.Fees``) as the other front ends take it
BACKTEST_FEES = ("maker_fee", "taker_fee", "fee_per")

#: ``obook.backtest``'s options that only Python takes, and why
BACKTEST_PYTHON_ONLY = {
    "fees": "an obook.backtest.Fees: maker_fee, taker_fee and fee_per elsewhere",
    "risk": "an obook.live.risk.RiskGate object (elsewhere the live defaults)",
    "on": "a strategy named FILE.py:NAME says it by its own `on` attribute (and ON is a word of SQL)",
    "pipeline": "where the replay's books run (a worker process or this one): the same rows either way, chosen "
                "by the machine",
    "progress": "a Python callable (obook backtest shows a progress bar)",
}
