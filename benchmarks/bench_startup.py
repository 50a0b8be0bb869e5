"""Start-up cost of the command line: `obook --help`, `obook bbo tiny.itch`
(1,000 messages) and `python -c "import obook"`, each in a fresh process, alternating,
medians of ``--repeats`` runs (kernels already compiled and cached: run once before).
``--before PYTHON`` runs the same commands with another install (e.g. the main checkout's
venv) alternating with this one, for before/after ratios measured under the same load.

    python benchmarks/bench_startup.py [--repeats 10] [--before /work/main/.venv/bin/python]
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


def _obook(*args: str, python: str = sys.executable) -> list[str]:
    script = Path(python).parent / "obook"     # the installed console command, as users run it
    return [str(script), *args] if script.exists() else [python, "-m", "obook", *args]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--before", help="the python of the install to compare with")
    args = ap.parse_args()
    pythons = {"after": sys.executable, **({"before": args.before} if args.before else {})}
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / "tiny.itch"
        subprocess.run(_obook("gen", "itch", str(tiny), "--messages", "1000", "--stocks", "10"),
                       check=True, capture_output=True)
        commands = {}
        for label, py in pythons.items():
            commands.update({
                f"{label}: obook --help": _obook("--help", python=py),
                f"{label}: obook bbo tiny.itch": _obook("bbo", str(tiny), python=py),
                f"{label}: python -c 'import obook'": [py, "-c", "import obook"],
                f"{label}: python -c pass": [py, "-c", "pass"],
            })
        # run in the temporary directory: each python imports its own installed obook, not
        # the one in the current directory
        for cmd in commands.values():          # warm: compile/cache whatever a first run needs
            subprocess.run(cmd, check=True, capture_output=True, cwd=tmp)
        times: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(args.repeats):
            for name, cmd in commands.items():
                t = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True, cwd=tmp)
                times[name].append(time.perf_counter() - t)
    print(f"{'command':<36}{'median s':>10}{'min s':>8}{'after/before':>14}")
    for name, ts in times.items():
        other = times.get(name.replace("after:", "before:")) if name.startswith("after:") else None
        ratio = f"{median(ts) / median(other):>13.2f}x" if other else ""
        print(f"{name:<36}{median(ts):>10.3f}{min(ts):>8.3f}{ratio}")


if __name__ == "__main__":
    main()
