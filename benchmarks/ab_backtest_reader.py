"""Wall time of reading one backtest table whole through the front ends' reader, in this
process, after one warm-up read: ``python benchmarks/ab_backtest_reader.py DAY.dbn
orders|events|fills``. The day: a generated Databento MBO day (``bench_backtest.day``), the
strategy: bench_backtest's compiled market maker, its timer and latencies. The reader is
``obook.backtest.stream.backtest_reader`` where the tree has it, else
``obook.backtest(...).reader(table)`` (the whole run's table). Run it alternately with
PYTHONPATH set to two trees (a ``git archive`` copy of the older one) to compare them;
prints "seconds rows"."""
import sys
import time
from pathlib import Path

from script_usage import answer_help     # (benchmarks/, the script's folder, is on sys.path)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench_backtest import FEED, ORDER, PERIOD, RESPONSE  # noqa: E402
from hftbacktest_support import obook_market_maker  # noqa: E402

from obook.backtest import backtest, compiled  # noqa: E402
from obook.live.risk import RiskGate  # noqa: E402

answer_help(__doc__, 2)
path, table = sys.argv[1], sys.argv[2]
options = dict(feed_latency=FEED, order_latency=ORDER, response_latency=RESPONSE,
               risk=RiskGate(max_orders_per_second=100_000))
mm = obook_market_maker()
try:
    from obook.backtest.stream import backtest_reader

    def read():
        return backtest_reader(path, compiled(mm, on=("timer",), timer=PERIOD), table, **options).read_all()
except ImportError:
    def read():
        return backtest(path, compiled(mm, on=("timer",), timer=PERIOD), **options).reader(table).read_all()

read()      # warm (kernels loaded)
t = time.perf_counter()
n = read().num_rows
print(f"{time.perf_counter() - t:.3f} {n}")
