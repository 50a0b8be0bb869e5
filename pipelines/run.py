"""Running a pipeline: find the days to do, convert each, record it in the manifest.

A day is *done* when the manifest records it with the size and sha256 its file has now and
the options the pipeline has now, and its partitions are in the dataset; otherwise it is
*pending* (new, changed, options changed, partitions missing or damaged) or *failed* (the last run's
attempts all failed; the next run tries again). A file that is no day is *invalid*: no date
in its name, a second file of a date, an empty file (no bytes, also once decompressed), a
file that cannot be read, or no regular file (a folder, a FIFO); nothing is recorded for it, so once it is replaced by a real day
file the next run converts it.

A day that is not done but was converted before keeps the partitions of that conversion
(``Day.previous`` says from which file): a day that fails leaves the last good data in the
dataset rather than none, and the run warns about it (``previous_partitions`` in its
summary). The partitions of tables the pipeline no longer has are removed as their days
are converted again; the ones left (a day that failed, a day whose file is gone) stay, and
the run warns naming them (``dropped_table_partitions``).

Each day is converted by :func:`convert_day`, the unit of work of both executors: it calls
:func:`obook.to_parquet.convert` into ``DATASET/.tmp/<date>.<pid>.<token>/``, then moves each
table's file into ``DATASET/table=<table>/date=<date>/part-0.parquet`` with ``os.replace``
(atomic per file, same filesystem; when one cannot go, the ones moved before it get their
previous files back). The run (holding the dataset's lock) records the day in
the manifest once that returned.

Executors: ``local`` converts the days one after another in this process (each with its own
book worker processes); ``dask://host:port`` submits each day as a task to an existing Dask
distributed cluster (``distributed.Client``), at most ``days_at_once`` in flight, with Dask's
own ``retries`` and worker ``resources``. A task whose worker dies is rescheduled by Dask.
The dataset must be on a filesystem every Dask worker sees at the same path.
"""

from __future__ import annotations

import datetime as _dt
import logging
import multiprocessing
import os
import re
import shutil
import stat
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from obook.dataset import describe, differences, file_layout, layouts, tables as dataset_tables
from obook.to_parquet import (TABLES, check_tables, convert, empty_once_decompressed, feed_format, file_digest,
                              partition_date)
from obook.errors import FeedError, FormatError, ObookError

from . import manifest
from .config import Pipeline, PipelineError, several_files

log = logging.getLogger("obook")

__all__ = ["Day", "DayFailed", "plan", "status", "run", "convert_day", "partition_path", "empty_file",
           "previous_note", "dropped_table_partitions", "mixed_columns"]

TMP = ".tmp"

#: the reason of a day file without a date (obook.session.partition_date: the formats' ways)
_NO_DATE = ("no session date: the name holds none by its format's rule (ITCH: MMDDYYYY.NASDAQ_ITCH50[.gz|.zst]; "
            "CSV, Shanghai, Databento: YYYYMMDD or YYYY-MM-DD in it) and the feed's first records carry none "
            "(PITCH, Shenzhen, pcap)")


class DayFailed(ObookError):
    """A day's conversion failed (a one-argument exception: it travels through Dask)."""


class DayFeedFailed(DayFailed):
    """A day failed on its feed (a bad or truncated record): trying again gives the same."""


@dataclass
class Day:
    date: str | None
    file: str
    state: str               # done | pending | failed | invalid
    reason: str = ""
    size: int | None = None
    sha256: str | None = None
    previous: dict | None = None   # not done, converted before: what its partitions are from


def partition_path(dataset, table: str, date: str) -> Path:
    return Path(dataset) / f"table={table}" / f"date={date}" / "part-0.parquet"


# --------------------------------------------------------------------------- planning


