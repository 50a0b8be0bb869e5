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



def _time(line: str, key: str) -> int:
    """The line's TransactTime (HHMMSScc) or DataTimeStamp (HHMMSS) in hundredths of a second."""
    v = int(re.search(key + r"=(\d+)", line).group(1))
    if key == "DataTimeStamp":
        v *= 100
    return ((v // 1000000) * 3600 + (v // 10000 % 100) * 60 + v // 100 % 100) * 100 + v % 100


def _published(lines: list[str]) -> list[str]:
    """The day with each snapshot stamped T before the first event line stamped T or later,
    as the exchange publishes it (the events of [T, T + 1 s) come after it)."""
    snaps = sorted((_time(ln, "DataTimeStamp"), i, ln) for i, ln in enumerate(lines) if "MsgType=111" in ln)
    out, s = [], 0
    for ln in lines:
        if "MsgType=111" in ln:
            continue
        while s < len(snaps) and snaps[s][0] <= _time(ln, "TransactTime"):
            out.append(snaps[s][2])
            s += 1
        out.append(ln)
    return out + [ln for _, _, ln in snaps[s:]]


@pytest.mark.parametrize("nth", [-60, -30, -10])
def test_sse_audit_bad_line_day_split_by_channel_rows_are_the_clean_days(tmp_path, nth):
    """A malformed line just after a snapshot in the second channel's file (the first
    channel's file runs to the day's end): every audit row delivered before the error is
    the clean day's row of its snapshot, and the error names the line."""
    lines = _published(generate(20000, securities=5, seed=3))
    parts = _split_by_channel(tmp_path, lines)
    want, error = _rows(parts)
    assert error is None
    text = parts[1].read_text().splitlines()
    k = [i for i, ln in enumerate(text) if "MsgType=111" in ln][nth] + 1
    text[k] = "//SecurityIDSource=101 MsgType=192 broken"
    parts[1].write_text("\n".join(text) + "\n")
    got, error = _rows(parts)
    assert "malformed line" in error.reason and error.record == k + 1
    assert got and all(row in want for row in got)
    assert {r["ticker"] for r in got} & {_security(ln) for ln in text if "ChannelNo=2" in ln}


def _interleaved(text: list[str], start: int) -> int:
    """A line index k >= ``start`` of an event of a security whose snapshot stamped T comes
    before it, with an event of that security stamped T + 1 s or later between them."""
    for s in range(start, len(text)):
        if "MsgType=111" not in text[s]:
            continue
        sec, end = _security(text[s]), _time(text[s], "DataTimeStamp") + 100
        mine = [j for j in range(s + 1, min(s + 200, len(text)))
                if "MsgType=19" in text[j] and _security(text[j]) == sec]
        later = [j for j in mine if _time(text[j], "TransactTime") >= end]
        if later:
            earlier = [j for j in mine if j > later[0] and _time(text[j], "TransactTime") < end]
            if earlier:
                return earlier[0]
    raise AssertionError("no such line")


def test_sse_audit_bad_line_after_a_later_event_of_its_security_rows_are_the_clean_days(tmp_path):
    """A malformed line in place of an event that comes, in the file, after a later event of
    its security (the order and trade streams are interleaved): the snapshot that event is
    in the window of is not kept, every row kept is the clean day's."""
    lines = _published(generate(20000, securities=5, seed=3))
    parts = _split_by_channel(tmp_path, lines)
    want, _ = _rows(parts)
    text = parts[1].read_text().splitlines()
    k = _interleaved(text, 4000)
    text[k] = "//SecurityIDSource=101 MsgType=192 broken"
    parts[1].write_text("\n".join(text) + "\n")
    got, error = _rows(parts)
    assert error.record == k + 1
    assert got and all(row in want for row in got)


def _event(sec, channel, biz, time, no, kind=65):
    return (f"//SecurityIDSource=101 MsgType=192 SecurityID={sec} ChannelNo={channel} OrderNo={no} "
            f"Price=10000 OrderQty=100000 OrdType={kind} Side=66 TransactTime={time} BizIndex={biz}")


def _snap(sec, stamp):
    """A snapshot of one bid level, every other level empty, no trade yet."""
    levels = {f"{s}Level[{k}].{f}": 0 for s in ("Bid", "Ask") for k in range(10) for f in ("Price", "Qty")}
    levels.update({"BidLevel[0].Price": 10000, "BidLevel[0].Qty": 100000})
    return (f"//SecurityIDSource=101 MsgType=111 SecurityID={sec} ChannelNo=0 DataTimeStamp={stamp} "
            "NumTrades=0 TotalVolumeTrade=0 TotalValueTrade=0 LastPx=0 HighPx=0 LowPx=0 "
            + " ".join(f"{k}={v}" for k, v in levels.items()))


def test_sse_audit_book_error_later_event_of_another_security_of_its_channel_keeps_row(tmp_path):
    """A snapshot whose security has no event after it: a later event (T + 1 s or later) of
    another security of its channel before a book error settles it, one of another channel
    does not."""
    day = [_event(600000, 1, 1, 9300000, 1), _event(600014, 2, 1, 9300000, 1),
           _snap(600000, 93001), _snap(600014, 93001), _event(600007, 1, 2, 9300300, 2)]
    clean = tmp_path / "2024-01-05.log"
    clean.write_text("\n".join(day) + "\n")
    bad = tmp_path / "2024-01-05-bad.log"
    bad.write_text("\n".join(day + [_event(600007, 1, 3, 9300400, 999, kind=68)]) + "\n")
    want, _ = _rows(clean)
    got, error = _rows(bad)
    assert "unknown order ref 999" in error.reason
    assert [r["ticker"] for r in got] == ["600000"] and got[0] == next(r for r in want if r["ticker"] == "600000")
    assert got[0]["matched"]


def test_sse_audit_book_error_security_on_two_channels_or_none_row_left_out(tmp_path):
    """A security with events on two channels (one channel's prefix may lack an earlier
    event of it on the other) and one with no event have no row after a book error; a
    security of one channel passed has its row."""
    day = [_event(600000, 1, 1, 9300000, 1), _event(600000, 2, 1, 9300000, 5), _event(600007, 1, 2, 9300000, 2),
           _snap(600000, 93001), _snap(600007, 93001), _snap(600014, 93001),
           _event(600000, 1, 3, 9300300, 3), _event(600000, 2, 2, 9300300, 6),
           _event(600007, 1, 4, 9300300, 4), _event(600007, 1, 5, 9300400, 999, kind=68)]
    p = tmp_path / "2024-01-05.log"
    p.write_text("\n".join(day) + "\n")
    got, error = _rows(p)
    assert "unknown order ref 999" in error.reason
    assert [r["ticker"] for r in got] == ["600007"]
