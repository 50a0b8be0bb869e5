"""The Shanghai framer's record-to-line map (SseFramer.locate) over many batches."""

from __future__ import annotations

import re

import pytest

import obook
from obook.errors import FeedError
from obook.feeds.sources import iter_batches
from obook.feeds.sse import feed
from obook.gen.sse import generate


@pytest.fixture()
def many(tmp_path):
    """A log framed in more batches than the framer keeps at least (batches of 8 lines: its
    events in BizIndex order, any cut will do)."""
    events = [ln for ln in generate(1500, securities=3, seed=2) if "MsgType=19" in ln]
    p = tmp_path / "day.log"
    p.write_text("\n".join(sorted(events, key=lambda ln: int(re.search(r"BizIndex=(\d+)", ln).group(1)))) + "\n")
    return str(p)


def _framed(path, in_flight=None):
    framer = feed.SseFramer(path, lookahead=30)
    if in_flight is not None:
        framer.batches_in_flight(in_flight)
    batches = list(iter_batches(path, framer, max_records=16))
    assert len(batches) > 2 * feed.BATCHES_KEPT and all(b.error is None for b in batches)
    return framer, batches


def test_sse_framer_locate_batch_within_batches_in_flight_names_its_line(many):
    framer, batches = _framed(many, in_flight=1000)
    error = framer.locate(FeedError(many, 3, "unknown order ref 7 (security 600000)", unit="line"))
    first = bytes(batches[0].data)[:-1].split(b"\n")         # the first batch in event order
    lines = open(many, "rb").read().split(b"\n")
    assert error.unit == "line" and lines[error.record - 1] == first[2], error
    assert (error.feed_record, error.feed_line) == (3, error.record)
    assert error.reason == "unknown order ref 7 (security 600000) (record 3 in event order)"


def test_sse_framer_locate_batch_older_than_those_kept_says_its_line_is_unknown(many):
    framer, _ = _framed(many)
    error = framer.locate(FeedError(many, 3, "unknown order ref 7 (security 600000)", unit="line"))
    assert error.unit == "record" and error.record == 3 and not hasattr(error, "feed_line")
    assert error.reason == ("unknown order ref 7 (security 600000) (in event order; its line is not known: its batch "
                            f"is older than the {feed.BATCHES_KEPT} the framer keeps)")


@pytest.mark.parametrize("slots", [4, 100])
def test_sse_replay_tells_the_framer_its_batches_in_flight(many, monkeypatch, slots):
    """The engine's batches framed and not finished (its slots, and the one framed after
    them) are kept: a book error in any of them is named by its line, however many slots."""
    from obook.engine.replay import Replay

    told = []
    keep = feed.SseFramer.batches_in_flight
    monkeypatch.setattr(feed.SseFramer, "batches_in_flight", lambda self, n: (told.append(n), keep(self, n))[1])
    obook.bbo(many, workers=2).read_all()
    assert told == [5]
    told.clear()
    reader = Replay(many, workers=2, format="sse", slots=slots).reader()
    reader.read_all()
    assert told == [slots + 1]
