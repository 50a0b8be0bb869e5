"""``obook pipeline init``: a starter definition fitted to the day files of a directory (their
format's glob and tables)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from obook.errors import ObookError

from .config import PipelineError, several_files

__all__ = ["Starter", "starter", "starter_text"]

#: compressions a day file may carry after its format's own suffix
_PACKED = (".gz", ".zst", ".zip")


@dataclass(frozen=True)
class Starter:
    title: str               # the days' format's name
    glob: str
    tables: tuple[str, ...]
    format: str | None       # the format detected (None: no day file found)
    others: dict             # format name -> files of it the glob leaves out

    @property
    def dated(self) -> str:
        """How the days' files carry their date, for the glob's comment."""
        return " (MMDDYYYY)" if self.glob == "*.NASDAQ_ITCH50*" else " (YYYY-MM-DD, YYYYMMDD) or the feed"


#: a directory without day files: a Nasdaq ITCH pipeline, named as Nasdaq names its files
_ITCH = Starter("itch", "*.NASDAQ_ITCH50*", ("bbo", "trades", "symbols"), None, {})


def _suffix(name: str) -> tuple[str, bool]:
    """(the name's last suffix before a compression's, whether it is compressed)."""
    path = Path(name)
    packed = path.suffix.lower() in _PACKED
    return (Path(path.stem).suffix if packed else path.suffix), packed


def starter(directory) -> Starter:
    """The glob and tables of the day files in ``directory``: those of the format most of its
    files are (told from their names and first bytes); the files of other formats are named
    in ``others`` (a dataset holds one format's tables). No day file: a Nasdaq ITCH starter."""
    from obook.to_parquet import check_tables, feed_format

    found: dict[str, list[str]] = {}
    try:
        entries = sorted(Path(directory).iterdir())
    except OSError:
        entries = []
    for f in entries:
        if not f.is_file() or f.suffix == ".toml":
            continue
        try:
            found.setdefault(feed_format(f), []).append(f.name)
        except (ObookError, OSError):     # not a feed: no day of the pipeline
            continue
    if not found:
        return _ITCH
    name = max(found, key=lambda k: (len(found[k]), k))
    if several_files(name):
        raise PipelineError(f"{directory}: {several_files(name)}")
    suffixes = Counter(_suffix(n)[0] for n in found[name])
    suffix = suffixes.most_common(1)[0][0]
    if name == "itch" and all(".NASDAQ_ITCH50" in n for n in found[name]):
        glob = _ITCH.glob
    elif suffix:
        glob = f"*{suffix}*" if any(_suffix(n)[1] for n in found[name]) else f"*{suffix}"
    elif all(_suffix(n)[1] for n in found[name]):     # zipped logs without a suffix of their own
        glob = "*" + Counter(Path(n).suffix for n in found[name]).most_common(1)[0][0]
    else:
        glob = "*"
    chosen = set(Path(directory).glob(glob))
    others = {k: [n for n in v if Path(directory) / n not in chosen] for k, v in found.items() if k != name}
    try:
        tables = tuple(check_tables(["bbo", "trades", "symbols"], name))
    except ObookError:          # a format without a symbols table
        tables = ("bbo", "trades")
    return Starter(name, glob, tables, name, {k: v for k, v in others.items() if v})


def starter_text(s: Starter, name) -> str:
    """The TOML of starter ``s`` (``name``: the definition's file, for its comments)."""
    tables = ", ".join(f'"{t}"' for t in s.tables)
    fmt = f'"{s.format}"' if s.format else '"itch"'
    return f"""\
# An obook pipeline (written by `obook pipeline init`): every day file ({s.title}) in this
# directory -> a Hive-partitioned Parquet dataset
# (dataset/table=<table>/date=<YYYY-MM-DD>/part-0.parquet).
#
#   obook pipeline run {name}       # converts the days not done yet
#   obook pipeline status {name}    # done / pending / failed, per day
#
# Relative paths are relative to this file's directory; ~ is the home directory.

[source]
directory = "."                      # where the day files are
glob = "{s.glob}"{' ' * max(1, 28 - len(s.glob))}# which files are days; the date comes from the name{s.dated}

[convert]
tables = [{tables}]
# workers = 2                        # book worker processes per day (default: one per core, at most 8; one for a day under 1 MiB)
on_error = "raise"                   # "skip": tolerant replay, skipped records in the metadata
# levels = 10                        # depth levels a side (1 to 50), with "depth" in tables
# tickers = ["AAPL", "MSFT"]         # only these tickers' books (default: every ticker)
# format = {fmt}{' ' * max(1, 26 - len(fmt))}# the days' feed format (default: told from each file)

[dataset]
path = "dataset"                     # the dataset (and its manifest and lock file)

[run]
executor = "local"                   # or "dask://scheduler-host:8786" (an existing cluster)
days_at_once = 1                     # days in flight at once (local: one process a day)
retries = 1                          # extra attempts for a day that fails
"""
