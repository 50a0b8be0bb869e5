"""Scan a feed's BBO lazily with polars: python examples/scan_polars.py [FEED]

obook.scan_bbo returns a LazyFrame; nothing runs until collect, and the replay applies
the projection, the filter and the row limit itself (head() stops it early).
"""

from __future__ import annotations

import polars as pl

import obook
from _sample import feed_path, run


def main() -> None:
    feed = feed_path()
    lf = obook.scan_bbo(feed, workers=2)

    spreads = (
        lf.filter(pl.col("bid_px").is_not_null() & pl.col("ask_px").is_not_null())
        .group_by("ticker")
        .agg(pl.len().alias("updates"),
             (pl.col("ask_px") - pl.col("bid_px")).median().alias("median_spread_ticks"))
        .sort("updates", descending=True)
        .head(5)
        .collect(engine="streaming")
    )
    print(spreads)
    print(lf.select("seq", "ticker", "bid_px", "ask_px").head(3).collect())


if __name__ == "__main__":   # obook starts worker processes: keep the guard
    run(main)