def plan(p: Pipeline, doc: dict | None = None) -> list[Day]:
    """Every day file of the pipeline with its state (size + sha256 of each file: hashed,
    unless it is still the file its day was converted from, :func:`_digest`)."""
    doc = manifest.read(p.dataset) if doc is None else doc
    _check_source_dir(p)
    days: list[Day] = []
    seen: dict[str, str] = {}
    matched = [x for x in p.source_dir.glob(p.glob) if not _own_file(p, x)]
    files = sorted(x for x in matched     # (a symlink to nothing: invalid, not unseen)
                   if x.is_file() or (x.is_symlink() and not x.exists()))
    if not files:
        log.warning("%s: no file matches the pipeline's glob %r", p.source_dir, p.glob)
    for x, reason in _not_files(p, matched, files):
        days.append(Day(None, str(x), "invalid", reason))
    for f in files:
        unreadable = _open_error(f)
        try:
            d = partition_date(f, p.format)
        except ObookError as e:         # a date no timestamp holds: this day only
            days.append(Day(None, str(f), "invalid", unreadable or str(e).split(": ", 1)[-1]))
            continue
        except OSError:
            d = None
        if d is None:       # (an empty file has no date in its records: it is empty)
            days.append(Day(None, str(f), "invalid", unreadable or _empty_or(f) or _no_date(f, p.format)))
            continue
        date = d.isoformat()
        if date in seen:
            days.append(Day(date, str(f), "invalid", f"same date as {Path(seen[date]).name}"))
            continue
        seen[date] = str(f)
        done, failed = doc["days"].get(date), doc["failed"].get(date)
        if not unreadable:
            try:
                size, sha = _digest(f, done)
                empty = empty_file(f)
            except OSError as e:        # an I/O error while reading it
                unreadable = _unreadable(e)
        if unreadable:                  # this day only: the others go on
            days.append(Day(date, str(f), "invalid", unreadable,
                            previous=_previous(done, None, None, p.options()) if done else None))
            continue
        day = Day(date, str(f), "pending", "new", size, sha)
        same = done and (done["size"], done["sha256"]) == (size, sha) and done.get("options") == p.options()
        parts = {t: partition_path(p.dataset, t, date) for t in p.tables} if same else {}
        missing = [t for t, f in parts.items() if not f.is_file()]
        rows = {t: _parquet_rows(f) for t, f in parts.items() if t not in missing}
        damaged = [t for t, n in rows.items() if n is None]
        changed = [t for t, n in rows.items() if n is not None and n != (done.get("tables") or {}).get(t, n)]
        if empty:
            day.state, day.reason = "invalid", empty
        elif same and not missing and not damaged and not changed:
            day.state, day.reason = "done", ""
        elif failed and (failed["size"], failed["sha256"]) == (size, sha):
            day.state, day.reason = "failed", failed["error"]
        elif done and (done["size"], done["sha256"]) != (size, sha):
            day.reason = "changed"
        elif done and not same:
            day.reason = "options changed"
        elif done:                      # removed or damaged since (by hand, a lost disk)
            day.reason = "; ".join(
                [f"partitions missing from the dataset: {', '.join(missing)}"] * bool(missing)
                + [f"partitions damaged in the dataset (not whole Parquet files): {', '.join(damaged)}"] * bool(damaged)
                + [f"partitions changed in the dataset (not the rows written): {', '.join(changed)}"] * bool(changed))
        if done and day.state != "done":
            day.previous = _previous(done, size, sha, p.options())
        days.append(day)
    _one_format(days, p.format)
    undated = {d.file: d for d in days if d.state == "invalid" and d.date is None}
    for date, rec in sorted(doc["days"].items()):
        if date in seen:
            continue
        file = rec.get("path", rec["source"])
        if file in undated:     # still there, dated no more (another [convert] format): not gone
            _kept_undated(undated.pop(file), date, rec, p.options())
        else:
            days.append(Day(date, file, "done", "source file gone", rec["size"], rec["sha256"]))
    return sorted(days, key=lambda d: (d.date or "", d.file))


def _kept_undated(day: Day, date: str, rec: dict, options: dict) -> None:
    """The invalid ``day`` whose file has no date now but was converted as ``date`` (``rec``):
    that date, with the partitions the dataset keeps of it."""
    try:
        size, sha = _digest(Path(day.file), rec)
    except OSError:             # (unreadable: its reason says so)
        size = sha = None
    day.date, day.previous = date, _previous(rec, size, sha, options)


#: what a path the glob matches is, when it is no regular file (``stat``'s kinds)
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _not_files(p: Pipeline, matched: list[Path], files: list[Path]):
    """(path, reason) of each path the glob matches that is no regular file (never opened: a
    FIFO would block the run), but for the folders that hold the dataset or another path
    matched (a glob such as ``**/*`` reaches them on its way to the day files)."""
    holders = {parent for x in matched for parent in x.parents}
    for x in sorted(set(matched) - set(files)):
        try:
            mode = os.stat(x).st_mode
            resolved = x.resolve()
        except OSError:         # (gone since the glob saw it)
            continue
        if x in holders or (stat.S_ISDIR(mode) and (resolved == p.dataset or resolved in p.dataset.parents)):
            continue
        kind = next((name for test, name in _KINDS if test(mode)), "no regular file")
        link = f" (a symbolic link to {os.readlink(x)})" if x.is_symlink() else ""
        yield x, f"not a day file: it is {kind}{link}, not a regular file"


def _digest(f: Path, rec: dict | None) -> tuple[int, str]:
    """(size, sha256) of a day file: its manifest record's when the file is still the one
    that was converted (the same device, inode, size, modification and change times, as
    the conversion saw them: a file rewritten or replaced since has another change time at
    least), else read and hashed. A nightly run does not read every day again."""
    if rec and rec.get("identity") == list(_identity(f)):
        return rec["size"], rec["sha256"]
    return file_digest(f)


