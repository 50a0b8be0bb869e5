"""One tree's backtest in a fresh process: the market maker of bench_backtest.py on its
generated Databento MBO day, a warm-up backtest then RUNS more, each one's wall time and its
books' worker's CPU (user + system). To compare two trees, run it for each in turn, a few
rounds (fresh processes see fresh memory, as a user's first backtest does):

    for i in 1 2 3 4; do for t in /path/old /path/new; do
        python benchmarks/bench_backtest_fresh.py $t 3; done; done
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

from script_usage import answer_help     # (benchmarks/, the script's folder, is on sys.path)


def main(tree: str, runs: int = 3) -> None:
    tree = str(Path(tree).resolve())
    for p in (tree + "/tests", tree + "/benchmarks", tree):
        sys.path.insert(0, p)
    import obook

    if not obook.__file__.startswith(tree):
        raise SystemExit(f"obook comes from {obook.__file__}, not {tree}")
    from bench_backtest import day, run_market_maker
    from hftbacktest_support import obook_market_maker

    path, _ = day(5_000_000)
    mm = obook_market_maker()

    def run():
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        run_market_maker(path, mm)
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.perf_counter() - t, c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime

    run()
    got = [run() for _ in range(runs)]
    print(f"{Path(tree).name}: wall/worker CPU " + " ".join(f"{w:.3f}/{c:.3f}" for w, c in got))


if __name__ == "__main__":
    answer_help(__doc__)
    main(sys.argv[1] if len(sys.argv) > 1 else ".", int(sys.argv[2]) if len(sys.argv) > 2 else 3)
