"""obook's exceptions: the feed errors keep their message and fields across processes."""

from __future__ import annotations

import pickle

import pytest

from obook.errors import FeedError, ObookError, TruncatedFeedError
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


@pytest.mark.parametrize("text, shown", [("b\udcff.itch: bad", "b\\xff.itch: bad"), ("b\x00.itch", "b\\x00.itch"),
                                         ("ok ünïcode", "ok ünïcode")])
def test_errors_message_is_printable_utf8(text, shown):
    assert str(FeedError(text, 3, "bad")) == f"{shown}: message 3: bad"
    assert str(ObookError(text)) == shown


def test_errors_feed_file_name_not_utf8_bad_record_is_the_feed_error(tmp_path):
    """A replay of a file whose name is not UTF-8 fails at its bad record with that record's
    error (the name escaped), where pyarrow handed it on as a UnicodeEncodeError."""
    import os

    import obook
    from test_fuzz_itch import add_msg, framed

    name = os.path.join(os.fsdecode(bytes(tmp_path)), os.fsdecode(b"b\xff.itch"))
    with open(name, "wb") as f:
        f.write(framed(add_msg(1), add_msg(2, price=2000), add_msg(1)))
    with pytest.raises(FeedError, match=r"b\\xff\.itch: message 3: ") as got:
        obook.bbo(name).read_all()
    assert got.value.record == 3
