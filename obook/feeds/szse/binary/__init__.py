"""Shenzhen AX-SBE binary records: little-endian packed structs, a 24-byte header
(SecurityIDSource 102, MsgType, MsgLen ...), orders of 48 bytes and executions of 64.
Same replay and units as the text log (``obook.feeds.szse``). Cheap to import."""

from __future__ import annotations

from dataclasses import replace

from .. import FORMAT as _TEXT
from .. import date_of


def sniff(name: str, head: bytes) -> int:
    """100 when the head is a Shenzhen binary header (source 102, a known type and length)."""
    if len(head) < 24 or head[0] != 102 or "itch" in name.lower():   # a name saying ITCH wins
        return 0
    t, ln = head[1], int.from_bytes(head[2:4], "little")
    return 100 if (t, ln) in ((192, 48), (191, 64)) or (t == 111 and ln >= 24) else 0


def session_date(path):
    """The trading day from the TransactTime of the first order or execution (None otherwise)."""
    from ...sources import read_head
    head = read_head(path, 4096)
    p = 0
    while p + 24 <= len(head) and head[p] == 102:
        t, ln = head[p + 1], int.from_bytes(head[p + 2:p + 4], "little")
        at = {192: 38, 191: 53}.get(t)
        if at is not None and p + at + 8 <= len(head):
            return date_of(int.from_bytes(head[p + at:p + at + 8], "little"))
        if ln < 24:
            break
        p += ln
    return None


FORMAT = replace(_TEXT, name="szse-bin", unit="record", sniff=sniff, session_date=session_date,
                 framer="obook.feeds.szse.feed:SzseBinFramer",
                 decoder="obook.feeds.szse.feed:SzseBinDecoder", suffixes=(".bin",))
