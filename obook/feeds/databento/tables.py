"""The tables a Databento feed offers besides the replay's: ``mbp1`` and ``mbp10``.

``reader(name, source, workers, on_error, replay)`` runs ONE replay of the feed (the
``replay`` class is handed in: feeds do not import the engine) for its depth (1 or 10
levels) and trades rows, and joins them with the record fields read in step from the feed
(see obook.feeds.databento.mbp).
"""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa

from . import FORMAT

from ..sources import is_stream, iter_batches, source_name, tee
from .framer import DbnFramer
from .mbp import mbp_batches, mbp_schema

LEVELS = {"mbp1": 1, "mbp10": 10}


def reader(name: str, source, workers, on_error: str, replay) -> pa.RecordBatchReader:
    levels = LEVELS[name]
    again = source
    if is_stream(source):       # read twice in step: a tee keeps the bytes between the two readers
        source, again = tee(source)
    # every print (T, F and N): Databento's mbp tables report each
    r = replay(source, workers=workers, format=replace(FORMAT, trade_kinds=None, aggressor_kinds=""),
               on_error=on_error,
               tables=("depth", "trades"), levels=levels)
    records = iter_batches(again, DbnFramer(source_name(again), "skip"))
    return pa.RecordBatchReader.from_batches(mbp_schema(levels),
                                             mbp_batches(r.table_batches(), records, levels,
                                                                         r.path, r.locate_error))
