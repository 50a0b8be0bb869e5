"""Seeded mutations of a small valid feed of each format, replayed on the compiled kernels.

Run as a script (``python tests/fuzz_formats.py FORMAT CASES SEED WORKDIR``) in a
subprocess of the test (tests/test_fuzz_formats.py), so that a crash (a signal) fails the
test and never the test session. Each case writes its number to ``WORKDIR/current``
first (a crash or a hang names it), replays every table in strict or tolerant mode, and
sorts the ending: rows (the feed read to its end), an ``ObookError``, or anything else
(a failure, with its traceback). Prints a JSON summary on its last line.
"""

from __future__ import annotations

import json
import random
import re
import sys
import traceback
from pathlib import Path

#: values put in place of a number of a text feed (a field of a CSV line, a key's value)
HOSTILE_NUMBERS = [b"0", b"-1", b"65535", b"65536", b"70000", b"99999999999", b"9223372036854775807",
                   b"9223372036854775808", b"18446744073709551616", b"-9223372036854775808", b"1e100000000",
                   b"NaN", b"sNaN", b"Infinity", b"", b"\xc2\xb2\xc2\xb3", b"x", b"1.5", b"9" * 40]
TABLES = ("bbo", "trades", "orders", "depth")
NUMBER = rb"-?\d+(\.\d+)?"
#: the numbers the readers use as indexes or keys (a text log's channels, securities,
#: sequence numbers; a vendor CSV row's last field, its channel)
INDEXING = (rb"(?<=ChannelNo=)-?\d+|(?<=SecurityID=)\d+|(?<=ApplSeqNum=)-?\d+|(?<=BizIndex=)\d+"
            rb"|(?<=TransactTime=)\d+|(?<=Side=)\d+|(?<=OrdType=)\d+|(?<=,)\d+(?=\r?\n)")


def _szse_recs(n=300):
    from obook.gen.szse import generate
    return generate(n, securities=3, seed=3)


def base(fmt: str, work: Path) -> list[bytes]:
    """The bytes of the valid feed's files."""
    if fmt == "itch":
        from obook.gen.itch import write_itch
        write_itch(work / "g.itch", 300, 3, seed=3)
        return [(work / "g.itch").read_bytes()]
    if fmt == "csv":
        from obook.gen.csv import write_csv
        write_csv(work / "g.csv", 300, 3, seed=3, depth=20)
        return [(work / "g.csv").read_bytes()]
    if fmt == "databento":
        from obook.gen.databento import mbo_flow, write_dbn
        write_dbn(work / "g.dbn", mbo_flow(300, 3, 3))
        return [(work / "g.dbn").read_bytes()]
    if fmt == "sse":
        from obook.gen.sse import generate
        return [("\n".join(generate(300, securities=3, seed=3)) + "\n").encode()]
    if fmt == "szse":
        from obook.gen.szse import text_line
        return [("\n".join(text_line(r) for r in _szse_recs()) + "\n").encode()]
    if fmt == "szse-bin":
        from obook.gen.szse import binary_record
        return [b"".join(binary_record(r) for r in _szse_recs())]
    if fmt == "szse-csv":
        from obook.gen.szse import vendor_order, write_vendor
        files = write_vendor(work / "vendor", vendor_order(_szse_recs()))
        return [f.read_bytes() for f in files]
    if fmt == "pitch":
        from obook.gen.pitch import write_pitch
        write_pitch(work / "g.pitch", 300, 3, seed=3)
        return [(work / "g.pitch").read_bytes()]
    if fmt == "sse-zip":
        import io
        import zipfile

        from obook.gen.sse import generate
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("day.log", "\n".join(generate(300, securities=3, seed=3)) + "\n")
        return [out.getvalue()]
    if fmt in ("pcap", "pcapng"):
        from obook.gen.itch import write_itch
        from obook.gen.pcap import write_pcap
        write_itch(work / "g.itch", 200, 3, seed=3)
        write_pcap(work / "g.itch", work / f"g.{fmt}", None, seed=5, drop=0.02, kind=fmt)
        return [(work / f"g.{fmt}").read_bytes()]
    raise ValueError(fmt)


def mutate(data: bytes, rnd: random.Random, text: bool) -> bytes:
    """1 to 4 edits: a byte overwritten, a bit flipped, a range deleted or doubled, or (text)
    a number replaced by a hostile value."""
    out = bytearray(data)
    for _ in range(rnd.randint(1, 4)):
        if not out:
            break
        kind = rnd.randrange(8 if text else 4)      # text: half the edits put a hostile number
        at = rnd.randrange(len(out))
        if kind == 0:
            out[at] = rnd.randrange(256)
        elif kind == 1:
            out[at] ^= 1 << rnd.randrange(8)
        elif kind == 2:
            del out[at:at + rnd.randint(1, 40)]
        elif kind == 3:
            out[at:at] = out[at:at + rnd.randint(1, 40)]
        else:
            pattern = INDEXING if kind % 2 else NUMBER
            numbers = [m.span() for m in re.finditer(pattern, bytes(out))]
            if numbers:
                a, b = rnd.choice(numbers)
                out[a:b] = rnd.choice(HOSTILE_NUMBERS)
    return bytes(out)


def run(fmt: str, cases: int, seed: int, work: Path) -> dict:
    import obook
    from obook.engine.replay import Replay

    originals = base(fmt, work)
    text = fmt in ("csv", "sse", "szse", "szse-csv")
    names = [f"000{k + 1:03d}_{'orders' if k % 2 == 0 else 'ticks'}.csv" for k in range(len(originals))]
    if fmt == "szse-csv":
        names = sorted(p.name for p in (work / "vendor").iterdir())
    rnd = random.Random(seed)
    summary = {"format": fmt, "cases": 0, "complete": 0, "obook_errors": 0, "failures": []}
    for case in range(cases):
        (work / "current").write_text(str(case))
        files = list(originals)
        k = rnd.randrange(len(files))
        files[k] = mutate(files[k], rnd, text)
        if fmt == "szse-csv":
            paths = [work / f"m{case % 2}" / n for n in names]
            paths[0].parent.mkdir(exist_ok=True)
        else:
            paths = [work / f"m{case % 2}.{fmt}"]
        for p, data in zip(paths, files):
            p.write_bytes(data)
        source = [str(p) for p in paths] if fmt == "szse-csv" else str(paths[0])
        on_error = "raise" if case % 2 == 0 else "skip"
        replay_format = {"pcap": "itch-pcap", "pcapng": "itch-pcap", "sse-zip": "sse"}.get(fmt, fmt)
        summary["cases"] += 1
        try:
            for _table, _batch in Replay(source, workers=1, format=replay_format, on_error=on_error,
                                         tables=TABLES).table_batches():
                pass
            summary["complete"] += 1
        except obook.ObookError:
            summary["obook_errors"] += 1
        except Exception:  # noqa: BLE001 - what the test reports
            summary["failures"].append({"case": case, "on_error": on_error,
                                        "traceback": traceback.format_exc()[-1500:]})
    return summary


if __name__ == "__main__":
    fmt, cases, seed, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    print(json.dumps(run(fmt, cases, seed, work)))
