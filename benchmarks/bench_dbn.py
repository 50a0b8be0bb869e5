"""Databento MBO benchmark: ns per record of obook's BBO replay of a DBN file against
``databento-dbn``'s own decoding of the same file to a DataFrame.

Contenders, alternating run by run, each in a fresh process (kernels loaded before timing):

* ``obook bbo, W workers``: ``obook.bbo(path, format="databento")`` read to the end
  (framing, decoding, books, BBO rows as Arrow);
* ``dbn objects -> polars``: ``databento_dbn.DBNDecoder`` (its Rust decoder, one Python
  ``MBOMsg`` a record), then a polars DataFrame of the record fields: what a user of the
  ``databento-dbn`` package alone writes;
* ``dbn ndarray -> polars``: what ``databento``'s ``DBNStore.to_df`` does inside (it is not
  installed: it would downgrade databento-dbn): ``np.frombuffer`` of the records with
  ``databento_dbn``'s record dtype, then a DataFrame (no book: decoding only);
* ``obook decode only``: the numba DBN decoder kernel alone over the file (no book).

    python benchmarks/bench_dbn.py --records 2000000 --repeats 3 [--zstd]
    python benchmarks/bench_dbn.py --baseline /tmp/old_checkout --workers 1 --obook-only

``--baseline`` adds the same obook runs of another checkout (old against new, alternating).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import generated_file, median, run_child  # noqa: E402


def dbn_day(records: int, instruments: int = 50, seed: int = 7, zstd: bool = False) -> Path:
    from obook.gen.databento import mbo_flow, write_dbn
    return generated_file(f"mbo_{records}_{instruments}_{seed}_noclear.dbn{'.zst' if zstd else ''}",
                      lambda tmp: write_dbn(tmp, mbo_flow(records, instruments, seed, clears=0.0), version=3,
                                            zstd=zstd, encoder=False))


OBOOK = """
import time, obook
import obook.engine.worker_main as _wm; getattr(_wm, 'warm', lambda: None)()  # every format's kernels loaded
import obook.feeds.databento.decoder
t = time.perf_counter(); rows = 0
for b in obook.bbo({path!r}, workers={workers}, format='databento'):
    rows += b.num_rows
_r = {{'seconds': time.perf_counter() - t, 'rows': rows}}
"""

DECODE_ONLY = """
import time, numpy as np
from obook.feeds.databento.decoder import DbnDecoder
from obook.feeds.databento.framer import DbnFramer
from obook.feeds.sources import iter_batches
from obook._kernels.layout import EV_WIDTH, MAX_BATCH_RECORDS
ev = np.empty((MAX_BATCH_RECORDS, EV_WIDTH), np.int64)
dec = DbnDecoder({path!r}, 0, 1)
dec.decode(np.zeros(0, np.uint8), 1, ev)
dec = DbnDecoder({path!r}, 0, 1)
t = time.perf_counter(); rows = 0
for b in iter_batches({path!r}, DbnFramer({path!r})):
    rows += dec.decode(b.data, b.base_seq, ev).n_events
_r = {{'seconds': time.perf_counter() - t, 'rows': rows}}
"""

DBN_OBJECTS = """
import time, databento_dbn as d, polars as pl
t = time.perf_counter()
raw = open({path!r}, 'rb').read()
comp = d.Compression.ZSTD if raw[:4] == b'\\x28\\xb5\\x2f\\xfd' else d.Compression.NONE
dec = d.DBNDecoder(compression=comp)
cols = {{k: [] for k in ('ts_recv', 'ts_event', 'instrument_id', 'action', 'side', 'price', 'size',
                         'order_id', 'flags', 'sequence')}}
step = 1 << 22
for i in range(0, len(raw), step):
    for r in dec.write_and_decode(raw[i:i + step]):
        if isinstance(r, d.MBOMsg):
            cols['ts_recv'].append(r.ts_recv); cols['ts_event'].append(r.ts_event)
            cols['instrument_id'].append(r.instrument_id); cols['action'].append(str(r.action))
            cols['side'].append(str(r.side)); cols['price'].append(r.price)
            cols['size'].append(r.size); cols['order_id'].append(r.order_id)
            cols['flags'].append(int(r.flags)); cols['sequence'].append(r.sequence)
df = pl.DataFrame(cols)
_r = {{'seconds': time.perf_counter() - t, 'rows': df.height}}
"""

DBN_NDARRAY = """
import time, numpy as np, databento_dbn as d, polars as pl
t = time.perf_counter()
raw = open({path!r}, 'rb').read()
if raw[:4] == b'\\x28\\xb5\\x2f\\xfd':
    import zstandard
    raw = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True).read()
meta_len = 8 + int.from_bytes(raw[4:8], 'little')
d.Metadata.decode(raw[:meta_len])
dtype = np.dtype([(n, t) for n, t in d.MBOMsg._dtypes])
arr = np.frombuffer(raw, dtype=dtype, offset=meta_len)
df = pl.DataFrame({{n: arr[n] for n in dtype.names if n not in ('length', 'rtype')}})
_r = {{'seconds': time.perf_counter() - t, 'rows': df.height}}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--instruments", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--zstd", action="store_true")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--baseline", help="another checkout's directory: its obook runs too, alternating")
    ap.add_argument("--obook-only", action="store_true", help="leave out the databento-dbn contenders")
    args = ap.parse_args()
    path = dbn_day(args.records, args.instruments, zstd=args.zstd)
    print(f"feed: {path} ({path.stat().st_size / 2**20:.0f} MiB)")
    contenders = {}
    for w in args.workers.split(","):
        name = f"obook bbo, {w} worker{'s' * (int(w) > 1)}"
        contenders[name] = (OBOOK.format(path=str(path), workers=int(w)), None)
        if args.baseline:
            contenders["base: " + name] = (OBOOK.format(path=str(path), workers=int(w)), args.baseline)
    contenders["obook decode only"] = (DECODE_ONLY.format(path=str(path)), None)
    if not args.obook_only:
        contenders["dbn objects -> polars"] = (DBN_OBJECTS.format(path=str(path)), None)
        contenders["dbn ndarray -> polars"] = (DBN_NDARRAY.format(path=str(path)), None)
    results: dict[str, list[dict]] = {k: [] for k in contenders}
    for rep in range(args.repeats):
        for name, (code, code_dir) in contenders.items():
            results[name].append(run_child(code, code_dir))
        print(f"  run {rep + 1}: " + ", ".join(f"{k} {v[-1]['seconds']:.2f}s" for k, v in results.items()))
    n = results["obook decode only"][0]["rows"]
    ref = "obook bbo, 1 worker" if args.obook_only else "dbn objects -> polars"
    base = median([r["seconds"] for r in results.get(ref) or next(iter(results.values()))])
    print(f"\n{n:,} records")
    print(f"{'contender':<28}{'median s':>10}{'ns/record':>11}{'vs ' + ref:>26}{'rows':>12}{'peak MiB':>10}")
    for name, rs in results.items():
        s = median([r["seconds"] for r in rs])
        print(f"{name:<28}{s:>10.3f}{s / n * 1e9:>11.0f}{s / base:>25.2f}x{rs[0]['rows']:>12,}"
              f"{max(r['peak_kib'] for r in rs) / 1024:>10.0f}")


if __name__ == "__main__":
    main()
