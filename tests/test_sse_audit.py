"""The Shanghai audit of a day cut into files: the rows before an error are the whole day's."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

import obook
from obook.gen.sse import generate

from hostile_support import batches_until_error


def _channel(line: str) -> int:
    return int(re.search(r"ChannelNo=(\d+)", line).group(1))


def _security(line: str) -> str:
    return re.search(r"SecurityID=(\d+)", line).group(1)


def _split_by_channel(tmp_path, lines):
    """The day's lines as one file per channel (a snapshot in its security's channel's file)."""
    of = {_security(ln): _channel(ln) for ln in lines if "MsgType=19" in ln}
    paths = []
    for c in sorted(set(of.values())):
        p = tmp_path / f"2024-01-05-ch{c}.log"
        p.write_text("\n".join(ln for ln in lines if of.get(_security(ln)) == c) + "\n")
        paths.append(p)
    return tuple(paths)


def _rows(source) -> tuple[list[dict], obook.FeedError]:
    got, error = batches_until_error(obook.audit(source, workers=1))
    rows = pa.Table.from_batches(got).drop_columns(["seq"]).to_pylist() if got else []
    return sorted(rows, key=lambda r: (r["ticker"], r["time"])), error


@pytest.mark.parametrize("after", [1000, 3000, 5000])
def test_sse_audit_book_error_day_split_by_channel_same_rows_as_the_day(tmp_path, after):
    """A cancel of an unknown order: the audit of the day's channel files read as one feed
    ends with the rows (but their lines) and the error record of the day in one file."""
    lines = generate(6000, securities=5, seed=3)
    k = next(i for i, ln in enumerate(lines) if "OrdType=68" in ln and i > after)
    lines[k] = re.sub(r"OrderNo=\d+", "OrderNo=99999", lines[k])
    day = tmp_path / "2024-01-05.log"
    day.write_text("\n".join(lines) + "\n")
    parts = _split_by_channel(tmp_path, lines)
    assert len(parts) > 1
    want, day_error = _rows(day)
    got, error = _rows(parts)
    assert "unknown order ref 99999" in error.reason and day_error.record == k + 1
    assert error.feed_record == day_error.feed_record
    assert want and got == want
