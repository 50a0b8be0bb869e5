"""The generated Shanghai day (``obook gen sse``): its call auctions, replayed as the
reference replays them, audited as the real day is."""

from __future__ import annotations

import pytest

import obook
from obook.gen.sse import generate

from conftest import SHARED_DATA
from reference_l2 import bbo_by_ticker, depth_by_ticker, parse, sse_bbo, sse_depth, sse_trades

REAL_DAY = SHARED_DATA / "AX_sbe_sse_600519.zip"     # beside the repository (absent: skipped)
NS = 10**9
CALLS = ((9 * 3600 + 15 * 60, 9 * 3600 + 25 * 60), (14 * 3600 + 57 * 60, 15 * 3600))   # seconds
LEVELS = 5


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    p = tmp_path_factory.mktemp("ssegen") / "gen.log"
    p.write_text("\n".join(generate(8000, securities=4, seed=11)) + "\n")
    return p


def _hms(t: int) -> int:
    """TransactTime HHMMSScc -> seconds since midnight."""
    return t // 1000000 * 3600 + t // 10000 % 100 * 60 + t // 100 % 100


def test_sse_gen_day_calls_cross_the_book_and_uncross_at_one_price(day):
    """Orders from 09:15 with none traded, a book that crosses during the call, its
    uncross at 09:25:00.00 (call-auction trades, ExecType N, at one price a security)
    leaving it uncrossed; continuous trading from 09:30; the closing call's uncross at
    15:00:00.00."""
    msgs = [m for m in parse(day.read_text()) if m["MsgType"] in ("191", "192")]
    times = [int(m["TransactTime"]) for m in msgs]
    assert min(times) >= 9_150_000 and max(times) == 15_000_000
    trades = [m for m in msgs if m["MsgType"] == "191"]
    calls = [m for m in trades if m["ExecType"] == "78"]
    assert {m["TransactTime"] for m in calls} == {"9250000", "15000000"}
    assert all(m["ExecType"] in ("66", "83") and 9_300_000 <= int(m["TransactTime"]) < 14_570_000
               for m in trades if m not in calls)
    for t in ("9250000", "15000000"):
        prices = {}
        for m in calls:
            if m["TransactTime"] == t:
                prices.setdefault(m["SecurityID"], set()).add(m["LastPx"])
        assert len(prices) >= 3 and all(len(p) == 1 for p in prices.values()), prices
    bbo = sse_bbo(day.read_text())
    for tk, rows in bbo.items():
        before = [r for r in rows if r[0] < 9 * 3600 * NS + 25 * 60 * NS]
        after = [r for r in rows if 9 * 3600 * NS + 25 * 60 * NS <= r[0] < 9 * 3600 * NS + 30 * 60 * NS]
        assert before and after
        assert after[-1][1] is None or after[-1][4] is None or after[-1][1] < after[-1][4]
    crossed = [tk for tk, rows in bbo.items() if any(r[1] is not None and r[4] is not None and r[1] >= r[4]
                                                      and r[0] < 9 * 3600 * NS + 25 * 60 * NS for r in rows)]
    assert len(crossed) == len(bbo)


def test_sse_gen_same_seed_same_lines_other_seed_other_lines():
    assert generate(3000, securities=3, seed=7) == generate(3000, securities=3, seed=7)
    assert generate(3000, securities=3, seed=7) != generate(3000, securities=3, seed=8)


def test_sse_gen_long_day_spreads_its_events_over_each_session():
    """A day with more events than its sessions hold 0.2 s apart has them closer together,
    never piled on one time (an audit compares each snapshot with every book state of its
    second): only the uncrosses' trades share a time by the hundred."""
    import collections
    import re

    lines = generate(60_000, securities=4, seed=3)
    times = collections.Counter(int(m.group(1)) for ln in lines
                                for m in [re.search(r" TransactTime=(\d+)", ln)] if m)
    piled = {t: n for t, n in times.items() if n > 40}
    assert set(piled) <= {9_250_000, 15_000_000}
    opening = [t for t in times if t < 9_250_000]
    assert max(opening) <= 9_245_999 and min(opening) >= 9_150_000


