"""Before / after of the scalar SQL macros (``obook_price``, ``obook_ticks``,
``obook_time_of_day`` of ``sql/00_prices.sql``) on ``range(N)``: one connection holds this
checkout's macros and those of ``--old FILE`` (an older ``00_prices.sql``, e.g. ``git show
<commit>:sql/00_prices.sql > /tmp/old.sql``) renamed ``*_old``, run alternating; wall seconds,
medians and new / old.

    python benchmarks/ab_sql_scalars.py --old /tmp/old.sql --rows 20000000 --repeats 7
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import obook
from obook.gen.itch import write_itch

QUERIES = {
    "obook_price": "SELECT sum(obook_price{s}(i, '{feed}')) FROM range({n}) t(i)",
    "obook_ticks": "SELECT sum(obook_ticks{s}(CAST(i AS DECIMAL(18, 4)), '{feed}')) FROM range({n}) t(i)",
    "obook_time_of_day": "SELECT max(obook_time_of_day{s}(i * 1000, '{feed}')) FROM range({n}) t(i)",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="the older 00_prices.sql")
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    con = obook.connect()
    old = Path(a.old).read_text()
    for name in QUERIES:        # the old macros beside the new ones, as name_old
        old = re.sub(rf"\bMACRO {name}\(", f"MACRO {name}_old(", old)
    for statement in con.extract_statements(old):
        con.execute(statement)
    with tempfile.TemporaryDirectory() as tmp:
        feed = Path(tmp) / "day.itch"
        write_itch(feed, 2000, 5, seed=1)
        for name, query in QUERIES.items():
            times: dict[str, list[float]] = {"new": [], "old": []}
            answers = set()
            for i in range(a.repeats):
                for side in (("new", "old") if i % 2 == 0 else ("old", "new")):
                    sql = query.format(s="" if side == "new" else "_old", feed=feed, n=a.rows)
                    t0 = time.perf_counter()
                    answers.add(con.execute(sql).fetchall()[0][0])
                    times[side].append(time.perf_counter() - t0)
            assert len(answers) == 1, answers
            new, before = statistics.median(times["new"]), statistics.median(times["old"])
            print(f"{name}: {a.rows:,} rows  old {before:.3f} s  new {new:.3f} s  new / old {new / before:.3f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