def _unreadable(e: OSError) -> str:
    """The reason of a day file that cannot be read (permissions, an I/O error)."""
    return f"cannot read the file: {e.strerror or e}"


def _parquet_rows(path: Path) -> int | None:
    """The rows of the Parquet file ``path`` as its footer gives them; None when it is no
    whole Parquet file (cut short, overwritten, its footer damaged: its rows cannot be read).
    Its pages are not read: a run does not read every partition again."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with open(path, "rb") as f:
            head = f.read(4)
            f.seek(-4, os.SEEK_END)
            if head != b"PAR1" or f.read(4) != b"PAR1":
                return None
        return pq.read_metadata(path).num_rows
    except (OSError, pa.ArrowException):   # (shorter than 4 bytes: the seek fails)
        return None


def _open_error(f: Path) -> str:
    """:func:`_unreadable`'s reason when ``f`` cannot be opened for reading, else ``""``."""
    try:
        with open(f, "rb"):
            return ""
    except FileNotFoundError as e:
        if f.is_symlink():          # a link to a file moved, a mount that went away
            return f"cannot read the file: it is a symbolic link to {os.readlink(f)}, which does not exist"
        return _unreadable(e)
    except OSError as e:
        return _unreadable(e)


#: where a format's days carry their date (a format not named: in its first records)
_DATED = {"itch": "in the name, MMDDYYYY.NASDAQ_ITCH50[.gz|.zst]", "csv": "in the name, YYYYMMDD or YYYY-MM-DD",
          "sse": "in the name, YYYYMMDD or YYYY-MM-DD", "databento": "in the name, YYYYMMDD or YYYY-MM-DD"}


def _no_date(f: Path, fmt: str | None) -> str:
    """The reason of a day file without a session date: :data:`_NO_DATE`, or that the digits
    of its name where a date goes are no date by any of the names' orders (13012020,
    2020-02-30); with the pipeline's ``format``, that format's rule, and the file's own
    format when it is another."""
    if fmt is not None:
        try:
            told = feed_format(f)
        except (ObookError, OSError):
            told = fmt
        from obook.checks import a_feed

        where = _DATED.get(fmt, "in their first records")
        other = f"; the file is {a_feed(told)}" if told != fmt else ""
        return f"no session date: [convert] format is {fmt}, whose days carry it {where}{other}"
    for digits in re.findall(r"(?<!\d)(\d{8}|\d{4}-\d{2}-\d{2})(?!\d)", f.name):
        plain = digits.replace("-", "")
        readings = [(plain[:4], plain[4:6], plain[6:])]
        if "-" not in digits:
            readings.append((plain[4:], plain[:2], plain[2:4]))     # ITCH's MMDDYYYY
        if not any(_is_date(*ymd) for ymd in readings):
            return (f"no session date: {digits} in the name is no calendar date (YYYYMMDD, YYYY-MM-DD or "
                    "ITCH's MMDDYYYY)")
    return _NO_DATE


def _is_date(year: str, month: str, day: str) -> bool:
    try:
        _dt.date(int(year), int(month), int(day))
    except ValueError:
        return False
    return True


def _formats(days: list[Day], given: str | None):
    """(day, its feed format's name: ``given``, or told from the file) of the days not
    invalid, the earliest first; a file no format recognises is left out (its conversion
    says what is wrong)."""
    for day in sorted((d for d in days if d.state != "invalid"), key=lambda d: d.date):
        try:
            yield day, given or feed_format(day.file)
        except (ObookError, OSError):
            continue


def _one_format(days: list[Day], given: str | None) -> None:
    """A dataset holds one feed format's tables (their units: price scale, time unit and
    origin, quantity scale, differ between formats): a day file of another format than the
    earliest day's is invalid. A file no format recognises is left to its conversion; with
    the pipeline's ``format`` every file is read as that format."""
    if given is not None:
        return
    first = None
    for day, fmt in _formats(days, None):
        if first is None:
            first = (fmt, Path(day.file).name)
        elif fmt != first[0]:
            day.state, day.reason = "invalid", (f"its format is {fmt}, but {first[1]}'s is {first[0]}: a dataset "
                                                "holds one format's tables (their units differ); give this one its "
                                                "own pipeline")


