"""The book kernel on hand-made event rows, compiled and as plain Python (.py_func)."""

import numpy as np
import pytest

from obook._kernels import book as K
from obook._kernels import price_cage, replay
from obook._kernels.layout import (ACT_ADD, ACT_ADD_ZERO_OK, ACT_CANCEL, ACT_DELETE, ACT_EXEC,
                                   ACT_EXEC_CLAMP, ACT_REDUCE_TO, ACT_REPLACE, ASK, BID,
                                   ERR_DUPLICATE_REF, ERR_OVER_CANCEL, ERR_OVER_EXECUTION,
                                   ERR_UNKNOWN_REF, ERR_ZERO_ADD, EV_WIDTH, OK, ROW_WIDTH)
from obook.engine.books import BookState

KERNELS = [pytest.param(replay.replay_events, id="compiled"), pytest.param(replay.replay_events.py_func, id="py_func")]


def ev(*rows):
    """rows of (action, side, book, ref, shares, price, new_ref); seq = position + 1."""
    out = np.zeros((len(rows), EV_WIDTH), dtype=np.int64)
    for i, (act, side, book, ref, shares, price, new_ref) in enumerate(rows):
        out[i, :8] = (i + 1, 1000 + i, book, act | (side << 8), ref, shares, price, new_ref)
    return out


def add(ref, side, shares, price, book=1, act=ACT_ADD):
    return (act, side, book, ref, shares, price, 0)


def op(act, ref, shares=0, book=1, price=0, new_ref=0):
    return (act, 0, book, ref, shares, price, new_ref)


