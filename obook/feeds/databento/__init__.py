"""Databento MBO (DBN versions 1-3, ``.dbn`` or ``.dbn.zst``) as a feed plug-in.

Cheap to import: everything the engine needs is named by lazy references.

* A record number (``seq``) counts every record after the metadata header, MBO or not,
  from 1. Databento's ``sequence`` is the venue's: it repeats within a venue message and
  is not monotonic across channels, so obook does not use it as ``seq``.
* ``time`` is ``ts_event`` (UTC epoch ns); prices are 1e-9 fixed point (scale 9).
* Books are by ``instrument_id`` (one book per id, whatever the publisher); the ticker is
  the raw symbol the metadata's symbol mappings give the id, else the id as text.
* Rows are published at the end of an event: records without F_LAST carry the DEFER bit.
* Besides bbo/trades/orders/depth it offers ``mbp1`` and ``mbp10``, tables shaped like
  Databento's mbp-1 and mbp-10 schemas (obook.feeds.databento.tables).
"""

from __future__ import annotations

from .. import FeedFormat

#: where the format's extra tables (``FORMAT.tables``) are built: ``reader(name, ...)``
TABLES = "obook.feeds.databento.tables:reader"

DBN_MAGIC = b"DBN"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def sniff(name: str, head: bytes) -> int:
    """100 for a DBN signature (versions 1-3) in the (decompressed) head; 80 for a
    ``.dbn`` / ``.dbn.zst`` name over a head too short to tell, 30 over other bytes (a
    format that knows them wins: a PITCH day named ``.dbn``; bytes no format knows are
    still read as DBN, whose error says they have no signature)."""
    if head[:3] == DBN_MAGIC and len(head) > 3 and head[3] in (1, 2, 3):
        return 100
    if name.lower().endswith((".dbn", ".dbn.zst")):
        return 80 if len(head) < 4 else 30
    return 0


FORMAT = FeedFormat(
    name="databento",
    title="Databento MBO",
    unit="record",
    framer="obook.feeds.databento.framer:DbnFramer",
    decoder="obook.feeds.databento.decoder:DbnDecoder",
    sniff=sniff,
    book_key="instrument_id",
    book_key_type="uint32",
    price_scale=9,
    tz="UTC",
    time_unit_ns=1,
    epoch=True,
    session_date=None,
    order_ids="int",
    feed_seq=False,
    sideless_kinds="N",
    match_numbers=False,      # MBO records carry no match number
    tables=("mbp1", "mbp10"),
    table_reader=TABLES,
    table_info={"mbp1": {"doc": "Databento's mbp-1 schema (its columns and meaning): one row per event that changes the top level and one per trade, with the book's top level after it.", "prices": ("price", "bid_px_*", "ask_px_*"), "quantities": ("size", "bid_sz_*", "ask_sz_*"), "times": ("ts_recv", "ts_event")},
                "mbp10": {"doc": "Databento's mbp-10 schema (its columns and meaning): one row per event that changes the top 10 levels and one per trade, with the book's top 10 levels after it.", "prices": ("price", "bid_px_*", "ask_px_*"), "quantities": ("size", "bid_sz_*", "ask_sz_*"), "times": ("ts_recv", "ts_event")}},
    table_schema="obook.feeds.databento.mbp:table_schema",
    # a trade is reported as T (the aggressor's side, the whole size) and again as an F per
    # resting order filled: the trades table keeps the T; N records only mark publication
    trade_kinds="T",
    aggressor_kinds="T",
    suffixes=(".dbn", ".dbn.zst"),
)