def _check_tables(p: Pipeline, days: list[Day]) -> None:
    """The pipeline's tables are ones its days' format has, and its days are one file each
    (every day would fail the same way, each after its retries): a PipelineError naming the
    format's tables, or why its days are not, otherwise."""
    for day, fmt in _formats(days, p.format):
        if several_files(fmt):
            raise PipelineError(f"{p.path or p.dataset}: {Path(day.file).name}: {several_files(fmt)}")
        try:
            check_tables(list(p.tables), fmt)
        except ObookError as e:
            raise PipelineError(f"{p.path or p.dataset}: [convert] tables: {e} ({Path(day.file).name} "
                                f"is of format {fmt})") from None
        return


def _check_source_dir(p: Pipeline) -> None:
    if not p.source_dir.is_dir():
        why = "is not a directory" if p.source_dir.exists() else "does not exist"
        raise PipelineError(f"{p.source_dir}: the pipeline's source directory {why}")


def _own_file(p: Pipeline, f: Path) -> bool:
    """Whether ``f`` is the pipeline's definition or a file of its dataset (its manifest,
    lock, partitions, temp files): never a day, when a glob reaches them."""
    if p.path is not None and f.resolve() == Path(p.path).resolve():
        return True
    try:
        first = f.relative_to(p.dataset).parts[0]
    except (ValueError, IndexError):
        return False
    return (first in (manifest.MANIFEST, manifest.LOCK, TMP) or first.startswith("table=")
            or (first.startswith(f".{manifest.MANIFEST}.") and first.endswith(".tmp")))


def _clear_tmp(dataset: Path) -> None:
    """Remove the day folders :func:`convert_day` leaves in ``DATASET/.tmp`` (a run that died,
    Ctrl-C), and the folder when nothing else is in it: a ``.tmp`` of a folder that was
    there before the dataset keeps what is not obook's."""
    try:
        entries = list((dataset / TMP).iterdir())
    except OSError:
        return
    for entry in entries:
        if _TMP_DAY.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
    try:
        (dataset / TMP).rmdir()
    except OSError:
        pass


#: the name of a day's temp folder (``<date>.<pid>.<token>``, see :func:`convert_day`)
_TMP_DAY = re.compile(r"\d{4}-\d{2}-\d{2}\.\d+\.[0-9a-f]{8}")


def empty_file(path) -> str:
    """``"empty file"`` when a day file holds no bytes, also once decompressed (a gzip or
    zstd file, or a zip of one file, of nothing); else ``""`` (a damaged file too: its
    conversion says what is wrong)."""
    if os.stat(path).st_size == 0:
        return "empty file"
    return "empty file once decompressed" if empty_once_decompressed(path) else ""


def _empty_or(path) -> str:
    """:func:`empty_file`'s reason, ``""`` too when the file cannot be read to tell."""
    try:
        return empty_file(path)
    except OSError:
        return ""


def _previous(rec: dict, size: int, sha: str, options: dict) -> dict:
    """What the partitions of a day not done are from: its manifest record (``changed``:
    ``source`` when its file is another now, ``options`` when the options are, else None)."""
    changed = ("source" if (rec["size"], rec["sha256"]) != (size, sha)
               else "options" if rec.get("options") != options else None)
    return {"source": rec.get("source"), "size": rec["size"], "sha256": rec["sha256"],
            "completed_at": rec.get("completed_at"), "changed": changed}


def previous_note(previous: dict) -> str:
    """One line on the partitions a day not done still has in the dataset."""
    when = f", converted {previous['completed_at']}" if previous.get("completed_at") else ""
    source = f"{previous['source']}, {previous['size']} bytes, sha256 {previous['sha256'][:12]}"
    if previous.get("changed") == "source":
        return f"the dataset keeps this day's partitions from its previous source ({source}{when})"
    if previous.get("changed") == "options":
        return f"the dataset keeps this day's partitions converted with the previous options ({source}{when})"
    return f"the dataset keeps this day's partitions from an earlier conversion ({source}{when})"


def dropped_table_partitions(p: Pipeline) -> list[str]:
    """The partition folders (``table=<table>/date=<date>``, relative to the dataset) of
    tables the pipeline does not have (any more)."""
    out = []
    for table_dir in sorted(p.dataset.glob("table=*")):
        if table_dir.is_dir() and table_dir.name[len("table="):] not in p.tables:
            out += [f"{table_dir.name}/{d.name}" for d in sorted(table_dir.glob("date=*")) if d.is_dir()]
    return out


def _warn_dropped(p: Pipeline, folders: list[str], shown: int = 10) -> None:
    """One warning a table: its partition folders still in the dataset (the first ``shown``)."""
    by_table: dict[str, list[str]] = {}
    for folder in folders:
        table, date = folder.split("/", 1)
        by_table.setdefault(table, []).append(date)
    for table, dates in by_table.items():
        more = f", and {len(dates) - shown} more" if len(dates) > shown else ""
        log.warning("%s: %d partition(s) of a table not in the pipeline's tables stay in the dataset "
                    "(queries see them): %s%s; remove the folder to drop them", p.dataset / table,
                    len(dates), ", ".join(dates[:shown]), more)