def run(events, kernel, strict=True, **sizes):
    b = BookState(strict=strict, kernel=kernel, **sizes)
    rows = np.zeros((len(events) + 1, ROW_WIDTH), dtype=np.int64)
    status, i, n = b.apply(events, len(events), rows)
    return status, i, [tuple(int(x) for x in r) for r in rows[:n]], b


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_adds_and_reductions_emit_bbo_rows(kernel):
    status, _, rows, b = run(ev(add(1, BID, 100, 50), add(2, ASK, 30, 60), add(3, BID, 10, 49),
                                op(ACT_EXEC, 1, 40), op(ACT_CANCEL, 1, 60), op(ACT_DELETE, 2)), kernel)
    assert status == OK
    assert rows == [
        (1, 1000, 1, 50, 100, 1, -1, -1, 0),
        (2, 1001, 1, 50, 100, 1, 60, 30, 1),
        (4, 1003, 1, 50, 60, 1, 60, 30, 1),   # 3 is below the touch: no row
        (5, 1004, 1, 49, 10, 1, 60, 30, 1),   # cancel to zero removes the level
        (6, 1005, 1, 49, 10, 1, -1, -1, 0),
    ]
    assert b.live_orders == 1


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_replace_of_replaced_order_moves_to_back(kernel):
    status, _, rows, b = run(ev(add(1, ASK, 10, 60), add(2, ASK, 5, 60), op(ACT_REPLACE, 1, 7, price=61, new_ref=3),
                                op(ACT_REPLACE, 3, 8, price=60, new_ref=4), op(ACT_DELETE, 2)), kernel)
    assert status == OK
    assert [r[6:] for r in rows] == [(60, 10, 1), (60, 15, 2), (60, 5, 1), (60, 13, 2), (60, 8, 1)]
    assert b.live_orders == 1


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("events,code,at", [
    (ev(op(ACT_DELETE, 9)), ERR_UNKNOWN_REF, 0),
    (ev(add(1, BID, 5, 10), add(1, ASK, 5, 11)), ERR_DUPLICATE_REF, 1),
    (ev(add(1, BID, 5, 10), op(ACT_EXEC, 1, 6)), ERR_OVER_EXECUTION, 1),
    (ev(add(1, BID, 5, 10), op(ACT_CANCEL, 1, 6)), ERR_OVER_CANCEL, 1),
    (ev(add(1, BID, 0, 10)), ERR_ZERO_ADD, 0),
    (ev(add(1, BID, 5, 10), add(2, BID, 5, 10), op(ACT_REPLACE, 1, 5, price=9, new_ref=2)), ERR_DUPLICATE_REF, 2),
    (ev(add(1, BID, 5, 10, book=2), op(ACT_DELETE, 1, book=3)), ERR_UNKNOWN_REF, 1),
])
def test_replay_events_failing_event_strict_stops_there(kernel, events, code, at):
    status, i, rows, _ = run(events, kernel)
    assert (status, i) == (code, at)
    assert all(r[0] <= at for r in rows)


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_tolerant_counts_and_applies_rules(kernel):
    status, _, rows, b = run(ev(op(ACT_DELETE, 9), add(1, BID, 5, 10), add(1, BID, 7, 11),
                                op(ACT_EXEC, 1, 9), add(2, ASK, 0, 20), add(3, ASK, 4, 20),
                                op(ACT_CANCEL, 3, 5)), kernel, strict=False)
    assert status == OK
    assert b.skips[ERR_UNKNOWN_REF] == 1 and b.skips[ERR_DUPLICATE_REF] == 1
    assert b.skips[ERR_OVER_EXECUTION] == 1 and b.skips[ERR_ZERO_ADD] == 1 and b.skips[ERR_OVER_CANCEL] == 1
    assert rows[1][3:6] == (11, 7, 1)       # the duplicate add replaced the live order
    assert b.live_orders == 0


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_csv_actions_follow_spec(kernel):
    status, _, rows, b = run(ev(add(1, BID, 0, 10, act=ACT_ADD_ZERO_OK), add(2, BID, 50, 10, act=ACT_ADD_ZERO_OK),
                                op(ACT_REDUCE_TO, 2, 80), op(ACT_REDUCE_TO, 2, 20), op(ACT_EXEC_CLAMP, 1, 0),
                                op(ACT_EXEC_CLAMP, 2, 999)), kernel)
    assert status == OK
    assert [r[3:6] for r in rows] == [(10, 0, 1), (10, 50, 2), (10, 20, 2), (-1, -1, 0)]
    assert b.live_orders == 0


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_same_ref_in_two_books_kept_apart(kernel):
    status, _, rows, b = run(ev(add(5, BID, 10, 10, book=1), add(5, BID, 20, 11, book=2), op(ACT_DELETE, 5, book=1),
                                add(5, ASK, 3, 30, book=1), op(ACT_EXEC, 5, 20, book=2)), kernel)
    assert status == OK
    assert [(r[2], r[3], r[4], r[6]) for r in rows] == [(1, 10, 10, -1), (2, 11, 20, -1), (1, -1, -1, -1),
                                                       (1, -1, -1, 30), (2, -1, -1, -1)]
    assert b.live_orders == 1


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_huge_and_far_refs_use_overflow_table(kernel):
    refs = [0, 2**32 - 1, 2**32, 2**63 - 1, -(2**63)]   # the last one is u64 2**63 as int64
    events = ev(*[add(r, BID, 1 + k, 100 + k) for k, r in enumerate(refs)], *[op(ACT_DELETE, r) for r in refs])
    status, _, rows, b = run(events, kernel, overflow=4)
    assert status == OK
    assert rows[-1][3] == -1 and b.live_orders == 0
    assert b.pages.shape[0] // K.PAGE <= 64 and b.page_dir.shape[0] <= 4  # memory for what is live only


def test_replay_events_growth_from_tiny_pools_gives_identical_rows():
    rng = np.random.default_rng(3)
    rows_spec, live = [], []
    for ref in range(1, 3000):
        if live and rng.random() < 0.45:
            r = live.pop(rng.integers(len(live)))
            rows_spec.append(op(ACT_DELETE, r, book=int(r % 7)))
        else:
            rows_spec.append(add(ref, int(rng.integers(2)), int(rng.integers(1, 500)),
                                 100 + int(rng.integers(-40, 40)), book=ref % 7))
            live.append(ref)
    events = ev(*rows_spec)
    big = run(events, replay.replay_events)
    tiny = run(events, replay.replay_events, books=1, levels=1, pages=1, overflow=2)
    assert big[0] == tiny[0] == OK and big[2] == tiny[2]


# ---------------------------------------------------------------- ACT_MODIFY, ACT_CLEAR, DEFER

from obook._kernels.layout import (ACT_CLEAR, ACT_MODIFY, ACT_PRINT, DEFER, TYPE_SHIFT,  # noqa: E402
                                   WANT_DEPTH, WANT_ORDERS, WANT_QUEUE, WANT_TRADES)
from obook.engine.books import ExtraRows  # noqa: E402

ORDERS = WANT_ORDERS | WANT_QUEUE     # the orders rows with their queue places


