"""The Shanghai and Shenzhen text logs against hostile lines: impossible TransactTimes, and
lines too long to wait for (a clear error naming the line, the rows before it delivered,
memory bounded)."""

from __future__ import annotations

import pytest

import obook
from obook._kernels import l2_text
from obook.errors import FeedError
from obook.gen.szse import text_line

from hostile_support import cli_error, peak_rss_mib

SSE_ORDER = ("//SecurityIDSource=101 MsgType=192 MsgLen=64 SecurityID=600519 ChannelNo=6 ApplSeqNum={n} "
             "TradingPhase=0 OrderNo={n} Price={px} OrderQty=100 OrdType=65 Side=66 TransactTime={t} "
             "resv= BizIndex={n}")


def _sse(n, t=9300000, px=None):
    return SSE_ORDER.format(n=n, t=t, px=px or 1_000_000 + n)


@pytest.mark.parametrize("stamp", ["99999999999", "-1", "24000000", "9610000", "9306000"])
def test_sse_transacttime_not_a_time_of_day_strict_error_tolerant_skip(tmp_path, stamp):
    path = tmp_path / "day.log"
    path.write_text("\n".join([_sse(1), _sse(2), _sse(3, t=stamp), _sse(4)]) + "\n")
    rows = []
    with pytest.raises(FeedError) as info:
        for b in obook.bbo(path, workers=1):
            rows += b.to_pylist()
    assert info.value.record == 3 and f"bad TransactTime {stamp}" in info.value.reason
    assert len(rows) == 2
    stats: dict = {}
    assert obook.bbo(path, workers=1, on_error="skip", stats=stats).read_all().num_rows == 3
    assert stats["skipped"] == {"malformed line": 1}
    assert f"line 3: malformed line: bad TransactTime {stamp}" in cli_error("bbo", path)


def _sse_lines(n):
    return [_sse(i) for i in range(1, n + 1)]


def test_sse_line_too_long_names_its_line_after_the_rows_before(tmp_path):
    """111 lines, then a line longer than the cap: every row of the 111 lines is delivered
    and the error names line 112 (the whole buffer used to be refused as line 1)."""
    head = _sse_lines(111)
    alone = tmp_path / "head.log"
    alone.write_text("\n".join(head) + "\n")
    want = obook.bbo(alone, workers=1).read_all()
    path = tmp_path / "long.log"
    path.write_bytes(("\n".join(head) + "\n").encode() + b"//SecurityIDSource=101 " + b"x" * (3 * l2_text.MAX_LINE))
    reader = obook.bbo(path, workers=1)
    rows = []
    with pytest.raises(FeedError) as info:
        for b in reader:
            rows.append(b)
    assert info.value.record == 112 and f"line longer than {l2_text.MAX_LINE} bytes" in info.value.reason
    import pyarrow as pa
    assert want.num_rows == 111 and pa.Table.from_batches(rows, schema=reader.schema).equals(want)


def _szse_lines(n):
    stamp = 20240105_093000_000
    return [text_line(dict(MsgType=192, SecurityID="000001", ChannelNo=2011, ApplSeqNum=i, Price=100_000 + i,
                           OrderQty=100, Side=49, OrdType=50, TransactTime=stamp + i)) for i in range(1, n + 1)]


@pytest.mark.parametrize("workers", [1, 2])
def test_szse_line_too_long_names_its_line_after_the_rows_before(tmp_path, workers):
    head = _szse_lines(111)
    path = tmp_path / "long.log"
    path.write_bytes(("\n".join(head) + "\n").encode() + b"//SecurityIDSource=102 " + b"7" * (3 * l2_text.MAX_LINE)
                     + b"\n" + head[0].encode() + b"\n")
    rows = []
    with pytest.raises(FeedError) as info:
        for b in obook.bbo(path, workers=workers):
            rows += b.to_pylist()
    assert info.value.record == 112 and f"line longer than {l2_text.MAX_LINE} bytes" in info.value.reason
    assert [r["seq"] for r in rows] == list(range(1, 112))


def test_szse_line_cap_follows_the_module_constant(tmp_path, monkeypatch):
    monkeypatch.setattr(l2_text, "MAX_LINE", 4096)
    head = _szse_lines(5)
    path = tmp_path / "long.log"
    path.write_bytes(("\n".join(head) + "\n").encode() + b"//" + b"x" * (2 << 20))
    with pytest.raises(FeedError, match="line 6: line longer than 4096 bytes"):
        obook.bbo(path, workers=1).read_all()


