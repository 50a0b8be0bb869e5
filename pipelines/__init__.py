"""Scheduled ETL (installed as ``obook.pipelines``): day files → a Hive-partitioned dataset.

A pipeline is a small TOML file (see ``example.toml`` beside this module): where the day
files are (a directory and a glob), which tables and options, where the dataset goes, how
many days at once, and the executor (``local`` or ``dask://host:port``)::

    obook pipeline run nightly.toml          # convert the days not done yet (or changed)
    obook pipeline status nightly.toml --json

Each day goes through :func:`obook.to_parquet.convert` into
``DATASET/table=<table>/date=<YYYY-MM-DD>/part-0.parquet``; ``DATASET/_manifest.json``
records the completed days (file size + sha256 + options, each table file's columns),
``DATASET/.lock`` keeps two runs apart. Query the dataset with :func:`obook.dataset.attach`
(DuckDB views) or :func:`obook.dataset.scan_dataset` (polars).
"""

from __future__ import annotations

from pathlib import Path

from .config import Pipeline, PipelineError, load
from .run import DayFailed, convert_day, partition_path, plan, run, status

EXAMPLE = Path(__file__).with_name("example.toml")

__all__ = ["Pipeline", "PipelineError", "DayFailed", "load", "run", "status", "plan", "convert_day",
           "partition_path", "EXAMPLE"]
