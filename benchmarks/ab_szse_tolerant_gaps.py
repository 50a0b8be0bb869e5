"""The cost of a Shenzhen tolerant replay telling a skipped record's ApplSeqNum hole from a
sequence gap (_SzseFramer._skipped_gaps, numpy over each batch's rows once a record was
rejected): a generated log with a rejected line (its '//' lost) every ~8,000 lines,
replayed with on_error='skip', the check on against it off (monkeypatched to count
nothing), alternating, medians of the runs after the first pair.

    python benchmarks/ab_szse_tolerant_gaps.py [--messages 400000] [--rounds 8]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import obook
from obook.feeds.szse.feed import _SzseFramer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=400_000)
    ap.add_argument("--rounds", type=int, default=8)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "sz.log"
        subprocess.run([sys.executable, "-m", "obook", "gen", "szse", str(log), "-n", str(a.messages)], check=True,
                       capture_output=True)
        lines = log.read_text().split("\n")
        orders = [i for i, ln in enumerate(lines) if "MsgType=192" in ln]
        for i in orders[1::max(1, len(orders) // 50)]:
            lines[i] = lines[i].lstrip("/")
        log.write_text("\n".join(lines))
        real = _SzseFramer._skipped_gaps
        times: dict[str, list[float]] = {"on": [], "off": []}
        for r in range(a.rounds):
            for mode in ("on", "off"):
                _SzseFramer._skipped_gaps = real if mode == "on" else (lambda self, *args: 0)
                t = time.perf_counter()
                obook.bbo(str(log), workers=1, format="szse", on_error="skip").read_all()
                if r:
                    times[mode].append(time.perf_counter() - t)
        on, off = statistics.median(times["on"]), statistics.median(times["off"])
        print(f"median on {on:.3f} s, off {off:.3f} s, on/off {on / off:.3f} ({a.rounds - 1} runs each)")


if __name__ == "__main__":
    main()
