"""An example strategy for obook's tick-to-trade path: join the best bid.

For each subscribed stock it keeps one buy order of 100 shares at the best bid: it enters
one when the book has a bid, replaces it when the best bid moves, and cancels it when the
bid side empties. Orders pass obook's risk gate and go to a venue as OUCH 5.0 over
SoupBinTCP.

Two forms, the same orders: ``JoinBid`` is plain Python (the slow path: the compiled live
loop hands each BBO change back to Python), ``JoinBidFast`` is compiled by numba and runs
inside the compiled loop (``--strategy examples/strategy_quote.py:JoinBidFast``).

Live (three terminals, or in the background):

    obook venue --listen 127.0.0.1:32001 --log venue.log
    obook listen --line-a 127.0.0.1:31001 --line-b 127.0.0.1:31002 --request 127.0.0.1:31003 \\
        --strategy examples/strategy_quote.py:JoinBid --tickers AAA,AAB --venue 127.0.0.1:32001 --latency
    obook send day.itch --line-a 127.0.0.1:31001 --line-b 127.0.0.1:31002 --request 127.0.0.1:31003 \\
        --drop-a 0.01 --drop-b 0.01 --rate 5000

Backtest (the strategy against a replayed day, its orders in the replayed books; see
docs/backtesting.md):

    obook backtest examples/data/01022026.NASDAQ_ITCH50.gz --strategy examples/strategy_quote.py:JoinBid \\
        -k AAA,AAB --order-latency 50000 -o bt

Offline (this script): the same strategy behind a file replay of DAY (default: the bundled
sample day), orders sent to a venue started here; prints the orders' count and hash (a live
run of the same day sends the same).

    python examples/strategy_quote.py [DAY.itch]
"""

from __future__ import annotations

import sys
import threading

import numpy as np
from numba import njit

from obook.live.ouch import Order
from obook.live.strategy import numba_strategy


class JoinBid:
    def __init__(self, qty: int = 100):
        self.qty = qty
        self.next_ref = 1
        self.live: dict[str, tuple[int, int]] = {}    # ticker -> (ref, price)

    def __call__(self, top):
        mine = self.live.get(top.ticker)
        if top.bid_px is None:
            if mine is None:
                return None
            del self.live[top.ticker]
            return [Order("cancel", top.ticker, "B", 0, 0, mine[0])]
        if mine is not None and mine[1] == top.bid_px:
            return None
        ref, self.next_ref = self.next_ref, self.next_ref + 1
        self.live[top.ticker] = (ref, top.bid_px)
        if mine is None:
            return [Order("enter", top.ticker, "B", self.qty, top.bid_px, ref)]
        return [Order("replace", top.ticker, "B", self.qty, top.bid_px, ref, mine[0])]


QTY = 100
NEXT_REF = 0          # state[0]: the next UserRefNum; per locate L: state[1 + 2L] the live
                      # order's ref (0: none), state[2 + 2L] its price


@njit          # (no cache=True: a module loaded from its file path cannot reload numba's cache)
def join_bid(state, locate, time, bid_px, bid_qty, ask_px, ask_qty):
    at = 1 + 2 * locate
    mine = state[at]
    if bid_px < 0:
        if mine == 0:
            return 0, 0, 0, 0, 0, 0
        state[at] = 0
        return 3, 0, 0, 0, mine, 0          # cancel
    if mine != 0 and state[at + 1] == bid_px:
        return 0, 0, 0, 0, 0, 0
    ref = state[NEXT_REF]
    state[NEXT_REF] = ref + 1
    state[at] = ref
    state[at + 1] = bid_px
    if mine == 0:
        return 1, 0, QTY, bid_px, ref, 0    # enter
    return 2, 0, QTY, bid_px, ref, mine     # replace


def _join_bid_state() -> np.ndarray:
    state = np.zeros(1 + 2 * (1 << 16), np.int64)
    state[NEXT_REF] = 1
    return state


JoinBidFast = numba_strategy(join_bid, state=_join_bid_state())


def main() -> int:
    from obook.live.gateway import Gateway
    from obook.live.strategy import replay_orders
    from obook.live.venue import Venue

    from _sample import feed_path     # examples/ is on the path of a script run from it

    day = str(feed_path())
    venue = Venue(sessions=1)
    server = threading.Thread(target=venue.serve, kwargs={"timeout": 60})
    server.start()
    try:
        gateway = Gateway(*venue.address)
        ttt = replay_orders(day, JoinBid(), tickers=["AAA", "AAB"], gateway=gateway)
        gateway.close()
    finally:
        venue.stop()
        server.join()
    print(f"orders sent: {len(ttt.orders)} (refused by risk: {ttt.risk.refused or 'none'})")
    print(f"venue received: {len(venue.messages)}")
    print(f"orders sha256: {ttt.digest()}")
    return 0 if len(venue.messages) == len(ttt.orders) else 1


if __name__ == "__main__":
    from _sample import run

    sys.exit(run(main))
