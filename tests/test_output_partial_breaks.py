"""``-o FILE`` stopped by a bad record (obook.output.write_file): the ``FILE.partial`` trades
are those of a clean replay of the feed cut before that record, whose ``broken`` knows only
the Trade Breaks before it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from cli_support import cli_error, cli_run
import test_to_parquet_partial as convert_tests
from test_to_parquet_partial import _itch_pair, _short_frame, _unknown_order, break_after_delete

itch_day = convert_tests.itch_day      # (the same generated day)


def _read(path, kind: str) -> pa.Table:
    if kind == "parquet":
        return pq.read_table(path)
    if kind == "arrow":
        return ipc.open_file(pa.memory_map(str(path))).read_all()
    return pacsv.read_csv(path)


@pytest.mark.parametrize("kind", ["parquet", "arrow", "csv"])
@pytest.mark.parametrize("damage", [_unknown_order, _short_frame])
def test_write_file_trades_break_after_the_bad_record_partial_not_broken(itch_day, tmp_path, capsys, kind, damage):
    day, k, trade = break_after_delete(itch_day, tmp_path)
    bad, clean = _itch_pair(day, tmp_path, k, damage)
    whole = tmp_path / f"whole.{kind}"
    assert cli_run(capsys, "table", "trades", day, "-w", "2", "-o", whole)[0] == 0
    assert trade in _read(whole, kind).filter(pc.field("broken")).column("seq").to_pylist()   # the break, read whole
    want = tmp_path / f"want.{kind}"
    assert cli_run(capsys, "table", "trades", clean, "-w", "2", "-o", want)[0] == 0
    out = tmp_path / f"t.{kind}"
    err = cli_error(capsys, "table", "trades", bad, "-w", "2", "-o", out)
    assert f"{k}" in err and f"{out}.partial" in err
    got = _read(tmp_path / f"t.{kind}.partial", kind)
    assert got.filter(pc.field("seq") == trade).column("broken").to_pylist() == [False]
    assert got.equals(_read(want, kind))
    if kind == "csv":
        assert (tmp_path / f"t.{kind}.partial").read_bytes() == want.read_bytes()
