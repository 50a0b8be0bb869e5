"""Write a feed's BBO to Parquet three ways: python examples/write_parquet.py [FEED] [OUT_DIR]

1. streaming obook.bbo straight into pyarrow's ParquetWriter (no DuckDB, no polars);
2. DuckDB's COPY over obook_spread (adds exact spread and mid columns);
3. polars sink_parquet over obook.scan_bbo (streaming).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

import obook
from _sample import feed_path, run


def main() -> None:
    feed = feed_path()
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.mkdtemp(prefix="obook-parquet-"))
    if out.exists() and not out.is_dir():
        sys.exit(f"{out}: exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)

    reader = obook.bbo(feed, workers=2)
    with pq.ParquetWriter(out / "bbo.parquet", reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)

    con = obook.connect()
    target = str(out / "spread.parquet").replace("'", "''")
    con.execute(f"COPY (SELECT * FROM obook_spread(?)) TO '{target}' (FORMAT parquet)", [str(feed)])
    con.close()

    obook.scan_bbo(feed).sink_parquet(out / "bbo_polars.parquet")

    for name in ("bbo.parquet", "spread.parquet", "bbo_polars.parquet"):
        meta = pq.read_metadata(out / name)
        print(f"{out / name}: {meta.num_rows} rows, {meta.num_columns} columns")


if __name__ == "__main__":   # obook starts worker processes: keep the guard
    run(main)