@pytest.mark.parametrize("fmt", ["sse", "szse"])
def test_text_log_gigabyte_line_memory_bounded_one_line_error(tmp_path, fmt):
    """A 2 GiB line (a sparse file: no disk) after a few good lines: an error naming the
    line, and the process's peak RSS far below the line (it was ~1.9 GB for Shenzhen)."""
    head = _sse_lines(20) if fmt == "sse" else _szse_lines(20)
    path = tmp_path / "huge.log"
    with open(path, "wb") as f:
        f.write(("\n".join(head) + "\n").encode() + b"//")
        f.truncate(f.tell() + (2 << 30))
    code, rss, err = peak_rss_mib("bbo", "--format", fmt, path)
    assert code == 1 and "line 21: line longer than" in err, err[-1500:]
    assert rss < 400, f"peak RSS {rss:.0f} MiB"


@pytest.mark.parametrize("fmt", ["sse", "szse"])
def test_text_log_byte_order_mark_read_as_the_log_without_it(tmp_path, fmt):
    """A UTF-8 byte order mark before the first message (an editor saved the log): the log
    is told by its bytes and replays as the log without it, its first line included (the
    line and record numbers unchanged, a Shenzhen log's date read); a stream too."""
    from obook.gen.sse import generate as sse_lines
    from obook.gen.szse import generate as szse_records

    lines = sse_lines(3000, seed=2) if fmt == "sse" else [text_line(r) for r in szse_records(3000, seed=2)]
    plain, marked = tmp_path / "plain.log", tmp_path / "marked.log"
    plain.write_text("\n".join(lines) + "\n")
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    tables = ("bbo", "orders", "trades") + (("audit",) if fmt == "sse" else ())
    for name in tables:
        want = obook.table(name, plain, workers=1).read_all()
        assert want.num_rows and obook.table(name, marked, workers=1).read_all().equals(want), name
    with open(marked, "rb") as stream:
        assert obook.bbo(stream, workers=1).read_all().equals(obook.bbo(plain, workers=1).read_all())


def _szse_binary_day(path):
    from obook.gen.szse import binary_record, generate as szse_records

    path.write_bytes(b"".join(binary_record(r) for r in szse_records(2000, seed=2)))
    return path


@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("fmt", ["szse", "sse"])
def test_text_log_format_given_for_a_binary_feed_error_names_file_and_what_it_looks_like(tmp_path, fmt, on_error):
    """A text log format given for a binary feed (Shenzhen's binary records) is an error at
    line 1 naming the file, saying it is no text log and the format it looks like, in strict
    and tolerant mode, never 0 rows without an error."""
    path = _szse_binary_day(tmp_path / "sz.bin")
    with pytest.raises(FeedError) as info:
        obook.bbo(path, format=fmt, on_error=on_error, workers=1).read_all()
    assert info.value.record == 1 and str(path) in str(info.value)
    assert "not a text log: its first line holds binary data" in info.value.reason
    assert "the file looks like 'szse-bin'" in str(info.value)
    line = cli_error("bbo", path, "--format", fmt, "--on-error", on_error)
    assert line.startswith(f"error: {path}: line 1: not a text log") and "looks like 'szse-bin'" in line


@pytest.mark.parametrize("fmt", ["szse", "sse"])
def test_text_log_format_given_for_a_file_of_no_format_error_says_it_is_no_text_log(tmp_path, fmt):
    path = tmp_path / "blob.dat"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    for on_error in ("raise", "skip"):
        with pytest.raises(FeedError) as info:
            obook.trades(path, format=fmt, on_error=on_error, workers=1).read_all()
        assert info.value.record == 1 and "not a text log" in info.value.reason


@pytest.mark.parametrize("fmt", ["szse", "sse"])
def test_text_log_line_of_binary_data_strict_error_names_line_tolerant_counted(tmp_path, fmt):
    """A line of bytes no text has (a binary blob pasted or written into the log) is a
    malformed line, not a line that carries nothing: strict, an error naming it after the rows
    of the lines before it; tolerant, counted and the rest replayed."""
    lines = [ln.encode() for ln in (_szse_lines(6) if fmt == "szse" else [_sse(n) for n in range(1, 7)])]
    clean, damaged = tmp_path / "clean.log", tmp_path / "damaged.log"
    clean.write_bytes(b"\n".join(lines) + b"\n")
    damaged.write_bytes(b"\n".join(lines[:3] + [b"\x00\x01\xff\x10binary"] + lines[3:]) + b"\n")
    got = _line_4_strict_error_tolerant_one_skip(damaged, "binary data, not a line of the log (byte 0x00 at column 1")
    assert got.drop_columns(["seq"]).equals(obook.bbo(clean, workers=1).read_all().drop_columns(["seq"]))


