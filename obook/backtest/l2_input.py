"""Market-by-price (L2) inputs of a backtest: the levels of each book after every change,
and the trades, without order ids.

An L2 input is a table in Databento's ``mbp-1`` / ``mbp-10`` layout (what obook's own
``mbp1`` / ``mbp10`` tables and Databento's ``to_parquet`` / ``to_df`` give): a
``pyarrow.Table``, a polars or pandas frame, or a Parquet file, with ``ts_recv`` (else
``ts_event``, else ``time``), ``action`` (``T``: a trade; any other: a book change),
``side`` (of a trade, the aggressor's: ``A`` a sell, ``B`` a buy, ``N`` unknown),
``price``, ``size``, ``symbol`` (else ``instrument_id``) and the levels ``bid_px_00``,
``bid_sz_00``, ``ask_px_00``, ``ask_sz_00`` ... (a null or UNDEF price: an empty level);
or a DBN file of ``mbp-1`` / ``mbp-10`` records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ObookError

UNDEF_PRICE = (1 << 63) - 1
NONE = -(1 << 62)


@dataclass
class L2Day:
    time: np.ndarray        # int64 ns, ascending
    tb: np.ndarray          # int64 book number (names[tb])
    trade: np.ndarray       # bool
    side: np.ndarray        # int64: 0 buy aggressor, 1 sell aggressor, -1 unknown
    price: np.ndarray       # int64 (NONE: none)
    size: np.ndarray        # int64
    bid_px: np.ndarray      # int64 [rows, levels] (NONE: empty)
    bid_sz: np.ndarray
    ask_px: np.ndarray
    ask_sz: np.ndarray
    names: list


def is_l2(feed) -> bool:
    """Whether ``feed`` is an L2 input (a table with level columns, or a DBN mbp file)."""
    if hasattr(feed, "column_names") or hasattr(feed, "columns"):
        cols = feed.column_names if hasattr(feed, "column_names") else list(feed.columns)
        return "bid_px_00" in cols
    if isinstance(feed, (str, Path)):
        path = Path(feed)
        if path.suffix == ".parquet" and path.is_file():
            import pyarrow.parquet as pq

            try:
                return "bid_px_00" in pq.read_schema(path).names
            except (OSError, ValueError) as e:
                if _starts_parquet(path):       # a Parquet file whose footer cannot be read
                    reason = str(e).splitlines()[0] if str(e) else type(e).__name__
                    raise ObookError(f"{path}: a damaged Parquet file (cut short?): {reason}") from e
                return False
        return _dbn_schema(path) in ("mbp-1", "mbp-10")
    return False


def _starts_parquet(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False


def _dbn_schema(path: Path):
    """The schema name of a DBN file's metadata (its u16 at byte 24), or None."""
    import struct

    from ..feeds.databento.metadata import schema_name
    from ..feeds.sources import read_head

    try:
        head = read_head(path, 26)
    except (ObookError, OSError):
        return None
    if head[:3] != b"DBN" or len(head) < 26:
        return None
    (schema,) = struct.unpack_from("<H", head, 24)
    return schema_name(None if schema == 0xFFFF else schema)


def mbp_dtype(levels: int) -> np.dtype:
    """A DBN mbp-1 (levels 1) or mbp-10 record as a numpy dtype (DBN's field order)."""
    fields = [("length", "u1"), ("rtype", "u1"), ("publisher_id", "u2"), ("instrument_id", "u4"),
              ("ts_event", "u8"), ("price", "i8"), ("size", "u4"), ("action", "S1"), ("side", "S1"),
              ("flags", "u1"), ("depth", "u1"), ("ts_recv", "u8"), ("ts_in_delta", "i4"), ("sequence", "u4")]
    for k in range(levels):
        fields += [(f"bid_px_{k:02d}", "i8"), (f"ask_px_{k:02d}", "i8"), (f"bid_sz_{k:02d}", "u4"),
                   (f"ask_sz_{k:02d}", "u4"), (f"bid_ct_{k:02d}", "u4"), (f"ask_ct_{k:02d}", "u4")]
    return np.dtype(fields)


