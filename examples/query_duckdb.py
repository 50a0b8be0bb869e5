"""Query a feed's BBO with DuckDB: python examples/query_duckdb.py [FEED]

obook.connect() is duckdb.connect() plus obook's table macros (obook_bbo, obook_spread,
obook_twas, obook_bbo_grid, obook_messages) and scalar functions (obook_price ...).
"""

from __future__ import annotations

import obook
from _sample import feed_path, run


def main() -> None:
    feed = str(feed_path())
    con = obook.connect()

    print("BBO updates per ticker (top 5):")
    for row in con.execute("""
            SELECT ticker, count(*) AS updates, obook_price(min(bid_px), ?) AS low_bid,
                   obook_price(max(ask_px), ?) AS high_ask
            FROM obook_bbo(?, workers := 2)
            GROUP BY ALL ORDER BY updates DESC LIMIT 5""", [feed, feed, feed]).fetchall():
        print("  ", row)

    print("time-weighted average spread (ticks, top 5 by quoted time):")
    for row in con.execute("""
            SELECT ticker, round(twas_ticks, 2), quoted_time
            FROM obook_twas(?) ORDER BY quoted_time DESC LIMIT 5""", [feed]).fetchall():
        print("  ", row)

    print("one-minute grid of the busiest ticker (first 3 points):")
    for row in con.execute("""
            WITH busiest AS (SELECT ticker FROM obook_bbo(?) GROUP BY ALL ORDER BY count(*) DESC LIMIT 1)
            SELECT obook_time_of_day(time, ?) AS t, ticker, obook_price(bid_px, ?), obook_price(ask_px, ?)
            FROM obook_bbo_grid(?, 60000000000) WHERE ticker = (FROM busiest) AND bid_px IS NOT NULL
            ORDER BY time LIMIT 3""", [feed, feed, feed, feed, feed]).fetchall():
        print("  ", row)

    print("first 3 rows (a LIMIT stops the replay at once):")
    for row in con.execute("SELECT seq, ticker, bid_px, ask_px FROM obook_bbo(?) LIMIT 3", [feed]).fetchall():
        print("  ", row)
    con.close()


if __name__ == "__main__":   # obook starts worker processes: keep the guard
    run(main)
