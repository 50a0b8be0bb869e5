"""Scheduled ETL jobs (installed as ``obook.pipelines``): day files to partitioned Parquet.

Not built yet: see the project's issue 7 (pipeline definitions in TOML, ``obook pipeline
run``, local and Dask executors).
"""
