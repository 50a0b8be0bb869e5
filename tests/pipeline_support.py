"""Shared by test_pipeline.py and test_pipeline_dask.py: three small generated days."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from obook.gen.itch import write_itch

DAYS = {"12302019.NASDAQ_ITCH50": "2019-12-30", "12312019.NASDAQ_ITCH50": "2019-12-31",
        "01022020.NASDAQ_ITCH50": "2020-01-02"}
TABLES = ["bbo", "symbols", "system_events", "trading_actions"]
MESSAGES = 3000


def write_days(directory: Path, seed: int = 0) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    for i, (name, date) in enumerate(DAYS.items()):
        write_itch(directory / name, MESSAGES, 10, seed=seed + i)
        out[date] = directory / name
    return out


def write_pipeline(path: Path, days: Path, dataset: Path, executor: str = "local", retries: int = 1,
                   workers: int = 1, days_at_once: int = 2) -> Path:
    path.write_text(f"""
[source]
directory = "{days}"
glob = "*.NASDAQ_ITCH50*"

[convert]
tables = {json.dumps(TABLES)}
workers = {workers}

[dataset]
path = "{dataset}"

[run]
executor = "{executor}"
days_at_once = {days_at_once}
retries = {retries}
""")
    return path


def obook_cli(*args, timeout=120, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "obook", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def dataset_tables(dataset: Path) -> dict:
    """{(table, date): (pyarrow.Table, footer metadata)} of every partition file."""
    out = {}
    for f in sorted(dataset.glob("table=*/date=*/*.parquet")):
        table, date = f.parent.parent.name[6:], f.parent.name[5:]
        assert f.name == "part-0.parquet"
        out[(table, date)] = (pq.read_table(f), pq.read_metadata(f).metadata[b"obook"])
    return out
