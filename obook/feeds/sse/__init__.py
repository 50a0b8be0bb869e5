"""Shanghai Stock Exchange Level-2 ticks: the AX-SBE text log.

Cheap to import (no numba): the framer and decoder live in ``obook.feeds.sse.feed``,
the snapshot reader and the audit in ``obook.feeds.sse.audit``.

Units: prices and quantities are the log's integers with 3 implied decimals
(price_scale 3: 1808080 is 1808.080 yuan; 100000 is 100 shares); ``time`` is ns since
midnight Asia/Shanghai (TransactTime HHMMSScc). Books are keyed by the SecurityID
(an integer below 10**6; the ticker is its 6-digit text).
"""

NAME = "sse"
PRICE_SCALE = 3
TZ = "Asia/Shanghai"
#: where the format's extra tables (``FORMAT.tables``) are built: ``reader(name, ...)``
TABLES = "obook.feeds.sse.audit:reader"


def sniff(filename: str, head: bytes) -> int:
    """How sure the content is a Shanghai AX-SBE text log (0: not one)."""
    if head.removeprefix(b"\xef\xbb\xbf").startswith(b"//SecurityIDSource=101"):   # (an editor's byte order mark)
        return 80      # content alone: below a file name that says another format (.itch 90)
    return 0


from .. import FeedFormat, named_date  # noqa: E402
from ..szse import CONTINUOUS  # noqa: E402

FORMAT = FeedFormat(
    name=NAME,
    title="Shanghai Level-2",
    unit="line",
    framer="obook.feeds.sse.feed:SseFramer",
    decoder="obook.feeds.sse.feed:SseDecoder",
    sniff=sniff,
    book_key=None,            # the ticker is the SecurityID's text
    price_scale=PRICE_SCALE,
    quantity_scale=1000,      # 100000 is 100 shares
    tz=TZ,
    time_unit_ns=1,
    epoch=False,
    session_date=named_date,  # the log has no date: a date in the file name, or date=
    order_ids="int",          # ref: OrderNo; match (trades, executions): the trade's BizIndex
    feed_seq=False,           # seq: the line's position in BizIndex order (see feed.py)
    sideless_kinds="",
    suffixes=(".log",),
    continuous=CONTINUOUS,      # its call auctions and continuous trading are at Shenzhen's times
    tables=("audit",),
    table_reader=TABLES,
    table_info={"audit": {"doc": "One row per exchange snapshot comparing its 10 levels and day tallies with the "
                                 "book rebuilt from the ticks.",
                          "prices": ("snap_px", "book_px", "last_px", "book_last_px", "high_px", "book_high_px",
                                     "low_px", "book_low_px"),
                          "quantities": ("snap_qty", "book_qty", "volume", "book_volume")}},
    table_schema="obook.feeds.sse.schema:table_schema",
)
