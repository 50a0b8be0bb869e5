"""Wall time of ``SELECT count(*) FROM obook_match...(PATH, workers := N)`` in this process,
after one warm-up query: ``python benchmarks/ab_match_sql.py ORDERS.csv fills|events|bbo [N]``
(N: 1 when not given).
Run it alternately with PYTHONPATH set to two trees (a ``git archive`` copy of the older one)
to compare them; prints "seconds rows"."""
import sys, time
import obook

from script_usage import answer_help     # (benchmarks/, the script's folder, is on sys.path)
answer_help(__doc__, 2)
path, table = sys.argv[1], sys.argv[2]
workers = int(sys.argv[3]) if len(sys.argv) > 3 else 1
con = obook.connect()
macro = {"fills": "obook_match", "events": "obook_match_events", "bbo": "obook_match_bbo"}[table]
con.execute(f"SELECT count(*) FROM {macro}('{path}', workers := {workers})").fetchall()   # warm (kernels loaded)
t = time.perf_counter()
n = con.execute(f"SELECT count(*) FROM {macro}('{path}', workers := {workers})").fetchall()[0][0]
print(f"{time.perf_counter() - t:.3f} {n}")