def mixed_columns(dataset: Path) -> dict:
    """{table: entries} of the tables whose partitions have other columns (a day converted
    with other ``levels`` whose file is gone since): an entry a set of partitions, with the
    columns of the others it lacks (``lacks``; queries read NULL there) and its columns whose
    type another partition's differs from (``types``; queries of the table fail)."""
    if not Path(dataset).is_dir():
        return {}
    out = {}
    for table in dataset_tables(dataset):
        found = layouts(dataset, table)
        if len(found) > 1:
            out[table] = differences(found)[1]
    return out


def _record_columns(p: Pipeline, doc: dict) -> bool:
    """Record the columns of the days' table files the manifest has none of (converted by an
    earlier obook), read from their footers once, so the readers need not; True when ``doc``
    changed."""
    changed = False
    for date, rec in doc["days"].items():
        if "layouts" in rec:
            continue
        rec["layouts"] = {}
        for table in rec.get("tables") if isinstance(rec.get("tables"), dict) else ():
            try:
                rec["layouts"][table] = file_layout(partition_path(p.dataset, table, date))
            except (OSError, ValueError):       # (gone, or no parquet: the readers read it as it is)
                continue
        changed = True
    return changed


def _warn_mixed(p: Pipeline, mixed: dict) -> None:
    for table, entries in mixed.items():
        log.warning("%s", describe(p.dataset, table, entries))


def status(p: Pipeline) -> dict:
    """What is done, pending, failed (and which files are not days), as a JSON-able dict;
    ``dropped_table_partitions``: the partition folders of tables the pipeline no longer has;
    ``mixed_columns``: the tables whose partitions have other columns (:func:`mixed_columns`)."""
    doc = manifest.read(p.dataset)
    manifest.claim(p, doc)      # (another pipeline's dataset: an error; nothing written)
    days = plan(p, doc)
    counts = {s: sum(d.state == s for d in days) for s in ("done", "pending", "failed", "invalid")}
    return {"pipeline": str(Path(p.path).resolve()) if p.path else None, "dataset": str(p.dataset),
            "executor": p.executor, "counts": counts, "days": [asdict(d) for d in days],
            "dropped_table_partitions": dropped_table_partitions(p), "mixed_columns": mixed_columns(p.dataset)}


# --------------------------------------------------------------------------- one day


def convert_day(spec: dict) -> dict:
    """Convert one day into the dataset (the task both executors run). Returns what the
    manifest records (and ``removed_tables``: the tables not in ``spec["tables"]`` whose
    partition of the day it removed, when there were some); raises :class:`DayFailed` (with
    the reason as text) on failure, :class:`DayFeedFailed` when the file is at fault (a bad
    record, an empty file)."""
    dataset, date = Path(spec["dataset"]), spec["date"]
    workers = spec.get("workers")
    if multiprocessing.current_process().daemon and workers != 1:
        # a daemonic process (a Dask nanny's worker) may not start child processes
        workers = 1
    tmp = dataset / TMP / f"{date}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    removed = []
    try:
        before = _identity(spec["file"])
        empty = empty_file(spec["file"])
        if empty:           # (planned as invalid; a file emptied since is no day either)
            raise DayFeedFailed(f"{Path(spec['file']).name}: {empty}")
        try:
            if spec.get("format") is None:
                feed_format(spec["file"])
        except FormatError as e:    # no format knows its bytes: another attempt gives the same
            raise DayFeedFailed(_naming(spec["file"], e.hinted("set format in the pipeline's [convert]"))) from None
        except ObookError as e:
            if e.__cause__ is None:     # (a read that failed is chained to its OSError: tried again)
                raise DayFeedFailed(_naming(spec["file"], e)) from None
            raise
        result = convert(spec["file"], tmp, tables=spec["tables"], workers=workers, date=date,
                         on_error=spec["on_error"], levels=spec.get("levels", 10),
                         tickers=spec.get("tickers"), unknown_tickers="warn", format=spec.get("format"))
        if _identity(spec["file"]) != before:   # its tables and its sha256 may be of two files
            raise DayFailed(f"{Path(spec['file']).name}: the file changed while it was converted; "
                            "nothing of it was recorded")
        dests = {table: partition_path(dataset, table, date) for table in spec["tables"]}
        for dest in dests.values():     # every place first: a table that cannot go moves none
            dest.parent.mkdir(parents=True, exist_ok=True)
            if dest.is_dir():
                raise OSError(f"{dest} is a directory")
        columns = {table: file_layout(tmp / f"{table}.parquet") for table in dests}   # (read by the readers)
        _move_all({tmp / f"{table}.parquet": dest for table, dest in dests.items()}, tmp, dataset)
        for table in set(TABLES) - set(spec["tables"]):   # tables the pipeline no longer has
            stale = partition_path(dataset, table, date)
            if stale.exists():
                stale.unlink()
                _remove_empty(stale.parent, dataset)
                removed.append(table)
    except DayFailed:
        raise
    except FeedError as e:
        raise DayFeedFailed(_naming(spec["file"], e)) from None
    except Exception as e:  # noqa: BLE001 - reported per day, the run goes on
        # (a write that failed names the day's temporary folder, gone once this returns)
        raise DayFailed(_naming(spec["file"], e).replace(str(tmp), str(dataset))) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"source": result["source"]["name"], "path": str(spec["file"]), "size": result["source"]["size"],
            "sha256": result["source"]["sha256"], "options": spec["options"], "tables": result["rows"],
            "stats": result["stats"], "identity": list(before), "layouts": columns,
            **({"removed_tables": sorted(removed)} if removed else {})}