def run_x(events, kernel, want=ORDERS, capacity=1, levels=3, **sizes):
    """Like run, with trade/order/depth rows: (status, bbo rows, orders rows, depth rows, book)."""
    b = BookState(kernel=kernel, **sizes)
    x = ExtraRows(want, capacity, levels)
    status, i, n = b.apply(events, len(events), np.zeros((1, ROW_WIDTH), np.int64), x)
    as_tuples = lambda a, k: [tuple(int(v) for v in r) for r in a[:k]]  # noqa: E731
    return (status, as_tuples(b.out_rows, n), as_tuples(x.orders, x.counts[1]),
            as_tuples(x.depth, x.counts[2]), b)


def queue_cols(orders):
    """(action letter, ref, price, shares, remaining, shares ahead, orders ahead) of orders rows."""
    return [(chr(r[3]), r[8], r[5], r[6], r[7], r[11], r[12]) for r in orders]


def _random_day(n, seed):
    """n valid events on 3 books with refs 1, 2, ...: adds, executions, cancels, deletes,
    replaces, modifies and (once) a clear of book 2, as (action, side, book, ref, shares,
    price, new_ref) rows."""
    from obook._kernels.layout import ACT_CLEAR, ACT_MODIFY

    rng = np.random.default_rng(seed)
    live, spec, nxt = {}, [], 1           # ref -> [book, shares]
    for k in range(n):
        u = rng.random()
        if k == n // 2:
            spec.append(op(ACT_CLEAR, 0, book=2))
            live = {r: v for r, v in live.items() if v[0] != 2}
        elif not live or u < 0.4:
            book = int(rng.integers(3))
            spec.append(add(nxt, int(rng.integers(2)), int(rng.integers(1, 300)), 100 + int(rng.integers(-20, 20)),
                            book=book))
            live[nxt], nxt = [book, int(spec[-1][4])], nxt + 1
        else:
            r = list(live)[int(rng.integers(len(live)))]
            book, shares = live[r]
            if u < 0.55 and shares > 1:
                take = int(rng.integers(1, shares))
                spec.append(op(ACT_EXEC if u < 0.5 else ACT_CANCEL, r, take, book=book))
                live[r][1] -= take
            elif u < 0.7:
                spec.append(op(ACT_DELETE, r, book=book))
                del live[r]
            elif u < 0.85:
                spec.append(op(ACT_REPLACE, r, 50, book=book, price=100 + int(rng.integers(-20, 20)), new_ref=nxt))
                del live[r]
                live[nxt], nxt = [book, 50], nxt + 1
            else:
                spec.append(op(ACT_MODIFY, r, int(rng.integers(1, 300)), book=book,
                               price=100 + int(rng.integers(-20, 20))))
                live[r][1] = int(spec[-1][4])
    return spec


REF_SPACES = {
    "dense_above_2_32": lambda r: 2**40 + r,
    "dense_top_bit_set": lambda r: -(2**63) + 11 + r,      # u64 ids from 2**63, as int64
    "mixed_windows": lambda r: r if r % 3 else 2**40 + r,   # the first ref fixes the window
}


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("want", [WANT_ORDERS, WANT_ORDERS | WANT_QUEUE], ids=["index", "queues"])
@pytest.mark.parametrize("space", list(REF_SPACES))
def test_replay_events_large_dense_refs_same_rows_as_small_ones(kernel, want, space):
    """Large order ids (Databento's, Cboe's) give the rows small ones do: the direct index
    moves its window to the first order's ref; refs outside it go to the overflow table."""
    to = REF_SPACES[space]
    spec = _random_day(3000, seed=5)
    mapped = [(a, sd, bk, to(r) if r else 0, sh, px, to(nr) if nr else 0) for a, sd, bk, r, sh, px, nr in spec]
    small = run_x(ev(*spec), kernel, want=want)
    big = run_x(ev(*mapped), kernel, want=want)
    assert small[0] == big[0] == OK and small[1] == big[1]
    back = {to(r): r for r in range(1, 4000)}
    clear_seq = len(spec) // 2 + 1       # its rows come in the index's order: compared as a set
    in_order = lambda rows: sorted(rows, key=lambda o: (o[0], o if o[0] == clear_seq else ()))  # noqa: E731
    assert in_order([o[:8] + (back[o[8]], back.get(o[9], o[9])) + o[10:] for o in big[2]]) == in_order(small[2])
    used_overflow = big[4].st[K.ST_OV_FILL] > 0
    assert used_overflow == (space == "mixed_windows")


