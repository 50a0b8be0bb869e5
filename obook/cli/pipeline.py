"""``obook pipeline``: run a pipeline definition (TOML) and show what it has done."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(help="Turn day files into a Hive-partitioned Parquet dataset, as a pipeline defined "
                       "in a TOML file (`obook pipeline init DIRECTORY` writes one for a folder of day "
                       "files).", no_args_is_help=True,
                  rich_markup_mode=None)

_PIPELINE = typer.Argument(..., exists=True, dir_okay=False, help="Pipeline definition (TOML).")


@app.command("run")
def run(
    pipeline: Path = _PIPELINE,
    json_out: bool = typer.Option(False, "--json", help="Print a JSON summary on stdout."),
    lock_timeout: Optional[float] = typer.Option(
        None, "--lock-timeout", min=0, metavar="SECONDS",
        help="Give up when another run holds the dataset's lock this long (default: wait)."),
) -> None:
    """Convert every day that is not done yet (new, changed since: size + sha256, or failed).

    Progress goes to stderr. Exit code 0 when every day is done, 1 when a day failed (after its retries) or a file is not a day (no date in its name, an empty file, a file that cannot be read, a folder or a FIFO the glob matches); the other days complete either way. A day that fails keeps the partitions of its last good conversion, and the run says so; partitions of tables no longer in the pipeline that stay in the dataset are named in a warning.
    """
    from ..pipelines import load, run as _run
    from ..pipelines.run import previous_note
    from .progress import days_progress

    p = load(pipeline)
    with days_progress() as (say, days_done):
        summary = _run(p, progress=say, lock_timeout=lock_timeout, days_done=days_done)
    if json_out:
        typer.echo(json.dumps(summary, indent=1))
    notes = {}
    for date, previous in summary["previous_partitions"].items():
        notes[date] = notes[previous["file"]] = previous_note(previous)
    typer.echo(f"{len(summary['converted'])} converted, {summary['unchanged']} unchanged, "
               f"{len(summary['failed'])} failed, {len(summary['invalid'])} invalid "
               f"({summary['seconds']:.1f} s)", err=True)
    for state in ("failed", "invalid"):
        for what, error in sorted(summary[state].items()):
            typer.echo(f"{state}: {what}: {error}" + (f"; {notes[what]}" if what in notes else ""), err=True)
    if summary["failed"] or summary["invalid"]:
        raise typer.Exit(1)


@app.command("init")
def init(
    directory: Path = typer.Argument(..., file_okay=False, help="Directory of the day files; the TOML is written there."),
    name: str = typer.Option("obook-pipeline.toml", "--name", help="File name of the pipeline definition."),
) -> None:
    """Write a starter pipeline definition (TOML) for the day files in DIRECTORY.

    Its glob and tables fit the format most of the files are (a Nasdaq ITCH starter when there is no feed file yet); files of another format are named in a warning.
    """
    import os

    from ..errors import OutputError
    from ..pipelines.config import PipelineError
    from ..pipelines.starter import starter, starter_text

    if (name in ("", ".", "..") or "/" in name or (os.altsep and os.altsep in name)
            or any(ord(c) < 32 for c in name)):
        raise PipelineError(f"--name {name!r}: give a file name, without a directory (the definition "
                            "is written in DIRECTORY)")
    target = directory / name
    fitted = starter(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with open(target, "x") as f:     # never over an existing file, nor through a symlink
            f.write(starter_text(fitted, target))
    except FileExistsError:
        raise OutputError(f"{target}: exists already; not overwritten") from None
    except OSError as e:
        raise OutputError(f"{target}: cannot write: {e.strerror or e}") from None
    typer.echo(f"wrote {target}", err=True)
    for fmt, files in sorted(fitted.others.items()):
        typer.echo(f"warning: {directory}: {', '.join(files)}: {fmt} feed(s), left out of {target} "
                   f"({fitted.format} days); a dataset holds one format's tables: give them their own pipeline",
                   err=True)


@app.command("status")
def status(
    pipeline: Path = _PIPELINE,
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Show each day's state: done, pending, failed or invalid.

    pending: new, changed (size or sha256), converted with other options, or its partitions missing from the dataset or damaged (not whole Parquet files); failed: the last run's attempts all failed (the error is shown); invalid: a file that is not a day (no date in its name, an empty file, a file that cannot be read, a folder or a FIFO the glob matches). A day not done that was converted before says which file its partitions in the dataset are from; partitions of tables no longer in the pipeline are listed, and the partitions of a table that lack columns others have (a day converted with other levels whose file is gone). Hashes the day files not recorded as converted as they are now (inode, size, modification and change times). Exit code 1 when a day failed or a file is not a day.
    """
    from ..dataset import describe
    from ..pipelines import load, status as _status
    from ..pipelines.run import previous_note

    st = _status(load(pipeline))
    bad = st["counts"]["failed"] + st["counts"]["invalid"]
    if json_out:
        typer.echo(json.dumps(st, indent=1))
        if bad:
            raise typer.Exit(1)
        return
    for d in st["days"]:
        why = "; ".join(([d["reason"]] if d["reason"] else [])
                        + ([previous_note(d["previous"])] if d["previous"] else []))
        typer.echo(f"{d['date'] or '-':<10}  {d['state']:<8}  {Path(d['file']).name}" + (f"  ({why})" if why else ""))
    if st["dropped_table_partitions"]:
        typer.echo(f"not in the pipeline's tables, still in the dataset: {', '.join(st['dropped_table_partitions'])}")
    for table, entries in st["mixed_columns"].items():
        typer.echo(describe(st["dataset"], table, entries))
    c = st["counts"]
    typer.echo(f"{c['done']} done, {c['pending']} pending, {c['failed']} failed, {c['invalid']} invalid "
               f"in {st['dataset']}")
    if bad:
        raise typer.Exit(1)
