"""The units of a table's columns, carried in its Arrow schema metadata, and the price
representations (``prices="int" | "decimal" | "float"``).

Metadata keys (values are text):

==========================  ===================================================================
key                         meaning
==========================  ===================================================================
``obook.table``             the table's name
``obook.format``            the feed format that produced it
``obook.prices``            ``int``, ``decimal`` or ``float``: how the price columns are given
``obook.price_scale``       a scale factor: a price column's value / ``price_scale`` is the
                            price in the currency (10000 for ITCH integers; 1 for decimal and
                            float prices)
``obook.price_columns``     the price columns, comma-separated
``obook.quantity_scale``    a scale factor: a quantity / ``quantity_scale`` is shares (or
                            units traded); 100 for Shenzhen, 1000 for Shanghai, else 1
``obook.quantity_columns``  the quantity columns, comma-separated
``obook.time_columns``      the feed time columns (points in time), comma-separated
``obook.duration_columns``  the columns of a length of time in the feed time unit (twas'
                            ``quoted_time``: no point in time), comma-separated
``obook.time_unit``         ``ns``, ``us``, ``ms`` or ``s``: the unit of the feed time and
                            duration columns
``obook.time_origin``       ``midnight`` (since the session's local midnight) or ``epoch`` (UTC)
``obook.time_zone``         the feed's time zone (its local midnight; ``timestamp`` is UTC)
``obook.levels``            depth tables only: the price levels a side
``obook.money_columns``     backtest and simulate tables only: the columns of money (exact decimals of price
                            x quantity in the feed's units), comma-separated
==========================  ===================================================================
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import numpy as np
import pyarrow as pa

from ..checks import check_choice
from . import OPTIONS

PRICES = OPTIONS["prices"].choices     # int, decimal, float
_UNITS = {1: "ns", 1_000: "us", 1_000_000: "ms", 1_000_000_000: "s"}
#: decimal prices: precision 19 holds every int64 value
DECIMAL_PRECISION = 19


def check_prices(prices) -> str:
    """``prices`` in any case (``'DECIMAL'``); None is ``'int'``."""
    return "int" if prices is None else check_choice("prices", prices, PRICES)


def matching(names, patterns) -> list[str]:
    return [n for n in names if any(fnmatchcase(n, p) for p in patterns)]


def metadata(spec, fmt, names, prices: str = "int") -> dict[bytes, bytes]:
    """The units metadata of table ``spec`` (an obook.tables.Table) of format ``fmt`` whose
    columns are ``names``."""
    scale = 10 ** fmt.price_scale
    return {
        b"obook.table": spec.name.encode(), b"obook.format": fmt.name.encode(),
        b"obook.prices": prices.encode(),
        b"obook.price_scale": str(scale if prices == "int" else 1).encode(),
        b"obook.price_columns": ",".join(matching(names, spec.prices)).encode(),
        b"obook.quantity_scale": str(fmt.quantity_scale).encode(),
        b"obook.quantity_columns": ",".join(matching(names, spec.quantities)).encode(),
        b"obook.time_columns": ",".join(n for n in spec.times if n in names).encode(),
        b"obook.duration_columns": ",".join(n for n in getattr(spec, "durations", ()) if n in names).encode(),
        b"obook.time_unit": time_unit_name(fmt.time_unit_ns).encode(),
        b"obook.time_origin": b"epoch" if fmt.epoch else b"midnight",
        b"obook.time_zone": fmt.tz.encode(),
    }


def run_metadata(table: str, fmt, names, columns) -> dict[bytes, bytes]:
    """The units metadata of a run's table (a backtest's or a simulation's) named ``table`` of
    feed format ``fmt`` whose columns are ``names``: ``columns`` is its (price, quantity, feed
    time, duration, money) column names or patterns; :func:`metadata`'s keys, plus
    ``obook.money_columns`` (amounts in the feed's price units x its quantity units)."""
    from types import SimpleNamespace

    prices, quantities, times, durations, amounts = columns
    spec = SimpleNamespace(name=table, prices=prices, quantities=quantities, times=times, durations=durations)
    meta = metadata(spec, fmt, names)
    meta[b"obook.money_columns"] = ",".join(amounts).encode()
    return meta


def units(schema: pa.Schema) -> dict[str, str]:
    """A table's units metadata as ``{key without "obook.": value}``."""
    return {k.decode()[6:]: v.decode() for k, v in (schema.metadata or {}).items() if k.startswith(b"obook.")}


def time_unit_name(ns: int) -> str:
    """The ``obook.time_unit`` value of a time unit of ``ns`` nanoseconds (``ms``, ``7ns``)."""
    return _UNITS.get(ns, f"{ns}ns")


def time_unit_ns(text: str) -> int:
    """The ns of an ``obook.time_unit`` value (``ns``, ``us``, ``ms``, ``s`` or ``<n>ns``)."""
    for ns, name in _UNITS.items():
        if text == name:
            return ns
    return int(text.removesuffix("ns"))


def price_scale(schema: pa.Schema) -> int:
    """The price scale factor a table's schema carries (a price / it = currency)."""
    return int((schema.metadata or {}).get(b"obook.price_scale", b"1"))


class Shape:
    """Turns a reader's schema and batches into the table's delivered ones: units metadata,
    prices as asked, an optional ``filename`` column."""

    def __init__(self, spec, fmt, prices: str = "int", filename: str | None = None):
        self.spec, self.fmt, self.prices, self.filename = spec, fmt, prices, filename
        self.scale = 10 ** fmt.price_scale
        self._cache: dict = {}

    def _plan(self, schema: pa.Schema):
        key = schema
        hit = self._cache.get(key)
        if hit is None:
            names = schema.names
            cols = [n for n in matching(names, self.spec.prices)
                    if self.prices != "int" and pa.types.is_integer(schema.field(n).type)]
            fields = list(schema)
            for n in cols:
                i = names.index(n)
                fields[i] = pa.field(n, self._price_type(), schema.field(n).nullable)
            if self.prices != "int" and "turnover" in names:
                i = names.index("turnover")
                fields[i] = pa.field("turnover", self._money_type(schema.field(i).type), schema.field(i).nullable)
            if self.filename is not None:
                fields.append(pa.field("filename", pa.string(), nullable=False))
            md = dict(schema.metadata or {})
            md.update(metadata(self.spec, self.fmt, names, self.prices))
            hit = self._cache[key] = (pa.schema(fields, metadata=md), [names.index(n) for n in cols])
        return hit

    def _price_type(self):
        if self.prices == "float":
            return pa.float64()
        return pa.decimal128(DECIMAL_PRECISION, self.fmt.price_scale)

    def schema(self, schema: pa.Schema) -> pa.Schema:
        return self._plan(schema)[0]

    def batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        out, cols = self._plan(batch.schema)
        arrays = list(batch.columns)
        if self.prices != "int":
            for i in cols:
                arrays[i] = self._convert(arrays[i])
            if "vwap" in batch.schema.names:
                i = batch.schema.get_field_index("vwap")
                arrays[i] = pa.array(np.asarray(arrays[i].to_numpy(zero_copy_only=False)) / self.scale)
            if "turnover" in batch.schema.names:     # price x quantity: in the prices' unit too
                i = batch.schema.get_field_index("turnover")
                arrays[i] = self._money(arrays[i])
        if self.filename is not None:
            arrays.append(pa.array([self.filename] * batch.num_rows, pa.string()))
        return pa.RecordBatch.from_arrays(arrays, schema=out)

    def _money_type(self, t: pa.DataType) -> pa.DataType:
        """A sum of price x quantity (DECIMAL(38,0) in the feed's price integers) in the
        prices' unit: float64, or the same decimal scaled to the currency (exact)."""
        return pa.float64() if self.prices == "float" else pa.decimal128(t.precision, self.fmt.price_scale)

    def _money(self, arr: pa.Array) -> pa.Array:
        # the same unscaled integers read at the price scale: exact
        exact = pa.Array.from_buffers(pa.decimal128(arr.type.precision, self.fmt.price_scale), len(arr),
                                      arr.buffers(), arr.null_count, arr.offset)
        return exact.cast(pa.float64()) if self.prices == "float" else exact

    def _convert(self, arr: pa.Array) -> pa.Array:
        """Integer prices to decimals (exact: the integers are the unscaled values) or floats."""
        n = len(arr)
        vals = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        bitmap = arr.buffers()[0] if arr.null_count and arr.offset == 0 else (
            pa.compute.is_valid(arr).buffers()[1] if arr.null_count else None)
        if self.prices == "float":
            return pa.Array.from_buffers(pa.float64(), n, [bitmap, pa.py_buffer(vals / self.scale)], arr.null_count)
        words = np.empty((n, 2), np.int64)
        words[:, 0] = vals
        words[:, 1] = vals >> 63
        return pa.Array.from_buffers(self._price_type(), n, [bitmap, pa.py_buffer(words)], arr.null_count)


import pyarrow.compute  # noqa: E402,F401 - pa.compute above
