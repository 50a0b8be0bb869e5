"""``obook plot latency``: the latency distributions of a live run (the table ``obook listen
--latency-output`` writes) as a percentile plot, HdrHistogram style: the latency (log scale)
against the percentile on a log scale of 1 / (1 - q), so that the median, 99%, 99.9% and
99.99% are evenly spaced and the tail is visible."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ObookError

#: the percentiles marked on the x axis
TICKS = (0.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999)


def percentile_curve(bucket_ns, bucket_count) -> tuple[np.ndarray, np.ndarray]:
    """(percentile, latency ns) at the top of each bucket: the fraction of values at or below
    it, and its value; the last point (100%) is placed one value past the last finite step."""
    value = np.asarray(bucket_ns, np.float64)
    count = np.asarray(bucket_count, np.float64)
    order = np.argsort(value, kind="stable")
    value, count = value[order], count[order]
    total = count.sum()
    if total == 0:
        return np.zeros(0), np.zeros(0)
    cum = np.cumsum(count) / total
    cum[-1] = 1.0 - 1.0 / (2 * total)      # the maximum: half a value short of 100%
    return 100.0 * cum, value


def _x(pct: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 - np.asarray(pct) / 100.0)


def _not_parquet(path) -> str:
    """Why pyarrow could not read ``path`` as Parquet, in a few words: it is no Parquet file
    (its first bytes are not ``PAR1``), or a Parquet file cut short or damaged."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        return f"cannot read it ({e.strerror or e})"
    return "a Parquet file cut short or damaged" if head == b"PAR1" else "not a Parquet file"


def _checked_rows(table, path) -> list[dict]:
    """The rows of a latency table, each a stage with as many ``bucket_count`` (whole, not
    negative) as ``bucket_ns`` (numbers); an ObookError naming the first column or row that
    is not so."""
    import pyarrow as pa

    def bad(why: str):
        return ObookError(f"{path}: not a latency table: {why}")

    types = {name: table.schema.field(name).type for name in ("stage", "bucket_ns", "bucket_count")}
    if not (pa.types.is_string(types["stage"]) or pa.types.is_large_string(types["stage"])):
        raise bad(f"stage is {types['stage']}, not text")
    for name, ok, what in (("bucket_ns", lambda v: pa.types.is_integer(v) or pa.types.is_floating(v), "numbers"),
                           ("bucket_count", pa.types.is_integer, "whole numbers")):
        t = types[name]
        listed = pa.types.is_list(t) or pa.types.is_large_list(t)
        if not (listed and ok(t.value_type)):
            raise bad(f"{name} is {f'a list of {t.value_type}' if listed else t}, not a list of {what}")
    rows = table.to_pylist()
    for i, r in enumerate(rows, 1):
        if r["stage"] is None:
            raise bad(f"row {i}: no stage")
        ns, count = r["bucket_ns"] or [], r["bucket_count"] or []
        where = f"stage {r['stage']}"
        if len(ns) != len(count):
            raise bad(f"{where}: {len(ns)} bucket_ns but {len(count)} bucket_count")
        for name, values in (("bucket_ns", ns), ("bucket_count", count)):
            if any(v is None for v in values):
                raise bad(f"{where}: a null in {name}")
            if any(not 0 <= v < float("inf") for v in values):       # (NaN too)
                raise bad(f"{where}: a {name} below 0 or not a finite number")
        r["bucket_ns"], r["bucket_count"] = ns, count
    return rows


def plot_latency(table_path, out, stages=None, width: float = 9.0, height: float = 5.5, dpi: int = 100) -> Path:
    """Draw the stages of a latency table (all, or ``stages``) to ``out`` (.png, .svg, .pdf)."""
    import pyarrow.parquet as pq

    from ..plotting import check_picture_path
    from ..plotting_draw import _complete, _matplotlib

    if Path(out).suffix.lower() in (".html", ".htm"):
        raise ObookError(f"{out}: the latency picture is drawn as .png, .svg or .pdf (.html: a feed's or a backtest's picture)")
    if Path(out).is_dir():
        raise ObookError(f"{out}: is a folder; give the picture's file name (.png, .svg or .pdf)")
    check_picture_path(Path(out))

    if not Path(table_path).exists():
        raise ObookError(f"{table_path}: no such latency table (obook listen --latency-output TABLE writes one)")
    if Path(table_path).is_dir():
        raise ObookError(f"{table_path}: is a folder, not a latency table (the Parquet file obook listen "
                         "--latency-output TABLE writes)")
    if not Path(table_path).is_file():      # (opened, a named pipe would wait for a writer)
        import stat

        kind = "a named pipe (FIFO)" if stat.S_ISFIFO(Path(table_path).stat().st_mode) else "a device or a socket"
        raise ObookError(f"{table_path}: {kind}, not a latency table (the Parquet file obook listen "
                         "--latency-output TABLE writes)")
    try:
        table = pq.read_table(table_path)
    except (OSError, ValueError) as e:
        raise ObookError(f"{table_path}: not a latency table: {_not_parquet(table_path)} (expected the Parquet "
                         "file obook listen --latency-output TABLE writes)") from e
    need = {"stage", "bucket_ns", "bucket_count"}
    if not need <= set(table.column_names):
        raise ObookError(f"{table_path}: not a latency table (needs the columns {', '.join(sorted(need))}: "
                         f"obook listen --latency-output writes one)")
    rows = _checked_rows(table, table_path)
    if stages:
        rows = [r for r in rows if r["stage"] in set(stages)]
    rows = [r for r in rows if sum(r["bucket_count"])]       # (a stage of no sample draws no line)
    if stages:
        unknown = [s for s in stages if s not in {r["stage"] for r in table.to_pylist()}]
        if unknown:
            raise ObookError(f"{table_path}: no stage {', '.join(unknown)} (it has "
                             f"{', '.join(table.column('stage').to_pylist())})")
    if not rows:
        raise ObookError(f"{table_path}: no latency samples{' of ' + ', '.join(stages) if stages else ''}")
    plt = _matplotlib()
    fig, ax = plt.subplots(figsize=(width, height), dpi=dpi)
    top = 0.0
    for r in rows:
        pct, ns = percentile_curve(r["bucket_ns"], r["bucket_count"])
        ax.step(_x(pct), np.maximum(ns, 1.0) / 1000.0, where="post", label=f"{r['stage']} (n={sum(r['bucket_count'])})")
        top = max(top, pct[-1])
    ticks = [t for t in TICKS if t <= top + 1e-9] or [0.0]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(_x(ticks))
    ax.set_xticklabels([f"{t:g}%" for t in ticks])
    ax.minorticks_off()
    ax.set_xlim(1.0, _x(top) * 1.2)
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (µs)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left")
    ax.set_title("latency by percentile")
    out = Path(out)
    fig.tight_layout()
    try:
        _complete(out, lambda tmp: fig.savefig(tmp, format=out.suffix[1:].lower() or "png"), "picture")
    finally:
        plt.close(fig)
    return out
