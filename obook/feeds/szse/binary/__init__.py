"""Shenzhen AX-SBE binary records (SPEC §6): little-endian packed structs, a 24-byte header
(SecurityIDSource 102, MsgType, MsgLen ...), orders of 48 bytes and executions of 64.
Same replay and units as the text log (``obook.feeds.szse``). Cheap to import."""

from __future__ import annotations

from dataclasses import replace

from .. import FORMAT as _TEXT


def sniff(name: str, head: bytes) -> int:
    """100 when the head is a Shenzhen binary header (source 102, a known type and length)."""
    if len(head) < 24 or head[0] != 102:
        return 0
    t, ln = head[1], int.from_bytes(head[2:4], "little")
    return 100 if (t, ln) in ((192, 48), (191, 64)) or (t == 111 and ln >= 24) else 0


FORMAT = replace(_TEXT, name="szse-bin", unit="record", sniff=sniff,
                 framer="obook.feeds.szse.feed:SzseBinFramer",
                 decoder="obook.feeds.szse.feed:SzseBinDecoder", suffixes=(".bin",))