def _move_all(moves: dict, tmp: Path, dataset: Path) -> None:
    """Move each new file onto its partition; when one cannot go, put back the partitions
    moved before it (a day's tables stay of one conversion: the last good one)."""
    done = []       # (dest, its previous file kept in tmp, or None)
    try:
        for i, (new, dest) in enumerate(moves.items()):
            keep = tmp / f"previous-{i}.parquet"
            try:
                os.link(dest, keep)
            except FileNotFoundError:
                keep = None
            except OSError:         # a filesystem without hard links
                if dest.exists():
                    shutil.copyfile(dest, keep)
                else:
                    keep = None
            os.replace(new, dest)
            done.append((dest, keep))
    except OSError:
        for dest, keep in reversed(done):
            try:
                if keep is None:
                    dest.unlink()
                    _remove_empty(dest.parent, dataset)
                else:
                    os.replace(keep, dest)
            except OSError as e:
                log.warning("%s: cannot put the previous partition back: %s", dest, e.strerror or e)
        raise


def _identity(file) -> tuple:
    """What tells a file replaced (another inode) or rewritten (size, modification and change
    times) since: a day's tables are read in several passes, each opening the file."""
    st = os.stat(file)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _naming(file, e: Exception) -> str:
    """A day's failure, its file named once (a feed error names it already); an OSError as
    the place and the reason (``.../date=D: Not a directory``, not ``[Errno 20] ...``)."""
    if isinstance(e, OSError) and e.strerror:
        text = f"{e.filename}: {e.strerror}" if e.filename else e.strerror
    else:
        text = str(e)
    return text if str(file) in text else f"{Path(file).name}: {text}"


def _remove_empty(directory: Path, dataset: Path) -> None:
    """Remove ``directory`` and its parents up to ``dataset`` while they are empty."""
    while directory != dataset:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def convert_day_once_on_feed_error(spec: dict) -> dict:
    """:func:`convert_day` for Dask, whose ``retries`` apply to any exception: a feed error
    comes back as ``{"feed_error": reason}`` instead, so it is not tried again."""
    try:
        return convert_day(spec)
    except DayFeedFailed as e:
        return {"feed_error": str(e)}


def _spec(p: Pipeline, day: Day) -> dict:
    return {"file": day.file, "date": day.date, "dataset": str(p.dataset), "tables": list(p.tables),
            "workers": p.workers, "on_error": p.on_error, "options": p.options(), "levels": p.levels,
            "tickers": list(p.tickers) if p.tickers else None, "format": p.format}


# --------------------------------------------------------------------------- executors


def _run_local(p: Pipeline, todo: list[Day], done: Callable, failed: Callable, say: Callable) -> None:
    if p.days_at_once > 1 and len(todo) > 1:
        return _run_local_processes(p, todo, done, failed, say)
    for day in todo:
        for attempt in range(1, p.retries + 2):
            say(f"{day.date}: converting {Path(day.file).name}"
                + (f" (attempt {attempt} of {p.retries + 1})" if attempt > 1 else ""))
            try:
                rec = convert_day(_spec(p, day))
            except DayFeedFailed as e:    # the file's fault: another attempt gives the same
                failed(day, str(e), attempt)
                break
            except DayFailed as e:
                log.info("%s: attempt %d failed: %s", day.date, attempt, e)
                error = str(e)
                continue
            done(day, rec)
            break
        else:
            failed(day, error, p.retries + 1)


