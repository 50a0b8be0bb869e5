"""Shenzhen vendor CSV: per security an orders file
(``ApplSeqNum,Side,OrdType,Price,OrderQty,TransactTime,ChannelNo``) and a ticks file
(``ApplSeqNum,BidApplSeqNum,OfferApplSeqNum,Price,Qty,ExecType,TransactTime,ChannelNo``),
each with a header row naming its columns (in any order; extra columns are ignored), read together as one feed: pass the
list of files (``obook.bbo([orders, ticks, ...], format="szse-csv")``). Fields may be
quoted, lines end in LF or CRLF, a UTF-8 byte order mark before the header is dropped and
blank lines are passed over, as CSV writers (Python's csv, pandas) write them.

The files are merged by (TransactTime, ChannelNo, ApplSeqNum) into the Shenzhen text log
(``obook.feeds.szse.vendor.merge``) and replayed as that log: ``seq`` is a line of the
merged feed, and an error names the file and line of its record (the merged feed's line in
its reason). The security is the file name's leading digits (``000001_orders.csv``).
Price is decimal yuan text, parsed exactly to yuan * 10**4; quantities are shares
(decimal text allowed), stored * 10**2 like the exchange feed; Side / OrdType / ExecType
are the characters ('1', '2', 'U', 'F', '4' ...). Cheap to import.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from .. import FORMAT as _TEXT
from .. import date_of

#: the columns a row is read by, found by their header names (in any order)
ORDER_COLUMNS = ("ApplSeqNum", "Side", "OrdType", "Price", "OrderQty", "TransactTime", "ChannelNo")
TICK_COLUMNS = ("ApplSeqNum", "BidApplSeqNum", "OfferApplSeqNum", "Price", "Qty", "ExecType", "TransactTime",
                "ChannelNo")
ORDER_HEADER = ",".join(ORDER_COLUMNS).encode()
TICK_HEADER = ",".join(TICK_COLUMNS).encode()


def header_names(line) -> list[str]:
    """The column names of a header line (bytes or text): each stripped, a UTF-8 byte order
    mark dropped."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    return [c.strip().strip('"') for c in line.lstrip("\ufeff").rstrip("\r\n").split(",")]


def kind_of(names) -> str | None:
    """"orders" or "ticks" for a header naming every column of that kind, else None."""
    have = set(names)
    for kind, columns in (("ticks", TICK_COLUMNS), ("orders", ORDER_COLUMNS)):
        if have.issuperset(columns):
            return kind
    return None


def sniff(name: str, head: bytes) -> int:
    """200 (surer than a generic CSV) for a vendor orders or ticks header, its names quoted or
    not, after a UTF-8 byte order mark or not (the ticks header is longer than the head the
    sniffers get: its first 32 characters or more are enough); 150 for a vendor file's name
    (``000001_orders.csv``) over another header, which the replay refuses naming the
    columns it lacks."""
    first = head.split(b"\n")[0]
    names = header_names(first)
    if kind_of(names):
        return 200
    start = ",".join(names)     # a header cut by the head's end: its names so far, unquoted
    if len(start) >= 32 and (ORDER_HEADER.decode().startswith(start) or TICK_HEADER.decode().startswith(start)):
        return 200
    named = re.match(r"\d{6}_(orders|ticks)\.csv(\.gz|\.zst)?$", os.path.basename(name).lower())
    return 150 if named and not first.startswith(b"Time,") else 0


def session_date(path):
    """The trading day from the first data row's TransactTime, the row read as the replay
    reads it (quoted fields, blank lines after the header); None when the file has no
    vendor header or no row the replay reads before a bad one."""
    from ...sources import read_head
    if not kind_of(header_names(read_head(path, 4096).split(b"\n")[0])):
        return None
    from .merge import first_stamp
    stamp = first_stamp(path)
    return date_of(stamp) if stamp is not None else None


FORMAT = replace(_TEXT, name="szse-csv", sniff=sniff, session_date=session_date, merge="obook.feeds.szse.vendor.merge:merge",
                 source="obook.feeds.szse.vendor.merge:paired",
                 suffixes=(".csv",))