def _span(lines: list[str]) -> int:
    """The most lines an order or trade line comes after a line of its channel with a
    higher BizIndex (the replay looks 4,096 lines ahead)."""
    import bisect
    import re

    most, tops = 0, {}          # channel -> (rising BizIndexes, their lines)
    for i, line in enumerate(lines):
        m = re.search(r"ChannelNo=(\d+) .*BizIndex=(\d+)", line)
        if m is None:
            continue
        top, at = tops.setdefault(int(m.group(1)), ([], []))
        k = bisect.bisect_right(top, int(m.group(2)))
        if k < len(top):
            most = max(most, i - at[k])
        if not top or int(m.group(2)) > top[-1]:
            top.append(int(m.group(2)))
            at.append(i)
    return most


@pytest.mark.parametrize("ahead", [100, 1500])
def test_sse_gen_uncross_trades_ahead_of_the_call_orders_at_most_ahead_events(ahead):
    """An uncross's trades come before the call's last orders, those and the trades at most
    ``ahead`` events (the snapshots and the lag of 20 events aside): an uncross of more
    trades (150 here) has them at their place."""
    lines = generate(20_000, securities=1, seed=1, ahead=ahead)
    assert sum("ExecType=78 TransactTime=9250000" in ln for ln in lines) > 150
    assert _span(lines) <= ahead + ahead // 10 + 40
    assert _span(lines) > (1000 if ahead == 1500 else 0)


@pytest.mark.parametrize("workers", [1, 2])
def test_sse_gen_auction_day_bbo_trades_depth_equal_reference(day, workers):
    text = day.read_text()
    assert bbo_by_ticker(obook.bbo(day, workers=workers).read_all()) == sse_bbo(text)
    got = {}
    for r in obook.trades(day, workers=workers).read_all().to_pylist():
        assert (r["kind"], r["broken"]) == ("C", False)
        got.setdefault(r["ticker"], []).append((r["time"], r["price"], r["shares"], r["side"], r["ref"], r["match"]))
    ref = sse_trades(text)
    assert got == ref
    assert sum(1 for rows in ref.values() for r in rows if r[0] == (9 * 3600 + 25 * 60) * NS) > 10
    depth = obook.depth(day, workers=workers, levels=LEVELS).read_all()
    assert depth_by_ticker(depth, LEVELS) == sse_depth(text, LEVELS)


def _audit_verdicts(path, text: str) -> dict[str, set]:
    """The audit of a day as {kind of snapshot: the (matched, tallies_matched) it has}: a
    call auction's snapshot showing a match (its first bid and ask level at one price),
    one showing none, the first snapshot after each uncross, every other snapshot."""
    snaps = {}
    for i, line in enumerate(text.splitlines(), 1):
        if "MsgType=111" in line:
            snaps[i] = parse(line)[0]
    out: dict[str, set] = {}
    after = set()
    for row in obook.audit(path, workers=1).read_all().to_pylist():
        s, f = row["time"] // NS, snaps[row["seq"]]
        call = next((c for c in CALLS if c[0] <= s < c[1]), None)
        if call is not None:
            px = f["BidLevel[0].Price"]
            kind = "call, a match" if px != "0" and px == f["AskLevel[0].Price"] else "call, none"
        elif any(c[1] <= s for c in CALLS) and (max(c[1] for c in CALLS if c[1] <= s), row["ticker"]) not in after:
            after.add((max(c[1] for c in CALLS if c[1] <= s), row["ticker"]))
            kind = "after an uncross"
            assert row["num_trades"] == row["book_num_trades"]
        else:
            kind = "other"
        out.setdefault(kind, set()).add((row["matched"], row["tallies_matched"]))
    return out


EXPECTED_VERDICTS = {"call, a match": {(False, True)}, "after an uncross": {(True, True)}, "other": {(True, True)}}


def test_sse_gen_auction_day_audit_verdicts_as_on_the_real_day(day):
    """The generated day's snapshots during a call auction show the uncross the book would
    make, as the exchange's do: the audit finds them unlike the crossed book (as it does on
    the real day), every other snapshot and every tally like the rebuilt ones."""
    got = _audit_verdicts(day, day.read_text())
    assert {k: v for k, v in got.items() if k != "call, none"} == EXPECTED_VERDICTS


@pytest.mark.skipif(not REAL_DAY.exists(), reason="the real Shanghai day is not on this machine")
def test_sse_real_day_audit_verdicts_as_on_the_generated_day():
    import zipfile

    with zipfile.ZipFile(REAL_DAY) as z:
        text = z.read(z.namelist()[0]).decode()
    got = _audit_verdicts(REAL_DAY, text)
    assert {k: v for k, v in got.items() if k != "call, none"} == EXPECTED_VERDICTS