def _dbn_table(path: Path):
    """A DBN mbp-1 / mbp-10 file as a table in the mbp layout (symbols from its mappings)."""
    import pyarrow as pa

    from ..feeds.databento.metadata import parse, schema_name
    from ..feeds.sources import open_file

    f, raw = open_file(path)
    try:
        data = f.read()
    finally:
        raw.close()
    meta = parse(data)
    levels = 10 if "10" in schema_name(meta.schema) else 1    # the header just parsed, not a second read
    dtype = mbp_dtype(levels)
    body = data[meta.length:]
    if len(body) % dtype.itemsize:
        raise ObookError(f"{path}: {len(body)} bytes of records is not a whole number of {dtype.itemsize}-byte "
                         f"mbp-{levels} records")
    rec = np.frombuffer(body, dtype)
    tickers = meta.tickers()
    cols = {name: rec[name] for name in dtype.names if name not in ("action", "side")}
    cols["action"] = rec["action"].astype(str)
    cols["side"] = rec["side"].astype(str)
    cols["symbol"] = np.array([tickers.get(int(i), str(int(i))) for i in rec["instrument_id"]], dtype=object)
    return pa.table(cols)


def _column(table, names):
    for n in names:
        if n in table.column_names:
            return table.column(n)
    raise ObookError(f"an L2 input needs a column {' or '.join(names)}")


#: the longest time an input spans (a time far from the others is a bad row)
MAX_SPAN_NS = 31 * 86_400_000_000_000
#: Databento's mbp actions: add, cancel, modify, clear, trade, fill, none
ACTIONS = ("A", "C", "M", "R", "T", "F", "N")
SIDES = ("A", "B", "N")      # ask / sell aggressor, bid / buy aggressor, none


