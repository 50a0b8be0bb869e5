"""A deterministic synthetic Cboe PITCH day: the order flow of a synthetic ITCH day
(:mod:`obook.gen.itch`) written as PITCH messages in sequenced units.

``write_pitch(path, messages, stocks, seed)`` generates the ITCH day of those arguments
and writes each of its book messages as PITCH: adds as Add Order (short when the quantity
and price fit, expanded for an attributed add, long otherwise), executions as Order
Executed (at Price, with the remaining quantity), cancels as Reduce Size, deletes as
Delete Order, replaces as Modify Order of the same order id (without Maintain Priority:
a replaced order loses its place), non-displayed trades as Trade, breaks as Trade
Break, trading actions as Trading Status; the end of messages as End of Session. A Time
Reference starts the day and a Time message every second that has messages. Units hold 1
to 24 messages (seeded), all on unit 1, sequenced from 1.
"""

from __future__ import annotations

import random
import struct
import tempfile
from pathlib import Path
from typing import Optional

import typer

__all__ = ["write_pitch", "translate_itch", "command"]

#: the default session date of the Time Reference (2026-11-30 00:00 America/New_York, as UTC epoch seconds)
TRADE_DATE = 20261130
MIDNIGHT = 1_796_014_800
#: bytes a message takes at least: on disk (plain, compressed) and in memory while the day is
#: generated (0: written as it goes); a little below what 1 M messages measure, so that a size
#: `obook gen` refuses for want of room could not have fitted
MIN_BYTES = (50, 9, 80)


def _reference(date) -> tuple[int, int]:
    """(trade date YYYYMMDD, midnight in New York as UTC epoch seconds) of ``date``
    (``YYYY-MM-DD`` or a ``datetime.date``; None: the default day)."""
    if date is None:
        return TRADE_DATE, MIDNIGHT
    import datetime as dt

    from ..session import midnight_ns

    day = date if isinstance(date, dt.date) else dt.date.fromisoformat(str(date))
    return day.year * 10000 + day.month * 100 + day.day, midnight_ns(day, "America/New_York") // 10**9


def _itch_frames(data: bytes):
    pos = 0
    while pos + 2 <= len(data):
        n = struct.unpack_from(">H", data, pos)[0]
        yield data[pos + 2:pos + 2 + n]
        pos += 2 + n


