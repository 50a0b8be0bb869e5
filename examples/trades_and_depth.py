"""Beyond the BBO: trades, depth and the Parquet files obook convert writes.

    python examples/trades_and_depth.py [FEED] [OUTDIR]    (OUTDIR default: a new temp folder, kept)

Prints each ticker's VWAP from obook_trades (broken trades left out), the order-book
imbalance of the top 3 levels from a polars depth scan, and converts the feed to
OUTDIR/{bbo,trades,depth}.parquet, whose footer says where the rows came from.
"""

from __future__ import annotations

import sys
import tempfile

import polars as pl

import obook
from _sample import feed_path, run
from obook.to_parquet import read_metadata


def main() -> None:
    feed = str(feed_path())
    outdir = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="obook-example-out-")

    con = obook.connect()
    print("VWAP of executions and prints, broken trades left out (top 5 by volume):")
    for row in con.execute("""
            SELECT ticker, sum(shares) AS volume,
                   obook_price(CAST(round(sum(price * shares) / sum(shares)) AS BIGINT), ?) AS vwap
            FROM obook_trades(?, workers := 2)
            WHERE kind <> 'B' AND NOT broken
            GROUP BY ALL ORDER BY volume DESC LIMIT 5""", [feed, feed]).fetchall():
        print("  ", row)
    con.close()

    print("order-book imbalance of the top 3 levels, last row per ticker (top 5):")
    bids = pl.sum_horizontal([pl.col(f"bid_qty_{i}").fill_null(0) for i in (1, 2, 3)])
    asks = pl.sum_horizontal([pl.col(f"ask_qty_{i}").fill_null(0) for i in (1, 2, 3)])
    imbalance = (obook.scan_depth(feed, levels=3)
                 .with_columns(imbalance=(bids - asks) / (bids + asks))
                 .group_by("ticker").agg(pl.col("imbalance").last(), pl.len().alias("rows"))
                 .sort("rows", descending=True).head(5).collect())
    print(imbalance)

    result = obook.convert(feed, outdir, tables="bbo,trades,depth", levels=3)
    print(f"wrote {result['rows']} to {outdir}")
    meta = read_metadata(f"{outdir}/trades.parquet")
    print("trades.parquet footer: source", meta["source"]["name"], "sha256", meta["source"]["sha256"][:12],
          "live orders at the end", meta["stats"]["live_orders"])


if __name__ == "__main__":   # obook starts worker processes: keep the guard
    run(main)
