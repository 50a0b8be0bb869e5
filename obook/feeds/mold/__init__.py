"""ITCH in MoldUDP64 packet captures (pcap, pcapng), lines A and B arbitrated, as a feed plug-in.

A capture feed is one or more lines (``obook.lines(a="A.pcap:233.54.12.111:26477", b=...)``,
``--line-a``/``--line-b`` on the command line, or a capture path: each UDP destination a
line). The lines' MoldUDP64 messages are arbitrated (first copy wins, see ``stream``) into
one ITCH stream replayed by the ITCH decoder; every table gets ``mold_seq`` (= ``seq``),
``line`` and ``ts_recv``; the side tables ``gaps`` and ``line_stats`` tell what was lost
on every line and what each line did. Cheap to import: lazy references only.
"""

from __future__ import annotations

import dataclasses

from ..itch import FORMAT as ITCH

_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d",
           b"\x0a\x0d\x0d\x0a")


def sniff(name: str, head: bytes) -> int:
    """100 for a pcap or pcapng magic (the content decides, not the name)."""
    return 100 if head[:4] in _MAGICS else 0


def session_date(path):
    """The New York date of the capture's first packet."""
    from .side import session_date as first_packet_date
    return first_packet_date(path)


_SIDE = "obook.feeds.mold.side:"

#: ITCH inside: the book identity, prices, time, decoder, prepass and trade kinds are ITCH's;
#: the capture brings its own framer (the arbitrated lines), numbering (MoldUDP64 sequence
#: numbers), side tables, per-record columns and the source that reads the lines as one feed
FORMAT = dataclasses.replace(
    ITCH,
    name="itch-pcap",
    title="MoldUDP64 captures",
    framer="obook.feeds.mold.framer:MoldFramer",
    sniff=sniff,
    session_date=session_date,
    feed_seq=True,
    side_tables={"symbols": _SIDE + "SYMBOLS", "system_events": _SIDE + "SYSTEM_EVENTS",
                 "trading_actions": _SIDE + "TRADING_ACTIONS", "cross_trades": _SIDE + "CROSS_TRADES",
                 "gaps": _SIDE + "GAPS",
                 "line_stats": _SIDE + "LINE_STATS"},
    messages=_SIDE + "read_messages",
    table_info={**ITCH.table_info,
                "gaps": {"doc": "The messages lost on every line: first_seq, last_seq, count and the capture times "
                                "around the gap.", "times": ()},
                "line_stats": {"doc": "Per line: packets, messages, duplicates, gaps, recovered from the other line "
                                      "or by re-request, heartbeats, bad packets, wrong session, backwards, "
                                      "implausible sequence numbers.", "times": ()}},
    suffixes=(".pcap", ".pcapng"),
    source=_SIDE + "source",
    record_columns=_SIDE + "RECORD_FIELDS",
)