@pytest.mark.parametrize("f", [pytest.param(K.window_base, id="compiled"),
                               pytest.param(K.window_base.py_func, id="py_func")])
def test_window_base_near_int64_limits_never_overflows(f):
    assert [int(f(np.int64(r))) for r in (7, 2**32 - 1, 2**32, 2**63 - 1, -1, -(2**63), -(2**63) + 2**31)] == [
        0, 0, 2**32 - 2**31, 2**63 - 1 - 2**31, -1 - 2**31, -(2**63), -(2**63)]


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_modify_keeps_or_loses_queue_place(kernel):
    events = ev(add(1, BID, 100, 50), add(2, BID, 200, 50), add(3, BID, 300, 50),
                op(ACT_MODIFY, 1, 60, price=50),      # fewer shares, same price: keeps its place
                op(ACT_MODIFY, 2, 250, price=50),     # more shares: to the back
                op(ACT_MODIFY, 3, 300, price=51),     # another price: back of (a new) level
                op(ACT_MODIFY, 1, 0, price=50),       # 0 shares: removed
                op(ACT_MODIFY, 9, 40, price=50),      # unknown: added, side from the event
                op(ACT_MODIFY, 2, 250, price=50))     # nothing changes: keeps its place
    status, rows, orders, _, b = run_x(events, kernel)
    assert status == OK
    assert queue_cols(orders)[3:] == [
        ("M", 1, 50, 60, 60, 0, 0),
        ("M", 2, 50, 250, 250, 60 + 300, 2),
        ("M", 3, 51, 300, 300, 0, 0),
        ("M", 1, 50, 0, 0, -1, -1),
        ("M", 9, 50, 40, 40, 250, 1),
        ("M", 2, 50, 250, 250, 0, 0),
    ]
    assert [r[3:6] for r in rows] == [(50, 100, 1), (50, 300, 2), (50, 600, 3), (50, 560, 3),
                                      (50, 610, 3), (51, 300, 1)]
    assert b.live_orders == 3


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_modify_type_letter_and_zero_share_unknown(kernel):
    e = ev(add(1, ASK, 10, 70), op(ACT_MODIFY, 1, 5, price=70), op(ACT_MODIFY, 8, 0, price=70))
    e[1, 3] |= ord("Q") << TYPE_SHIFT
    status, i, _, _ = run(e, kernel)
    assert (status, i) == (ERR_ZERO_ADD, 2)
    _, _, orders, _, _ = run_x(e[:2], kernel)
    assert chr(orders[1][3]) == "Q" and orders[1][4] == ASK


def clear_feed(n_levels=200):
    """Book 1: n_levels bid levels (two orders at the best) and two asks; book 2: one bid."""
    rows = [add(1000 + k, BID, 10 + k, 5000 - k) for k in range(n_levels)]
    rows += [add(1, BID, 7, 5000), add(2, ASK, 3, 6000), add(3, ASK, 4, 6001), add(1, BID, 9, 100, book=2)]
    rows += [op(ACT_CLEAR, 0), add(1000, ASK, 5, 7000), op(ACT_CLEAR, 0, book=7)]
    return ev(*rows)


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_clear_removes_every_order_of_the_book(kernel):
    n = 200                                            # beyond NEAR_MAX: far levels too
    events = clear_feed(n)
    status, rows, orders, depth, b = run_x(events, kernel, ORDERS | WANT_DEPTH)
    assert status == OK
    cleared = [r for r in orders if r[0] == n + 5]
    expected = [(1000, 5000, 10), (1, 5000, 7)] + [(1000 + k, 5000 - k, 10 + k) for k in range(1, n)] \
        + [(2, 6000, 3), (3, 6001, 4)]
    assert [(r[8], r[5], r[6]) for r in cleared] == expected    # bids then asks, best first, FIFO
    assert {(chr(r[3]), r[7], r[11], r[12]) for r in cleared} == {("R", 0, -1, -1)}
    assert rows[-2][:1] + rows[-2][3:] == (n + 5, -1, -1, 0, -1, -1, 0)
    assert rows[-1][6:] == (7000, 5, 1)                 # the ref is free again
    assert depth[-2][3:6] == (-1, -1, 0)
    assert b.live_orders == 2 and b.st[K.ST_FH_USED] == 0 and b.sides[2, 3] == 0


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_clear_without_queues_scans_the_index(kernel):
    events = clear_feed(150)
    events[-3, 2] = 2                                   # the clear hits book 2 (ref 1 lives in both)
    events[-2, 2] = 2                                   # and ref 1000 comes back there
    status, rows, orders, _, b = run_x(events, kernel, want=0)
    assert status == OK and orders == []
    assert rows[-2][2:] == (2, -1, -1, 0, -1, -1, 0)
    assert b.live_orders == 150 + 3 + 1


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_clear_with_queues_without_orders_table_writes_no_rows(kernel):
    events = clear_feed(150)
    status, rows, orders, _, b = run_x(events, kernel, want=WANT_QUEUE)
    assert status == OK and orders == []
    assert rows[-2][2:] == (1, -1, -1, 0, -1, -1, 0)
    assert b.live_orders == 2 and b.st[K.ST_Q_TOP] > 0


