"""Level-2 benchmark: messages/s of obook's BBO replay, end to end, of generated days of
about the same size: Shenzhen as the AX-SBE text log and as AX-SBE binary, Shanghai as
the AX-SBE text log, and (the yardstick) an ITCH day; 1 and 2 workers. ``--old DIR``
also runs another checkout's obook (e.g. ``git archive <commit> obook | tar -x -C DIR``)
on the same days, alternating with this one, for before/after rows.

The Shenzhen day: a generated base day (``--base`` messages, 6 securities on 2 channels)
copied ``--copies`` times onto other securities and channels, the copies interleaved in
chunks of 100 records (fewer with more than 30 copies: a channel is never silent for more
than the framer's lookahead). The base day's records are kept (pickled) next to the files.
The Shanghai day: ``obook gen sse`` (``--sse`` lines, 200 securities; slow to generate,
kept in the data folder). Each run is a fresh process (kernels loaded before timing);
contenders alternate run by run; medians. The pure-Python reference replayer
(tests/reference_l2.py) is timed on a slice of the Shenzhen day. Goals: text
>= 2M msg/s with 2 workers, binary >= 8M msg/s.

    python benchmarks/bench_l2.py --base 100000 --copies 10 --repeats 3 --old /tmp/old
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from common import DATA, itch_day, median, run_child  # noqa: E402

OBOOK = """
import time, obook
import obook.engine.worker_main as _wm; getattr(_wm, 'warm', lambda: None)()  # every format's kernels loaded
import obook.feeds
obook.feeds.get_format({fmt!r}).framer_class(); obook.feeds.get_format({fmt!r}).decoder_class().warm()
{preimport}
t = time.perf_counter(); rows = 0
for b in obook.bbo({path!r}, workers={workers}, format={fmt!r}):
    rows += b.num_rows
_r = {{'seconds': time.perf_counter() - t, 'rows': rows}}
"""


def base_day(base: int, seed: int = 7) -> list:
    """The generated base day's records (generated once, then read from the data folder)."""
    import pickle

    from obook.gen.szse import generate

    path = DATA / f"szse_{base}_{seed}.pickle"
    if path.exists():
        return pickle.loads(path.read_bytes())
    recs = generate(base, 6, seed)
    DATA.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".tmp").write_bytes(pickle.dumps(recs))
    os.replace(path.with_suffix(".tmp"), path)
    return recs


def day(base: int, copies: int, seed: int = 7):
    """The generated records, copied onto other securities and channels and interleaved."""
    recs = base_day(base, seed)
    chunk = min(100, 3000 // copies)
    chunks = []
    for k in range(copies):
        out = []
        for r in recs:
            r = dict(r)
            r["SecurityID"] = f"{int(r['SecurityID']) + 1000 * k:06d}"
            r["ChannelNo"] = r["ChannelNo"] + 10 * k
            out.append(r)
        chunks.append([out[i:i + chunk] for i in range(0, len(out), chunk)])
    merged = []
    for i in range(max(len(c) for c in chunks)):
        for c in chunks:
            if i < len(c):
                merged += c[i]
    return recs, merged


def files(base: int, copies: int) -> tuple[Path, Path, list]:
    from obook.gen.szse import binary_record, text_line

    DATA.mkdir(parents=True, exist_ok=True)
    text = DATA / f"szse_{base}x{copies}.log"
    binary = DATA / f"szse_{base}x{copies}.bin"
    if text.exists() and binary.exists():
        return text, binary, base_day(base)
    recs, merged = day(base, copies)
    if not text.exists():
        with open(str(text) + ".tmp", "w") as f:
            for i in range(0, len(merged), 100_000):
                f.write("\n".join(text_line(r) for r in merged[i:i + 100_000]) + "\n")
        os.replace(str(text) + ".tmp", text)
    if not binary.exists():
        with open(str(binary) + ".tmp", "wb") as f:
            for i in range(0, len(merged), 100_000):
                f.write(b"".join(binary_record(r) for r in merged[i:i + 100_000]))
        os.replace(str(binary) + ".tmp", binary)
    return text, binary, recs


def sse_day(lines: int) -> Path:
    from obook.gen.sse import write_sse

    path = DATA / f"sse_{lines}.log"
    if not path.exists():
        write_sse(str(path) + ".tmp", lines, securities=200, seed=0)
        os.replace(str(path) + ".tmp", path)
    return path


def count_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 24), b""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=int, default=100_000)
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--sse", type=int, default=1_000_000, help="Shanghai order and trade lines")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--formats", default="szse,szse-bin,sse,itch")
    ap.add_argument("--old", help="another checkout's folder holding obook/ (before)")
    ap.add_argument("--reference", type=int, default=20_000, help="messages the reference replays")
    ap.add_argument("--preimport", action="store_true",
                    help="import the replay engine and pyarrow before the clock starts (else a run's time "
                         "includes them: ~0.1-0.2 s where PYTHONDONTWRITEBYTECODE makes every import compile)")
    args = ap.parse_args()
    text, binary, recs = files(args.base, args.copies)
    days = {"szse": (text, len(recs) * args.copies), "szse-bin": (binary, len(recs) * args.copies)}
    formats = args.formats.split(",")
    if "sse" in formats:
        p = sse_day(args.sse)
        days["sse"] = (p, count_lines(p))
    if "itch" in formats:
        days["itch"] = (itch_day(days["szse"][1]), days["szse"][1])
    for fmt in formats:
        print(f"{fmt}: {days[fmt][1]:,} messages, {days[fmt][0].stat().st_size / 2**20:.0f} MiB")
    from reference_l2 import szse_bbo
    part = recs[:args.reference]
    t = time.perf_counter()
    szse_bbo(part)
    ref = len(part) / (time.perf_counter() - t)
    print(f"pure-Python reference (records already parsed, first {len(part):,} messages): {ref:,.0f} msg/s")
    sides = {"new": None} | ({"old": args.old} if args.old else {})
    pre = "import obook.engine.replay, obook.engine.tables, pyarrow.ipc" if args.preimport else ""
    contenders = {(fmt, int(w), side): (OBOOK.format(path=str(days[fmt][0]), workers=int(w), fmt=fmt,
                                                     preimport=pre), where)
                  for fmt in formats for w in args.workers.split(",") for side, where in sides.items()}
    results: dict[tuple, list[dict]] = {k: [] for k in contenders}
    for _ in range(args.repeats):
        for key, (code, where) in contenders.items():
            results[key].append(run_child(code, where))
    print("| format | workers | side | median s | M msg/s | new/old time | vs reference | peak RSS MiB (parent / workers) |")
    print("|---|---|---|---|---|---|---|---|")
    for (fmt, w, side), rs in results.items():
        s = median([r["seconds"] for r in rs])
        n = days[fmt][1]
        ratio = ""
        if side == "new" and args.old:
            ratio = f"{s / median([r['seconds'] for r in results[(fmt, w, 'old')]]):.2f}x"
        print(f"| {fmt} | {w} | {side} | {s:.2f} | {n / s / 1e6:.2f} | {ratio} | {n / s / ref:.0f}x | "
              f"{median([r['peak_kib'] for r in rs]) / 1024:.0f} / "
              f"{median([r['children_peak_kib'] for r in rs]) / 1024:.0f} |")


if __name__ == "__main__":
    main()
