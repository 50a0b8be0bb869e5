"""obook's exceptions: the feed errors keep their message and fields across processes."""

from __future__ import annotations

import pickle

import pytest

from obook.errors import FeedError, TruncatedFeedError
from obook.feeds.mold.packets import MoldPacketError


@pytest.mark.parametrize("error", [
    FeedError("day.itch", 12, "unknown message type 'z'"),
    FeedError("day.csv", None, "no header", unit="line"),
    TruncatedFeedError("day.itch", 7, 1234),
    MoldPacketError("truncated MoldUDP64 packet", "a.pcap", 3),
], ids=["feed", "no-record", "truncated", "mold"])
def test_errors_feed_error_pickled_keeps_type_message_and_fields(error):
    error.kept_in = "out.parquet.partial"
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error)
    assert back.__dict__ == error.__dict__