def _run_local_processes(p: Pipeline, todo: list[Day], done: Callable, failed: Callable, say: Callable) -> None:
    """``days_at_once`` days at a time, each in its own process (forkserver: no fork of a
    process that may hold threads); the manifest is written here, by the parent, only."""
    from concurrent.futures import ProcessPoolExecutor
    from logging.handlers import QueueListener

    queue = [(day, 1) for day in todo]
    ctx = multiprocessing.get_context("forkserver")
    records = ctx.Queue()           # the days' log records, handled here as this process's own
    listener = QueueListener(records, _Forward())
    listener.start()
    try:
        while queue:                    # a new pool when a day's process died (the pool is broken)
            with ProcessPoolExecutor(min(p.days_at_once, len(queue)), mp_context=ctx, initializer=_day_process,
                                     initargs=(records, os.getpid())) as pool:
                try:
                    _run_pool(p, pool, queue, done, failed, say)
                except BaseException:   # Ctrl-C, a stop: the days' processes go now, not at exit
                    _stop_pool(pool)
                    raise
    finally:
        listener.stop()
        records.close()


class _Forward(logging.Handler):
    """A day process's log record, handled by this process's logger of that name (its
    handlers, as when the day runs here)."""

    def emit(self, record: logging.LogRecord) -> None:
        logging.getLogger(record.name).handle(record)