def _line_4_strict_error_tolerant_one_skip(path, reason):
    """Line 4 of the log ``path`` stops a strict replay (``reason``) after the rows of lines 1
    to 3, and a tolerant one counts it once, no sequence gap: returns the tolerant BBO."""
    rows = []
    with pytest.raises(FeedError) as info:
        for b in obook.bbo(path, workers=1):
            rows += b.to_pylist()
    assert info.value.record == 4 and reason in info.value.reason
    assert [r["seq"] for r in rows] == [1, 2, 3]
    stats: dict = {}
    got = obook.bbo(path, workers=1, on_error="skip", stats=stats).read_all()
    assert sum(stats["skipped"].values()) == 1 and "sequence gap" not in stats["skipped"]
    return got


@pytest.mark.parametrize("on_error", ["raise", "skip"])
@pytest.mark.parametrize("other", ["szse", "szse-bin"])
def test_text_log_files_of_one_feed_one_of_another_format_given_format_error_names_it(tmp_path, other, on_error):
    """Files of one feed with the format given: a later file of another format (a Shenzhen log
    or binary feed after a Shanghai log) is an error naming it and both formats, as when the
    format is detected; never its every line skipped as malformed in tolerant mode."""
    from obook.errors import ObookError

    sse = tmp_path / "sh.log"
    sse.write_text("\n".join(_sse(n) for n in range(1, 5)) + "\n")
    if other == "szse":
        later = tmp_path / "sz.log"
        later.write_text("\n".join(_szse_lines(4)) + "\n")
    else:
        later = _szse_binary_day(tmp_path / "sz.bin")
    with pytest.raises(ObookError) as info:
        obook.bbo((sse, later), format="sse", on_error=on_error, workers=1).read_all()
    assert f"{later}: format {other}, but format 'sse' was given" in str(info.value)
    assert f"format {other}, but format 'sse' was given" in cli_error("bbo", sse, later, "--format", "sse",
                                                                      "--on-error", on_error)


@pytest.mark.parametrize("given,other", [("sse", "szse"), ("szse", "sse")])
def test_text_log_of_the_other_exchange_given_tolerant_every_line_skipped_is_an_error(tmp_path, given, other):
    """A Shenzhen log given as Shanghai (or the other way) in tolerant mode: every line is
    malformed for the format given; the replay ends in an error saying every record was
    skipped and naming the format the file looks like, not 0 rows and exit 0."""
    path = tmp_path / "day.log"
    path.write_text("\n".join(_szse_lines(5) if other == "szse" else [_sse(n) for n in range(1, 6)]) + "\n")
    with pytest.raises(FeedError) as info:
        obook.bbo(path, format=given, on_error="skip", workers=1).read_all()
    assert "every record was skipped" in info.value.reason and str(path) in str(info.value)
    assert f"the file looks like '{other}'" in str(info.value)
    line = cli_error("bbo", path, "--format", given, "--on-error", "skip")
    assert "every record was skipped" in line and f"looks like '{other}'" in line


@pytest.mark.parametrize("head", [" //", " /", "\t//", "  ", "/\r", "\r/"])
@pytest.mark.parametrize("fmt", ["szse", "sse"])
def test_text_log_message_behind_spaces_strict_error_tolerant_counted(tmp_path, fmt, head):
    """A message whose ``//`` is behind spaces, or damaged into a space or a carriage return
    (``" /Security..."``, ``"/\\rSecurity..."``), is a message that lost its marker: strict,
    an error naming its line after the rows of the lines before it; tolerant, counted once,
    never passed over as a line of nothing."""
    lines = _szse_lines(6) if fmt == "szse" else [_sse(n) for n in range(1, 7)]
    lines[3] = head + lines[3][2:]
    path = tmp_path / "day.log"
    path.write_text("\n".join(lines) + "\n")
    got = _line_4_strict_error_tolerant_one_skip(path, "a message without its leading '//'")
    assert got.num_rows == 5


@pytest.mark.parametrize("joint", [b" ", b"=", b"x", b""])
def test_sse_two_messages_on_one_line_strict_error_tolerant_counted(tmp_path, joint):
    """Two Shanghai messages on one line (the line end between them lost, or damaged into a
    space, '=' or a letter): the line is malformed, never read as its second message alone
    (the first lost without a word)."""
    lines = [_sse(n).encode() for n in range(1, 8)]
    lines[3:5] = [lines[3] + joint + lines[4]]
    path = tmp_path / "day.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    got = _line_4_strict_error_tolerant_one_skip(path, "malformed line: a second message at column")
    assert got.num_rows == 5           # orders 1 to 3, 6 and 7