def test_replay_events_clear_grows_tiny_orders_array():
    events = clear_feed(300)
    small = run_x(events, replay.replay_events, ORDERS, capacity=1)
    big = run_x(events, replay.replay_events, ORDERS, capacity=4096)
    assert small[:4] == big[:4] and len(small[2]) == 300 + 4 + 300 + 3 + 1


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_defer_rows_at_the_run_end_against_the_book_before(kernel):
    events = ev(add(1, BID, 100, 50), add(2, BID, 50, 51), add(3, ASK, 10, 60), op(ACT_DELETE, 2),
                add(4, BID, 5, 52), op(ACT_DELETE, 4),
                add(5, BID, 1, 49), add(6, ASK, 1, 61),
                (ACT_PRINT, 0, 1, 0, 7, 60, 0))
    for k in (1, 2, 4, 6, 7):       # runs: seq 2-4, 5-6 (no change in the end), 7-9 (a print ends it)
        events[k, 3] |= DEFER
    status, rows, orders, depth, _ = run_x(events, kernel, ORDERS | WANT_DEPTH)
    assert status == OK
    assert [r[0] for r in rows] == [1, 4]
    assert rows[1][3:] == (50, 100, 1, 60, 10, 1)
    assert [r[0] for r in depth] == [1, 4, 9]           # the depth change below the touch: at the print
    assert len(orders) == 8                             # orders rows are not deferred


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_defer_runs_kept_per_book(kernel):
    events = ev(add(1, BID, 100, 50), add(2, BID, 100, 40, book=2), add(3, BID, 100, 60, book=2),
                add(4, BID, 100, 55))
    events[0, 3] |= DEFER
    events[1, 3] |= DEFER
    status, rows, _, _, _ = run_x(events, kernel, 0)
    assert status == OK
    assert [(r[0], r[2], r[3]) for r in rows] == [(3, 2, 60), (4, 1, 55)]