def _check_rows(table, sym, levels: int, label) -> None:
    """The columns the backtest reads, row by row: a time (null, below 0, or more than
    MAX_SPAN_NS from the others), an action (not
    one of ACTIONS), a side (not one of SIDES), a trade's price or size (null, UNDEF, below 0), a size below 0 or a
    symbol that is null is an error naming the first such row (0-based, of the input)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def first(mask, what):
        mask = pc.fill_null(mask, False)
        if pc.any(mask).as_py():
            row = int(pc.index(mask, True).as_py())
            raise ObookError(f"{label}: row {row}: {what(row)}")

    tcol = _column(table, ("ts_recv", "ts_event", "time"))
    tname = next(n for n in ("ts_recv", "ts_event", "time") if n in table.column_names)
    if not (pa.types.is_integer(tcol.type) or pa.types.is_timestamp(tcol.type)):
        raise ObookError(f"{label}: {tname} is {tcol.type}, not integer ns")
    if pa.types.is_timestamp(tcol.type):
        tcol = tcol.cast(pa.int64())
    first(pc.is_null(tcol), lambda r: f"{tname} is null")
    if pa.types.is_unsigned_integer(tcol.type):
        first(pc.greater(tcol, pa.scalar(UNDEF_PRICE, tcol.type)), lambda r: f"{tname} {tcol[r]} is beyond 64 bits")
    else:
        first(pc.less(tcol, 0), lambda r: f"{tname} {tcol[r]} is below 0")
    if len(tcol):
        lo, hi = pc.min_max(tcol).values()
        lo, hi = lo.as_py(), hi.as_py()
        if hi - lo > MAX_SPAN_NS:
            mid = int(pc.approximate_median(tcol).as_py())
            far = lo if mid - lo >= hi - mid else hi
            first(pc.equal(tcol, far), lambda r: f"{tname} {far} is {abs(mid - far) / 86_400e9:.0f} days from the "
                  f"input's median time (an input spans at most {MAX_SPAN_NS // 86_400_000_000_000} days)")
    first(pc.is_null(sym), lambda r: "symbol is null")
    action = table.column("action").cast(pa.string())
    first(pc.invert(pc.is_in(action, value_set=pa.array(ACTIONS))),
          lambda r: f"action {action[r].as_py()!r} is none of {', '.join(ACTIONS)}")
    side = table.column("side").cast(pa.string())
    first(pc.invert(pc.is_in(side, value_set=pa.array(SIDES))),
          lambda r: f"side {side[r].as_py()!r} is none of {', '.join(SIDES)}")
    trade = pc.equal(action, "T")
    price, size = table.column("price"), table.column("size")
    first(pc.and_kleene(trade, pc.or_kleene(pc.is_null(price), pc.equal(price, UNDEF_PRICE))),
          lambda r: "a trade (action T) without a price")
    first(pc.and_kleene(trade, pc.or_kleene(pc.is_null(size), pc.less_equal(size, 0))),
          lambda r: f"a trade (action T) of size {size[r].as_py()} (a trade's size is 1 or more)")
    first(pc.and_(trade, pc.less(price, 0)), lambda r: f"a trade at price {price[r].as_py()}, below 0")
    for col in ["size"] + [f"{k}_sz_{n:02d}" for n in range(levels) for k in ("bid", "ask")]:
        c = table.column(col)
        if not pa.types.is_unsigned_integer(c.type):
            first(pc.less(c, 0), lambda r: f"{col} {c[r].as_py()} is below 0")


def _whole_numbers(table, columns, label):
    """``table`` with its price and size ``columns`` as integers: a column of floats (a
    pandas frame's, whose missing values made it one) is taken as the integers it holds, a
    fraction, NaN or a value beyond 64 bits being an error naming its row (0-based); a
    column of any other type (text) is an error naming it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name in columns:
        c = table.column(name)
        if pa.types.is_integer(c.type) or pa.types.is_null(c.type):
            continue
        if not pa.types.is_floating(c.type):
            raise ObookError(f"{label}: {name} is {c.type}, not numbers (prices in the input's price unit, "
                             "sizes in shares)")
        c = c.cast(pa.float64())
        bad = pc.fill_null(pc.or_kleene(pc.not_equal(c, pc.floor(c)), pc.greater_equal(pc.abs(c), 2.0**63)), False)
        if pc.any(bad).as_py():
            row = int(pc.index(bad, True).as_py())
            raise ObookError(f"{label}: row {row}: {name} {c[row].as_py()} is no whole number of 64 bits (prices in "
                             "the input's price unit, sizes in shares)")
        table = table.set_column(table.column_names.index(name), name, c.cast(pa.int64()))
    return table


def read_l2(feed, tickers=None) -> L2Day:
    """The rows of an L2 input (see the module doc), in time order, of ``tickers`` (None: all)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(feed, (str, Path)):
        path = Path(feed)
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(path)
        elif _dbn_schema(path) in ("mbp-1", "mbp-10"):
            table = _dbn_table(path)
        else:
            raise ObookError(f"{path}: not an L2 input (a Parquet table with bid_px_00 ... columns, or a DBN "
                             f"file of mbp-1 or mbp-10 records)")
    elif isinstance(feed, pa.Table):
        table = feed
    elif hasattr(feed, "to_arrow"):
        table = feed.to_arrow()
    else:
        table = pa.Table.from_pandas(feed, preserve_index=False)
    levels = 0
    while f"bid_px_{levels:02d}" in table.column_names:
        levels += 1
    if levels == 0:
        raise ObookError("an L2 input needs level columns bid_px_00, bid_sz_00, ask_px_00, ask_sz_00 ...")
    need = ["action", "side", "price", "size"] + [f"{k}_{w}_{n:02d}" for n in range(levels) for k in ("bid", "ask")
                                                    for w in ("px", "sz")]
    missing = [c for c in need if c not in table.column_names]
    if missing:
        raise ObookError(f"an L2 input needs the columns {', '.join(missing)} (as Databento's mbp-1 / mbp-10)")
    label = feed if isinstance(feed, (str, Path)) else "the L2 input"
    table = _whole_numbers(table, need[2:], label)
    sym = _column(table, ("symbol", "instrument_id")).cast(pa.string())
    _check_rows(table, sym, levels, label)
    if tickers:
        keep = pc.is_in(sym, value_set=pa.array(list(tickers), pa.string()))
        table, sym = table.filter(keep), sym.filter(keep)
    t = _column(table, ("ts_recv", "ts_event", "time")).to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.argsort(t, kind="stable")
    names = list(tickers) if tickers else []
    tb_of = {n: i for i, n in enumerate(names)}
    syms = sym.to_pylist()
    tb = np.array([tb_of.setdefault(s, len(tb_of)) for s in syms], np.int64)
    names = list(tb_of)

    def ints(col, fill=0, undef=False):
        a = table.column(col)
        v = a.fill_null(fill).to_numpy(zero_copy_only=False).astype(np.int64)
        if undef:
            v = np.where(v == UNDEF_PRICE, NONE, v)
        return v[order]

    def levels_of(kind, what):
        return np.stack([ints(f"{kind}_{what}_{k:02d}", NONE if what == "px" else 0, what == "px")
                         for k in range(levels)], axis=1)

    action = np.array(table.column("action").to_pylist(), dtype=object)[order]
    side = np.array(table.column("side").to_pylist(), dtype=object)[order]
    return L2Day(t[order], tb[order], action == "T", np.where(side == "B", 0, np.where(side == "A", 1, -1)),
                 ints("price", NONE, True), ints("size"), levels_of("bid", "px"), levels_of("bid", "sz"),
                 levels_of("ask", "px"), levels_of("ask", "sz"), names)
