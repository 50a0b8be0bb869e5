"""Start-up cost of the command line (issue 13): `obook --help`, `obook bbo tiny.itch`
(1,000 messages) and `python -c "import obook"`, each in a fresh process, alternating,
medians of ``--repeats`` runs (kernels already compiled and cached: run once before).

    python benchmarks/bench_startup.py [--repeats 10]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median  # noqa: E402


def _obook(*args: str) -> list[str]:
    return [sys.executable, "-m", "obook", *args]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / "tiny.itch"
        subprocess.run(_obook("gen", "itch", str(tiny), "--messages", "1000", "--stocks", "10"),
                       check=True, capture_output=True)
        commands = {
            "obook --help": _obook("--help"),
            "obook bbo tiny.itch": _obook("bbo", str(tiny)),
            "python -c 'import obook'": [sys.executable, "-c", "import obook"],
        }
        for cmd in commands.values():          # warm: compile/cache whatever a first run needs
            subprocess.run(cmd, check=True, capture_output=True)
        times: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(args.repeats):
            for name, cmd in commands.items():
                t = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True)
                times[name].append(time.perf_counter() - t)
    print(f"{'command':<28}{'median s':>10}{'min s':>8}")
    for name, ts in times.items():
        print(f"{name:<28}{median(ts):>10.3f}{min(ts):>8.3f}")


if __name__ == "__main__":
    main()