def translate_itch(itch: bytes, seed: int = 0, date=None) -> bytes:
    """The PITCH bytes of an ITCH day's book messages (see the module); ``date``: the
    session date its Time Reference names (YYYY-MM-DD; default 2026-11-30)."""
    from .._kernels.itch_layout import field
    from .._kernels.pitch import pack, unit

    def get(m, typ, name):
        o, w, kind = field(typ, name)
        raw = m[o:o + w]
        return int.from_bytes(raw, "big") if kind == "u" else raw.decode("latin-1")

    rnd = random.Random(seed)
    ids: dict[int, int] = {}            # ITCH ref -> PITCH order id (a replace keeps its id)
    left: dict[int, int] = {}           # PITCH order id -> remaining shares
    out, msgs = [], []
    seq, second = 1, -1
    per_unit = rnd.randint(1, 24)

    def emit(message: bytes, ts: int | None = None) -> None:
        nonlocal second, seq, per_unit
        if ts is not None and ts // 10**9 != second:
            second = ts // 10**9
            emit(pack("time", seconds=second))
        msgs.append(message)
        if len(msgs) >= per_unit:
            out.append(unit(msgs, 1, seq))
            seq += len(msgs)
            msgs.clear()
            per_unit = rnd.randint(1, 24)

    trade_date, midnight = _reference(date)
    emit(pack("time_reference", midnight=midnight, seconds=0, offset=0, trade_date=trade_date))
    for m in _itch_frames(itch):
        t = chr(m[0])
        if t not in "AFECXDUPBHS":
            continue
        ts = get(m, "S", "timestamp")
        ofs = ts % 10**9
        if t in "AF":
            ref, shares, price = get(m, t, "ref"), get(m, t, "shares"), get(m, t, "price")
            stock, side = get(m, t, "stock").rstrip(), get(m, t, "side")
            ids[ref] = ref
            left[ref] = shares
            common = dict(offset=ofs, order_id=ref, side=side, quantity=shares, flags=1)
            if t == "F" or len(stock) > 6:
                msg = pack("add_order_expanded", symbol=stock, price=price, customer="N",
                           participant=get(m, "F", "mpid") if t == "F" else "", **common)
            elif shares < 1 << 16 and price % 100 == 0 and price // 100 < 1 << 16:
                msg = pack("add_order_short", symbol=stock, price=price // 100, **common)
            else:
                msg = pack("add_order_long", symbol=stock, price=price, **common)
        elif t in "EC":
            oid, shares = ids[get(m, t, "ref")], get(m, t, "shares")
            left[oid] -= shares
            if t == "E":
                msg = pack("order_executed", offset=ofs, order_id=oid, quantity=shares,
                           execution_id=get(m, t, "match"))
            else:
                msg = pack("order_executed_at_price", offset=ofs, order_id=oid, quantity=shares,
                           remaining=left[oid], execution_id=get(m, t, "match"), price=get(m, t, "price"))
        elif t == "X":
            oid, shares = ids[get(m, t, "ref")], get(m, t, "shares")
            left[oid] -= shares
            kind = "reduce_size_short" if shares < 1 << 16 else "reduce_size_long"
            msg = pack(kind, offset=ofs, order_id=oid, quantity=shares)
        elif t == "D":
            oid = ids.pop(get(m, t, "ref"))
            left.pop(oid, None)
            msg = pack("delete_order", offset=ofs, order_id=oid)
        elif t == "U":
            oid = ids.pop(get(m, t, "ref"))
            ids[get(m, t, "new_ref")] = oid
            shares, price = get(m, t, "shares"), get(m, t, "price")
            left[oid] = shares
            if shares < 1 << 16 and price % 100 == 0 and price // 100 < 1 << 16:
                msg = pack("modify_order_short", offset=ofs, order_id=oid, quantity=shares, price=price // 100,
                           flags=1)
            else:
                msg = pack("modify_order_long", offset=ofs, order_id=oid, quantity=shares, price=price, flags=1)
        elif t == "P":
            stock = get(m, t, "stock").rstrip()
            common = dict(offset=ofs, order_id=get(m, t, "ref"), side=get(m, t, "side"),
                          execution_id=get(m, t, "match"))
            shares, price = get(m, t, "shares"), get(m, t, "price")
            if len(stock) > 6:
                msg = pack("trade_expanded", quantity=shares, symbol=stock, price=price, **common)
            elif shares < 1 << 16 and price % 100 == 0 and price // 100 < 1 << 16:
                msg = pack("trade_short", quantity=shares, symbol=stock, price=price // 100, **common)
            else:
                msg = pack("trade_long", quantity=shares, symbol=stock, price=price, **common)
        elif t == "B":
            msg = pack("trade_break", offset=ofs, execution_id=get(m, t, "match"))
        elif t == "H":
            state = get(m, t, "state")
            msg = pack("trading_status", offset=ofs, symbol=get(m, t, "stock").rstrip(),
                       status="H" if state == "P" else state, reg_sho_action="0")
        else:                                   # S: only the end of messages is written
            if get(m, t, "event_code") != "C":
                continue
            msg = pack("end_of_session", offset=ofs)
        emit(msg, ts)
    if msgs:
        out.append(unit(msgs, 1, seq))
    return b"".join(out)


def write_pitch(path, messages: int, stocks: int, seed: int = 0, date=None) -> int:
    """Write the PITCH day of the ITCH day ``write_itch(messages, stocks, seed)`` (session
    ``date`` in its Time Reference), gzipped when ``path`` ends in .gz; returns the number of
    PITCH messages."""
    from .._kernels.pitch import HEADER
    from .itch import write_itch
    from . import open_output

    # the ITCH day goes to a file without a name: none is left behind by a run killed outright
    with tempfile.TemporaryFile(suffix=".itch", dir=Path(path).parent) as itch:
        write_itch(itch, messages, stocks, seed)
        itch.seek(0)
        data = translate_itch(itch.read(), seed, date)
    with open_output(path) as f:
        f.write(data)
    n, pos = 0, 0
    while pos < len(data):
        n += data[pos + 2]
        pos += int.from_bytes(data[pos:pos + 2], "little")
    assert pos == len(data) and HEADER == 8
    return n


def command(
    out: Path = typer.Argument(..., metavar="OUT", help="Output file (.pitch); ends in .gz to gzip it, .zst for zstd."),
    messages: int = typer.Option(100_000, "--messages", "-n", min=1, help="Messages of the ITCH day translated."),
    stocks: int = typer.Option(100, "--instruments", "-k", min=1, max=65535, help="Stocks."),
    seed: int = typer.Option(0, "--seed", "-s", min=0, max=2**63 - 1, help="Random seed."),
    date: Optional[str] = typer.Option(None, "--date", "-d", metavar="YYYY-MM-DD",
                                       help="Session date YYYY-MM-DD of the day's timestamps, written into the "
                                            "Time Reference message (Trade Date, midnight) [default: 2026-11-30]."),
) -> None:
    """Write a synthetic Cboe PITCH day: the order flow of `obook gen itch` with the same
    arguments as PITCH messages (adds short, long and expanded, executions, reduces,
    modifies, deletes, trades, breaks, trading status) in sequenced units."""
    from ..cli.gen import _date, _writing

    day = _date(date, "1970-01-01", "2106-02-07", "a PITCH Time Reference (midnight in u32 epoch seconds)")
    n = _writing(out, lambda path: write_pitch(path, messages, stocks, seed, day), size=(messages, MIN_BYTES))
    typer.echo(f"wrote {n} messages to {out}", err=True)
