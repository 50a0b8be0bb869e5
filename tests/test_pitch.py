"""Cboe PITCH: an ITCH day written as PITCH replays to the ITCH day's tables; the messages,
units, errors and front ends of the format."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import obook
from obook.errors import FeedError
from obook.feeds import detect_format
from obook.gen.itch import write_itch

from pitch_builder import (ADD_EXPANDED, ADD_LONG, ADD_SHORT, BREAK, DELETE, EXECUTED, EXECUTED_AT_PRICE,
                           MODIFY_LONG, MODIFY_SHORT, REDUCE_SHORT, TIME, TIME_REF, TRADE_LONG, TRADE_SHORT, UNIT,
                           itch_as_pitch, msg, units)

TABLES = ("bbo", "trades", "orders", "depth")


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    d = tmp_path_factory.mktemp("pitch")
    itch = d / "day.itch"
    write_itch(itch, 20_000, 12, seed=7)
    data, seq_map, roots, hidden = itch_as_pitch(itch.read_bytes(), seed=7)
    pitch = d / "day.pitch"
    pitch.write_bytes(data)
    return itch, pitch, seq_map, roots, hidden


def _rows(table: pa.Table, drop=("locate",)) -> list[dict]:
    return table.drop_columns([c for c in drop if c in table.schema.names]).to_pylist()


def _itch_as_pitch_rows(name, table, seq_map, roots, hidden):
    """The ITCH replay's rows as the PITCH replay gives them: PITCH's message numbers, one id
    per order across replaces (a replace is a modify, action M, no new ref); no crosses or breaks (not
    written, so no trade is marked broken); an execution ITCH does not print is printed by
    PITCH (its rows are dropped there)."""
    out = []
    for r in _rows(table, ("locate", "broken")):
        if name == "trades" and r["kind"] in ("Q", "B"):
            continue
        r["seq"] = seq_map[r["seq"]]
        if name in ("trades", "orders") and r["kind" if name == "trades" else "action"] != "P":
            r["ref"] = roots.get(r["ref"], r["ref"])
        if name == "orders" and r["action"] == "U":
            r["action"] = "M"
            r["new_ref"] = None          # a modify keeps its id: no new one
        out.append(r)
    return out


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("name", TABLES)
def test_pitch_itch_day_written_as_pitch_same_tables_as_itch(days, name, workers):
    itch, pitch, seq_map, roots, hidden = days
    # the PITCH day's Time Reference names 2026-11-30: the ITCH day read as that day has the same timestamps
    want = _itch_as_pitch_rows(name, getattr(obook, name)(itch, workers=1, date="2026-11-30").read_all(), seq_map,
                               roots, hidden)
    got = _rows(getattr(obook, name)(pitch, workers=workers).read_all(), ("locate", "broken"))
    if name == "trades":
        got = [r for r in got if r["match"] not in hidden or r["kind"] != "C"]
    assert len(want) > 500
    assert got == want


def test_pitch_day_has_every_add_trade_and_order_message_form(days):
    data = days[1].read_bytes()
    seen, pos = set(), 0
    while pos < len(data):
        length, count = int.from_bytes(data[pos:pos + 2], "little"), data[pos + 2]
        p = pos + UNIT.size
        for _ in range(count):
            seen.add(data[p + 1])
            p += data[p]
        pos += length
    assert {0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2F, 0x30, 0xB1} <= seen


def test_pitch_generator_day_same_tables_as_its_itch_day(tmp_path):
    from obook.gen.pitch import write_pitch

    n = write_pitch(tmp_path / "g.pitch", 6000, 6, seed=3)
    write_itch(tmp_path / "g.itch", 6000, 6, seed=3)
    assert n > 5000
    for name in ("bbo", "depth"):
        a = getattr(obook, name)(tmp_path / "g.itch", workers=1, date="2026-11-30").read_all().drop_columns(
            ["seq", "locate"])
        b = getattr(obook, name)(tmp_path / "g.pitch", workers=1).read_all().drop_columns(["seq", "locate"])
        assert a.num_rows > 500 and a.equals(b)


def test_pitch_detected_by_name_with_itch_in_it_and_by_content(days, tmp_path):
    assert detect_format(days[1]) == "pitch"
    other = tmp_path / "capture.dat"
    other.write_bytes(days[1].read_bytes()[:4096])
    assert detect_format(other) == "pitch"
    for name in ("12302019.NASDAQ_ITCH50", "day.bin", "itch_day.gz"):    # named as ITCH, PITCH bytes
        (tmp_path / name).write_bytes(days[1].read_bytes()[:4096])
        assert detect_format(tmp_path / name) == "pitch", name
    (tmp_path / "day.bin").write_bytes(b"\x00\x0cS" + bytes(10))      # an ITCH system event
    assert detect_format(tmp_path / "day.bin") == "itch"


def test_pitch_name_on_bytes_another_format_knows_read_as_that_format(days, tmp_path):
    (tmp_path / "day.dbn").write_bytes(days[1].read_bytes()[:4096])      # PITCH bytes named as DBN
    assert detect_format(tmp_path / "day.dbn") == "pitch"
    csv = tmp_path / "orders.pitch"           # a CSV order feed (its header) named as PITCH
    csv.write_bytes(b"Time,Ticker,Order,T,Shares,Price\n34200000,AAA,1,B,100,1000000\n")
    assert detect_format(csv) == "csv"
    assert obook.bbo(csv).read_all().num_rows == 1
    (tmp_path / "nasdaq.pitch").write_bytes(days[0].read_bytes()[:4096])    # an ITCH day named as PITCH
    assert detect_format(tmp_path / "nasdaq.pitch") == "itch"
    (tmp_path / "short.pitch").write_bytes(b"\x00")                   # too few bytes to tell: the name
    assert detect_format(tmp_path / "short.pitch") == "pitch"
    (tmp_path / "noise.pitch").write_bytes(bytes(range(7, 64)))        # no format's bytes: the name
    assert detect_format(tmp_path / "noise.pitch") == "pitch"

def test_pitch_ticker_the_feed_never_names_error_speaks_of_books_not_a_directory(days):
    with pytest.raises(obook.ObookError) as e:
        obook.bbo(days[1], tickers=["NOPE"], workers=1).read_all()
    assert str(e.value) == f"{days[1]}: not in the feed: NOPE (no book of the feed has that name)"

def test_pitch_time_reference_past_the_first_4_kb_no_timestamp_unless_date_given(tmp_path):
    import datetime as dt
    from zoneinfo import ZoneInfo

    midnight = int(dt.datetime(2026, 3, 2, tzinfo=ZoneInfo("America/New_York")).timestamp())
    add = msg(ADD_LONG, 1, 11, b"B", 300, b"ZVZZT ", 1_000_000, 1)
    for times, stamped in ((10, True), (1000, False)):        # 1000 Time messages: 6 KB before it
        p = tmp_path / f"t{times}.pitch"
        p.write_bytes(units([msg(TIME, 34_000 + i) for i in range(times)]
                            + [msg(TIME_REF, midnight, 34_200, 0, 20260302), add], iter([20] * 1000)))
        assert ("timestamp" in obook.bbo(p, workers=1).read_all().schema.names) == stamped
        stream = obook.bbo(open(p, "rb"), format="pitch", workers=1).read_all()
        assert ("timestamp" in stream.schema.names) == stamped
        given = obook.bbo(p, workers=1, date="2026-03-02").read_all().column("timestamp")[0]
        assert given.value == (midnight + 34_200) * 10**9 + 1

def _feed(tmp_path, *messages, sizes=(64,), name="t.pitch"):
    p = tmp_path / name
    p.write_bytes(units(list(messages), iter(sizes * 1000)))
    return p


def _adds():
    return [msg(TIME, 34_200), msg(ADD_LONG, 5, 11, b"B", 300, b"ZVZZT ", 1_000_000, 1),
            msg(ADD_SHORT, 6, 12, b"B", 200, b"ZVZZT ", 10_000, 1),
            msg(ADD_EXPANDED, 7, 13, b"S", 100, b"ZVZZT   ", 1_000_100, 1, b"MPID", b"N")]


def test_pitch_messages_change_the_book_as_the_spec_says(tmp_path):
    p = _feed(tmp_path, *_adds(),
              msg(EXECUTED, 8, 11, 100, 901),                           # 11: 200 left
              msg(EXECUTED_AT_PRICE, 9, 12, 50, 150, 902, 1_000_050),   # 12: 150 left, printed at 100.0050
              msg(REDUCE_SHORT, 10, 13, 40),                            # 13: 60 left
              msg(MODIFY_LONG, 11, 13, 60, 1_000_200, 1),               # 13 at 100.0200
              msg(TRADE_SHORT, 12, 0, b"S", 10, b"ZVZZT ", 10_001, 903),
              msg(BREAK, 13, 903),
              msg(DELETE, 14, 11))
    bbo = obook.bbo(p, workers=1).read_all().to_pylist()
    assert [(r["seq"], r["time"], r["bid_px"], r["bid_qty"], r["ask_px"], r["ask_qty"]) for r in bbo] == [
        (2, 34_200 * 10**9 + 5, 1_000_000, 300, None, None),
        (3, 34_200 * 10**9 + 6, 1_000_000, 500, None, None),
        (4, 34_200 * 10**9 + 7, 1_000_000, 500, 1_000_100, 100),
        (5, 34_200 * 10**9 + 8, 1_000_000, 400, 1_000_100, 100),
        (6, 34_200 * 10**9 + 9, 1_000_000, 350, 1_000_100, 100),
        (7, 34_200 * 10**9 + 10, 1_000_000, 350, 1_000_100, 60),
        (8, 34_200 * 10**9 + 11, 1_000_000, 350, 1_000_200, 60),
        (11, 34_200 * 10**9 + 14, 1_000_000, 150, 1_000_200, 60)]
    assert {r["ticker"] for r in bbo} == {"ZVZZT"}
    trades = obook.trades(p, workers=1).read_all().to_pylist()
    assert [(r["kind"], r["price"], r["shares"], r["side"], r["match"], r["ticker"]) for r in trades][:3] == [
        ("E", 1_000_000, 100, "B", 901, "ZVZZT"), ("C", 1_000_050, 50, "B", 902, "ZVZZT"),
        ("P", 1_000_100, 10, "S", 903, "ZVZZT")]
    assert (trades[3]["kind"], trades[3]["match"], trades[3]["ticker"], trades[3]["side"]) == ("B", 903, "ZVZZT", None)
    assert len(trades) == 4


@pytest.mark.parametrize("workers", [1, 2])
def test_pitch_executed_at_price_remaining_quantity_becomes_the_orders_size(tmp_path, workers):
    p = _feed(tmp_path, msg(TIME, 34_200),
              msg(ADD_LONG, 1, 11, b"B", 300, b"ZVZZT ", 1_000_000, 1),
              msg(ADD_LONG, 2, 12, b"B", 100, b"ZVZZT ", 1_000_000, 1),
              msg(EXECUTED_AT_PRICE, 3, 11, 100, 500, 901, 1_000_100),  # 11: 200 left, refilled to 500
              msg(EXECUTED_AT_PRICE, 4, 12, 50, 20, 902, 1_000_100),    # 12: 50 left, 20 remain
              msg(EXECUTED_AT_PRICE, 5, 11, 500, 40, 903, 1_000_100),   # 11: all taken, 40 refilled
              msg(ADD_LONG, 6, 13, b"S", 70, b"ZVZZT ", 1_000_500, 1),
              msg(EXECUTED_AT_PRICE, 7, 13, 30, 40, 904, 1_000_500),    # 13: as the execution leaves it
              msg(DELETE, 8, 11), msg(DELETE, 9, 12))
    bbo = obook.bbo(p, workers=workers).read_all().to_pylist()
    assert [(r["seq"], r["bid_qty"], r["bid_orders"], r["ask_qty"]) for r in bbo] == [
        (2, 300, 1, None), (3, 400, 2, None),
        (4, 600, 2, None),                               # executed 100, then 500 instead of 200
        (5, 520, 2, None),                               # executed 50, then 20 instead of 50
        (6, 60, 2, None),                                # all 500 executed, then 40 back in the book
        (7, 60, 2, 70), (8, 60, 2, 40), (9, 20, 1, 40), (10, None, None, 40)]
    trades = obook.trades(p, workers=workers).read_all().to_pylist()
    assert [(r["price"], r["shares"], r["match"]) for r in trades] == [
        (1_000_100, 100, 901), (1_000_100, 50, 902), (1_000_100, 500, 903), (1_000_500, 30, 904)]
    orders = obook.orders(p, workers=workers).read_all().to_pylist()
    assert [(r["seq"], r["action"], r["ref"], r["price"], r["shares"], r["remaining"], r["queue_shares_ahead"])
            for r in orders if r["seq"] in (4, 5, 6)] == [
        (4, "C", 11, 1_000_000, 100, 200, 0), (4, "M", 11, 1_000_000, 500, 500, 100),   # a refill: the back
        (5, "C", 12, 1_000_000, 50, 50, 0), (5, "X", 12, 1_000_000, 30, 20, 0),         # less: in its place
        (6, "C", 11, 1_000_000, 500, 0, None), (6, "M", 11, 1_000_000, 40, 40, 20)]


@pytest.mark.parametrize("workers", [1, 2])
def test_pitch_executed_at_price_with_another_remaining_one_bbo_and_depth_row_per_message(tmp_path, workers):
    p = _feed(tmp_path, msg(TIME, 34_200),
              msg(ADD_LONG, 1, 11, b"B", 300, b"ZVZZT ", 1_000_000, 1),
              msg(ADD_LONG, 2, 12, b"S", 100, b"ZVZZT ", 1_000_500, 1),
              msg(EXECUTED_AT_PRICE, 3, 11, 100, 500, 901, 1_000_000),  # 200 left, refilled to 500
              msg(EXECUTED_AT_PRICE, 4, 11, 100, 50, 902, 1_000_000),   # 400 left, 50 remain
              msg(EXECUTED_AT_PRICE, 5, 11, 50, 80, 903, 1_000_000))    # all taken, 80 back
    bbo = obook.bbo(p, workers=workers).read_all().to_pylist()
    assert [(r["seq"], r["bid_qty"]) for r in bbo] == [(2, 300), (3, 300), (4, 500), (5, 50), (6, 80)]
    depth = obook.depth(p, workers=workers, levels=2).read_all().to_pylist()
    assert [(r["seq"], r["bid_qty_1"]) for r in depth] == [(2, 300), (3, 300), (4, 500), (5, 50), (6, 80)]


@pytest.mark.parametrize("flags, ahead", [(1, 200), (3, 0)])     # bit 1: Maintain Priority
def test_pitch_modify_keeps_its_place_only_with_maintain_priority(tmp_path, flags, ahead):
    p = _feed(tmp_path, msg(TIME, 34_200), msg(ADD_LONG, 1, 1, b"B", 300, b"ZVZZT ", 10_000, 1),
              msg(ADD_LONG, 2, 2, b"B", 200, b"ZVZZT ", 10_000, 1), msg(MODIFY_SHORT, 3, 1, 250, 100, flags))
    last = obook.orders(p, workers=1).read_all().to_pylist()[-1]
    assert (last["action"], last["ref"], last["remaining"], last["queue_shares_ahead"]) == ("M", 1, 250, ahead)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_pitch_unknown_order_strict_names_message_tolerant_counts_once(tmp_path, workers):
    p = _feed(tmp_path, *_adds(), msg(DELETE, 8, 77), msg(DELETE, 9, 11), msg(EXECUTED, 9, 11, 5, 1))
    with pytest.raises(FeedError, match=r"message 5\b.*unknown order id 77"):
        obook.bbo(p, workers=workers).read_all()
    from obook.engine.replay import Replay

    r = Replay(str(p), workers=workers, on_error="skip", tables=("bbo",))
    rows = r.reader("bbo").read_all()
    assert rows.num_rows == 4
    assert r.stats["skipped"] == {"unknown order id": 2}


def test_pitch_duplicate_order_id_strict_error(tmp_path):
    p = _feed(tmp_path, *_adds(), msg(ADD_SHORT, 8, 12, b"S", 1, b"OTHER ", 20_000, 1))
    with pytest.raises(FeedError, match=r"message 5\b.*duplicate order id 12"):
        obook.bbo(p, workers=2).read_all()


def test_pitch_over_execution_is_the_books_error_naming_symbol(tmp_path):
    p = _feed(tmp_path, *_adds(), msg(EXECUTED, 8, 13, 101, 1))
    with pytest.raises(FeedError, match=r"message 5\b.*over-execution 13 \(symbol ZVZZT\)"):
        obook.bbo(p, workers=1).read_all()


def test_pitch_sequence_gap_strict_error_tolerant_counted(tmp_path):
    body = b"".join(_adds())
    data = UNIT.pack(8 + len(body), 4, 1, 1) + body + UNIT.pack(8 + len(_adds()[1]), 1, 1, 9) + _adds()[1]
    p = tmp_path / "gap.pitch"
    p.write_bytes(data)
    with pytest.raises(FeedError, match=r"message 5\b.*sequence gap on unit 1: expected 5, got 9"):
        obook.bbo(p, workers=1).read_all()


def test_pitch_unit_sent_again_strict_error_says_it_repeats_messages(tmp_path):
    body = b"".join(_adds())
    unit = UNIT.pack(8 + len(body), 4, 1, 1) + body
    p = tmp_path / "again.pitch"
    p.write_bytes(unit + unit)
    with pytest.raises(FeedError, match=r"message 5\b.*sequence gap on unit 1: expected 5, got 1 \(going back: "
                                        r"messages 1 to 4 of the unit again"):
        obook.bbo(p, workers=1).read_all()


def _unit(messages: list, count_from: int) -> bytes:
    body = b"".join(messages)
    return UNIT.pack(8 + len(body), len(messages), 1, count_from) + body


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("again", ["whole", "overlapping"])
def test_pitch_unit_sent_again_tolerant_its_messages_seen_already_are_not_applied_again(tmp_path, workers, again):
    """A tolerant replay counts a unit whose sequence goes back as a gap and applies only its
    messages not seen before: an execution or a reduce does not take its shares twice."""
    first = _unit(_adds(), 1)                                                   # messages 1-4
    execs = [msg(EXECUTED, 8, 11, 100, 901), msg(REDUCE_SHORT, 9, 13, 40)]      # 5-6
    later = msg(EXECUTED, 10, 12, 50, 902)                                       # 7
    plain = tmp_path / "plain.pitch"
    plain.write_bytes(first + _unit(execs, 5) + _unit([later], 7))
    sent = tmp_path / "again.pitch"
    # the executions' unit again, or a unit from message 6 on (6 again, 7 new)
    repeat = _unit(execs, 5) if again == "whole" else _unit([execs[1], later], 6)
    sent.write_bytes(first + _unit(execs, 5) + repeat + (_unit([later], 7) if again == "whole" else b""))
    from obook.engine.replay import Replay

    for table in ("bbo", "trades", "orders", "depth"):
        want = getattr(obook, table)(plain, workers=workers).read_all().drop_columns(["seq"])
        r = Replay(str(sent), workers=workers, on_error="skip", tables=(table,))
        got = r.reader(table).read_all().drop_columns(["seq"])
        assert got.to_pylist() == want.to_pylist(), table
        assert r.stats["skipped"] == {"sequence gap": 1}, table


@pytest.mark.parametrize("cut, reason", [(30, "type 0x21 needs 34 bytes, has 30"), (None, "do not fill")])
def test_pitch_malformed_unit_strict_names_message(tmp_path, cut, reason):
    adds = _adds()
    if cut:
        adds[1] = bytes([cut]) + adds[1][1:cut]
    body = b"".join(adds)
    data = UNIT.pack(8 + len(body) + (0 if cut else 3), 4, 1, 1) + body + (b"" if cut else b"\0\0\0")
    p = tmp_path / "bad.pitch"
    p.write_bytes(data)
    with pytest.raises(FeedError, match=reason):
        obook.bbo(p, workers=1).read_all()


def test_pitch_truncated_unit_names_offset(tmp_path, days):
    p = tmp_path / "cut.pitch"
    p.write_bytes(days[1].read_bytes()[:5000])
    with pytest.raises(FeedError, match="truncated|cut"):
        obook.bbo(p, workers=1).read_all()


def test_pitch_times_follow_each_units_own_time_messages(tmp_path):
    a = units([msg(TIME, 100), msg(ADD_LONG, 5, 1, b"B", 1, b"AAA   ", 10_000, 1)], iter([2]), unit=1)
    b = units([msg(TIME, 200), msg(ADD_LONG, 6, 2, b"B", 1, b"BBB   ", 10_000, 1)], iter([2]), unit=2)
    c = units([msg(ADD_LONG, 7, 3, b"S", 1, b"AAA   ", 20_000, 1)], iter([1]), unit=1, first_seq=3)
    p = tmp_path / "units.pitch"
    p.write_bytes(a + b + c)
    times = [r["time"] for r in obook.bbo(p, workers=1).read_all().to_pylist()]
    assert times == [100 * 10**9 + 5, 200 * 10**9 + 6, 100 * 10**9 + 7]


def test_pitch_front_ends_duckdb_polars_cli(days, tmp_path):
    import pyarrow.parquet as pq

    from obook.duckdb import connect
    from obook.polars import scan_bbo

    pitch = days[1]
    want = obook.bbo(pitch, workers=1).read_all()
    con = connect()
    got = con.sql(f"SELECT * FROM obook_bbo('{pitch}', workers := 2) ORDER BY seq").arrow()
    got = got.read_all() if isinstance(got, pa.RecordBatchReader) else got
    assert got.to_pylist() == want.to_pylist()
    con.close()
    assert scan_bbo(pitch, workers=2).collect().to_arrow().to_pylist() == want.to_pylist()
    out = tmp_path / "x.parquet"
    run = subprocess.run([sys.executable, "-m", "obook", "bbo", str(pitch), "--workers", "2", "--output", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert pq.read_table(out).to_pylist() == want.to_pylist()
    assert pc.count(want["ticker"]).as_py() == want.num_rows


def test_pitch_gen_command_writes_a_day(tmp_path):
    out = tmp_path / "g.pitch"
    run = subprocess.run([sys.executable, "-m", "obook", "gen", "pitch", str(out), "-n", "3000", "-k", "4"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "messages" in run.stderr and obook.bbo(out, workers=1).read_all().num_rows > 100


@pytest.mark.parametrize("workers", [1, 2])
def test_pitch_symbol_with_a_high_byte_is_its_latin1_name(tmp_path, workers):
    from obook._kernels.pitch import pack, unit

    path = tmp_path / "high.pitch"
    path.write_bytes(unit([pack("time", seconds=34200),
                           pack("add_order_long", offset=1, order_id=1, side=b"B", quantity=100, symbol=b"\xc1AA",
                                price=1000000)], 1, 1))
    t = obook.bbo(path, workers=workers).read_all()
    assert t.column("ticker").to_pylist() == ["\xc1AA"] and t.column("bid_px").to_pylist() == [1000000]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("price", [2**64 - 1, 2**63])
def test_pitch_price_of_2_63_or_more_strict_error_tolerant_skip(tmp_path, workers, price):
    from obook._kernels.pitch import pack, unit

    add = lambda oid, side, px: pack("add_order_long", offset=oid, order_id=oid, side=side, quantity=100,  # noqa: E731
                                     symbol=b"AAA", price=px)
    path = tmp_path / "px.pitch"
    path.write_bytes(unit([pack("time", seconds=34200), add(1, b"B", 1_000_000), add(2, b"S", price),
                           add(3, b"S", 1_010_000)], 1, 1))
    rows, error = [], None
    try:
        for b in obook.bbo(path, workers=workers):
            rows += b.to_pylist()
    except FeedError as e:
        error = e
    assert error is not None and error.record == 3 and "price of 2**63 or more" in error.reason
    assert [(r["bid_px"], r["ask_px"]) for r in rows] == [(1_000_000, None)]
    stats: dict = {}
    t = obook.bbo(path, workers=workers, on_error="skip", stats=stats).read_all()
    assert [(r["bid_px"], r["ask_px"]) for r in t.to_pylist()] == [(1_000_000, None), (1_000_000, 1_010_000)]
    assert sum(stats["skipped"].values()) == 1


def _broken_day(seed: int):
    """Adds on a few symbols, executions and trades with execution ids, and Trade Breaks
    naming some of them (some twice, some before a later trade of another id): the messages
    and, for each execution id, the message numbers of the breaks naming it."""
    import random

    rnd = random.Random(seed)
    syms = [b"AAA   ", b"BBB   ", b"CCC   "]
    out, breaks, xids, live, oid = [msg(TIME, 34_200)], {}, [], [], 1
    for i in range(3000):
        r = rnd.random()
        if r < 0.35 or not live:
            out.append(msg(ADD_LONG, i, oid, b"B" if rnd.random() < 0.5 else b"S", 1_000_000,
                           rnd.choice(syms), 1_000_000 + rnd.randrange(5) * 100, 1))
            live.append(oid)
            oid += 1
        elif r < 0.55:
            k = live.pop(rnd.randrange(len(live)))
            out.append(msg(EXECUTED, i, k, 100, 10_000 + i))
            xids.append(10_000 + i)
        elif r < 0.75:
            out.append(msg(TRADE_LONG, i, 0, b"B", 5, rnd.choice(syms), 1_000_000, 10_000 + i))
            xids.append(10_000 + i)
        elif xids:
            x = rnd.choice(xids)
            out.append(msg(BREAK, i, x))
            breaks.setdefault(x, []).append(len(out))       # its message number (1-based)
    return out, breaks


@pytest.mark.parametrize("workers", [1, 2])
def test_pitch_trade_named_by_a_later_break_is_broken(tmp_path, workers):
    messages, breaks = _broken_day(5)
    p = _feed(tmp_path, *messages, sizes=(7, 30, 1))
    trades = obook.trades(p, workers=workers).read_all().to_pylist()
    rows = [r for r in trades if r["kind"] != "B"]
    assert len(rows) > 500 and sum(r["broken"] for r in rows) > 100
    for r in rows:
        assert r["broken"] == any(seq > r["seq"] for seq in breaks.get(r["match"], ())), r
    assert not any(r["broken"] for r in trades if r["kind"] == "B")


def test_pitch_breaks_numbered_past_a_bad_unit_in_a_tolerant_replay(tmp_path):
    messages, breaks = _broken_day(6)
    good = units(messages, iter((40,) * 1000))
    bad = UNIT.pack(UNIT.size + 3, 1, 1, 0) + b"\x03\x21\x00"           # a unit its message cannot fill
    p = tmp_path / "t.pitch"
    cut = len(units(messages[:400], iter((40,) * 1000)))
    p.write_bytes(good[:cut] + bad + good[cut:])
    trades = obook.trades(p, workers=1, on_error="skip").read_all().to_pylist()
    rows = [r for r in trades if r["kind"] != "B"]
    assert sum(r["broken"] for r in rows) > 100
    for r in rows:
        assert r["broken"] == any(seq > r["seq"] for seq in breaks.get(r["match"], ())), r


@pytest.mark.parametrize("compiled", [True, False])
def test_pitch_breaks_kernel_finds_every_break_with_its_message_number(compiled):
    import numpy as np

    from obook._kernels.pitch import pitch_breaks

    messages, breaks = _broken_day(7)
    buf = np.frombuffer(units(messages, iter((9, 1, 50) * 1000)), np.uint8)
    seqs, matches = np.zeros(len(messages), np.int64), np.zeros(len(messages), np.int64)
    kernel = pitch_breaks if compiled else pitch_breaks.py_func
    n = kernel(buf, len(messages), 1, seqs, matches)
    want = sorted((s, x) for x, found in breaks.items() for s in found)
    assert n == len(want) > 100
    assert sorted(zip(seqs[:n].tolist(), matches[:n].tolist())) == want