def _day_process(records, run_pid: int) -> None:
    """A day's process sends its obook log records to the parent and leaves Ctrl-C to it,
    which stops it (no traceback of its own). It ends with the run (its parent is the
    forkserver): a run killed outright would leave it converting, moving partitions into
    the dataset without the run's lock, then waiting for work forever."""
    import signal
    from logging.handlers import QueueHandler

    from obook.interrupts import end_with

    end_with(run_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    log = logging.getLogger("obook")
    log.addHandler(QueueHandler(records))
    log.propagate = False


def _stop_pool(pool) -> None:
    """Cancel what has not started and end the pool's processes (an idle one would wait for
    work forever, and the interpreter's exit would wait for it)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)


#: a day whose process died (SIGKILL, the out-of-memory killer): the pool ends the other days' too
_DIED = ("a day's process ended abruptly (killed: by the out-of-memory killer, or by hand), this day's or "
         "one converted beside it, which stops them all")


def _run_pool(p: Pipeline, pool, queue: list, done: Callable, failed: Callable, say: Callable) -> None:
    """The days of ``queue`` ((day, attempt)) on the pool, ``days_at_once`` in flight, until
    none is left or a day's process died: the pool is broken then, the days it had are
    back in ``queue`` for another attempt (or failed, when they have none left)."""
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    running: dict = {}
    broken = False
    while (queue and not broken) or running:
        while queue and not broken and len(running) < p.days_at_once:
            day, attempt = queue.pop(0)
            say(f"{day.date}: converting {Path(day.file).name}"
                + (f" (attempt {attempt} of {p.retries + 1})" if attempt > 1 else ""))
            running[pool.submit(convert_day, _spec(p, day))] = (day, attempt)
        finished, _ = wait(running, return_when=FIRST_COMPLETED)
        for fut in finished:
            day, attempt = running.pop(fut)
            try:
                rec = fut.result()
            except DayFeedFailed as e:    # the file's fault: another attempt gives the same
                failed(day, str(e), attempt)
                continue
            except Exception as e:  # noqa: BLE001 - DayFailed, or a dead process
                died = isinstance(e, BrokenProcessPool)
                broken = broken or died
                if attempt <= p.retries:
                    (log.warning if died else log.info)("%s: attempt %d failed: %s", day.date, attempt,
                                                        _DIED if died else e)
                    queue.append((day, attempt + 1))
                else:
                    failed(day, _DIED if died else str(e), attempt)
                continue
            done(day, rec)


def _run_dask(p: Pipeline, todo: list[Day], done: Callable, failed: Callable, say: Callable) -> None:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise PipelineError("executor dask:// needs dask[distributed]: pip install 'obook[dask]'") from None
    try:
        client = Client(p.dask_address, timeout="20s")
    except (OSError, TimeoutError) as e:
        raise PipelineError(f"cannot reach the Dask scheduler at {p.dask_address}: {e}") from None
    try:
        queue = list(todo)
        run_token = uuid.uuid4().hex[:8]
        by_key = {}

        def submit():
            day = queue.pop(0)
            fut = client.submit(convert_day_once_on_feed_error, _spec(p, day),
                                key=f"obook-day-{day.date}-{run_token}",
                                retries=p.retries, pure=False, resources=p.dask_resources or None)
            by_key[fut.key] = day
            say(f"{day.date}: submitted {Path(day.file).name}")
            return fut

        pending = as_completed([submit() for _ in range(min(p.days_at_once, len(queue)))])
        for fut in pending:
            day = by_key.pop(fut.key)
            try:
                rec = fut.result()
            except DayFailed as e:
                failed(day, str(e), p.retries + 1)
            except Exception as e:  # noqa: BLE001 - e.g. KilledWorker after too many worker deaths
                failed(day, f"{type(e).__name__}: {e}", p.retries + 1)
            else:
                if "feed_error" in rec:
                    failed(day, rec["feed_error"], 1)
                else:
                    done(day, rec)
            fut.release()
            if queue:
                pending.add(submit())
    finally:
        client.close()


# --------------------------------------------------------------------------- run


def run(p: Pipeline, progress: Callable[[str], None] | None = None, lock_timeout: float | None = None,
        days_done: Callable[[int, int], None] | None = None) -> dict:
    """Convert every day not done yet; returns a summary (``failed`` non-empty → a day failed).

    The summary's ``previous_partitions`` holds the days that failed or are invalid but
    whose partitions from an earlier conversion stay in the dataset (:attr:`Day.previous`
    and the day's ``file``); ``dropped_table_partitions`` the partition folders of tables
    the pipeline no longer has, left in the dataset; ``mixed_columns`` the tables whose
    partitions have other columns (:func:`mixed_columns`). All are logged as warnings too.

    ``progress`` gets a line of text at every step; ``days_done(finished, total)`` the count
    of days to convert that finished (done or failed) whenever it changes (a progress bar).
    """
    t0 = time.monotonic()

    def tally() -> None:
        if days_done:
            days_done(len(summary["converted"]) + len(summary["failed"]), len(todo))

    def say(msg: str) -> None:
        log.info("%s", msg)
        if progress:
            progress(msg)

    if lock_timeout is not None and not (isinstance(lock_timeout, (int, float)) and not isinstance(lock_timeout, bool)
                                         and lock_timeout >= 0):
        raise PipelineError(f"lock_timeout must be a number of seconds >= 0 (or None: wait), not {lock_timeout!r}")
    _check_source_dir(p)        # before the lock: a wrong directory makes no dataset folder
    with manifest.locked(p.dataset, lock_timeout, on_wait=lambda: say("waiting for another run's lock")):
        _clear_tmp(p.dataset)   # left by a run that died
        doc = manifest.read(p.dataset)
        if (manifest.claim(p, doc) | _record_columns(p, doc)) and (doc["days"] or doc["failed"]):
            manifest.write(p.dataset, doc)      # (a new dataset: with its first day)
        days = plan(p, doc)
        todo = [d for d in days if d.state in ("pending", "failed")]
        if todo:
            _check_tables(p, todo)
        summary = {"dataset": str(p.dataset), "executor": p.executor, "converted": [], "failed": {},
                   "invalid": {d.file: d.reason for d in days if d.state == "invalid"},
                   "unchanged": sum(d.state == "done" for d in days), "previous_partitions": {},
                   "dropped_table_partitions": [], "mixed_columns": {}, "seconds": 0.0}
        say(f"{len(todo)} day(s) to convert, {summary['unchanged']} done already")
        tally()

        def kept(day: Day) -> None:     # a day not converted whose earlier partitions stay
            if day.previous:
                summary["previous_partitions"][day.date] = {**day.previous, "file": day.file}
                log.warning("%s: not converted; %s", day.date, previous_note(day.previous))

        for day in days:
            if day.state == "invalid":
                kept(day)

        def done(day: Day, rec: dict) -> None:
            rec["completed_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
            removed = rec.pop("removed_tables", [])
            doc["days"][day.date] = rec
            doc["failed"].pop(day.date, None)
            manifest.write(p.dataset, doc)
            summary["converted"].append(day.date)
            say(f"{day.date}: done ({', '.join(f'{t} {n}' for t, n in rec['tables'].items())} rows)"
                + (f"; removed its partitions of {', '.join(removed)} (not in the pipeline's tables)"
                   if removed else ""))
            tally()

        def failed(day: Day, error: str, attempts: int) -> None:
            doc["failed"][day.date] = {"source": Path(day.file).name, "size": day.size, "sha256": day.sha256,
                                       "error": error, "attempts": attempts,
                                       "at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
            manifest.write(p.dataset, doc)
            summary["failed"][day.date] = error
            say(f"{day.date}: FAILED after {attempts} attempt(s): {error}")
            kept(day)
            tally()

        try:
            if todo:
                (_run_dask if p.dask_address else _run_local)(p, todo, done, failed, say)
        finally:                        # Ctrl-C too: no temp folder stays behind
            _clear_tmp(p.dataset)
        summary["dropped_table_partitions"] = dropped_table_partitions(p)
        _warn_dropped(p, summary["dropped_table_partitions"])
        summary["mixed_columns"] = mixed_columns(p.dataset)
        _warn_mixed(p, summary["mixed_columns"])
    summary["converted"].sort()
    summary["seconds"] = round(time.monotonic() - t0, 3)
    return summary