def test_replay_events_trades_rows_grow_past_tiny_arrays():
    e = ev(add(1, BID, 100, 50), *[op(ACT_EXEC, 1, 1) for _ in range(40)])
    b = BookState()
    x = ExtraRows(WANT_TRADES | ORDERS | WANT_DEPTH, 1, 2)
    status, _, n = b.apply(e, len(e), np.zeros((2, ROW_WIDTH), np.int64), x)
    assert status == OK and n == 41 and x.counts.tolist() == [40, 41, 41]
    assert x.trades[:40, 5].tolist() == [1] * 40 and b.out_rows.shape[0] >= 41


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_price_cage_holds_enters_and_cancels_held(kernel):
    """ChiNext price cage: outside 102% of the best ask a buy is held (row H, no BBO row);
    a cancel that lifts the ask lets it in (row A, at the back), crossing: no BBO row until
    its fill uncrosses the book; a held order is cancelled where it is."""
    from obook._kernels.layout import CAGE_ADD, CAGE_LIVE, CAGED, DEFER, NOT_PRINTABLE, TYPE_SHIFT

    C = CAGED | CAGE_LIVE
    events = ev(add(1, BID, 100, 1000), add(2, ASK, 50, 1010), add(3, ASK, 50, 1025),
                add(4, BID, 30, 1040), add(5, BID, 20, 1200), op(ACT_CANCEL, 2, 50),
                op(ACT_EXEC, 4, 30), op(ACT_EXEC, 3, 30), op(ACT_CANCEL, 5, 20))
    events[:, 3] |= C
    events[3:5, 3] |= CAGE_ADD
    events[6, 3] |= DEFER | (67 << TYPE_SHIFT)
    events[6, 3] &= ~CAGE_LIVE
    events[7, 3] |= NOT_PRINTABLE | (67 << TYPE_SHIFT)
    events[6:8, 9] = 1025
    status, rows, orders, _, b = run_x(events, kernel)
    assert status == OK
    assert rows == [(1, 1000, 1, 1000, 100, 1, -1, -1, 0), (2, 1001, 1, 1000, 100, 1, 1010, 50, 1),
                    (8, 1007, 1, 1000, 100, 1, 1025, 20, 1)]
    assert [(r[0],) + q for r, q in zip(orders, queue_cols(orders))][3:] == [
        (4, "H", 4, 1040, 30, 30, -1, -1),
        (5, "H", 5, 1200, 20, 20, -1, -1),
        (6, "D", 2, 1010, 50, 0, -1, -1),
        (6, "A", 4, 1040, 30, 30, 0, 0),      # entered at the cancel that let it in
        (7, "C", 4, 1040, 30, 0, -1, -1),     # its fill (type C)
        (8, "C", 3, 1025, 30, 20, 0, 0),
        (9, "D", 5, 1200, 20, 0, -1, -1),
    ]
    assert b.live_orders == 2 and b.st[price_cage.ST_HELD] == 0 and b.cage[1, price_cage.CG_LAST] == 1025


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_price_cage_grows_held_rows_without_cage_bits_no_hold(kernel):
    """More held orders than the held array's rows: grown on demand; the same adds without
    CAGE_ADD rest at once."""
    from obook._kernels.layout import CAGE_ADD, CAGED

    events = ev(add(1, ASK, 10, 1000), *[add(10 + k, BID, 1, 2000 + k) for k in range(40)])
    _, rows_plain, _, _, plain = run_x(events.copy(), kernel)
    events[:, 3] |= CAGED
    events[1:, 3] |= CAGE_ADD
    status, rows, orders, _, b = run_x(events, kernel)
    assert status == OK and b.st[price_cage.ST_HELD] == 40 and b.live_orders == 1 and len(rows) == 1
    assert plain.live_orders == 41 and len(rows_plain) > 1
    assert [chr(r[3]) for r in orders[1:]] == ["H"] * 40


@pytest.mark.parametrize("kernel", KERNELS)
def test_replay_events_clear_orders_rows_without_queues_same_rows_in_id_order(kernel):
    events = clear_feed(150)
    with_q = run_x(events, kernel, ORDERS, capacity=1)
    bare = run_x(events, kernel, WANT_ORDERS, capacity=1)
    assert with_q[0] == bare[0] == OK and with_q[1] == bare[1]          # same BBO rows
    assert all(r[11] == r[12] == -1 for r in bare[2])                   # no places
    strip = lambda rows: sorted(r[:11] for r in rows)  # noqa: E731
    assert strip(bare[2]) == strip(with_q[2]) and len(bare[2]) == len(with_q[2]) > 150



# ----------------------------------------------------------------- a clear's rows, sorted

@pytest.mark.parametrize("n", [0, 1, 2, 3, 8, 301])
@pytest.mark.parametrize("compiled", [True, False])
def test_book_clear_sort_rows_bids_then_asks_best_first_then_unsigned_ref(n, compiled):
    import random

    from obook._kernels import book_clear
    from obook._kernels.layout import OR_PRICE, OR_REF, OR_SIDE, OR_WIDTH

    rng = random.Random(n)
    rows = np.zeros((n + 4, OR_WIDTH), np.int64)
    for i in range(2, n + 2):
        rows[i, 0] = i
        rows[i, OR_SIDE], rows[i, OR_PRICE] = rng.randrange(2), rng.randrange(5)
        rows[i, OR_REF] = rng.randrange(-2**63, 2**63)          # refs past 2**63 - 1 are stored below 0
    want = sorted(map(tuple, rows[2:n + 2]), key=lambda r: (r[OR_SIDE], -r[OR_PRICE] if r[OR_SIDE] == 0
                                                              else r[OR_PRICE], int(r[OR_REF]) % 2**64))
    sort = book_clear._sort_rows if compiled else book_clear._sort_rows.py_func
    sort(rows, 2, n + 2)
    assert list(map(tuple, rows[2:n + 2])) == want
    assert not rows[:2].any() and not rows[n + 2:].any()             # the rows around untouched
