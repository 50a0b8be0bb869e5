"""Temporary names beside an output: they fit the file system's name limit whatever the
final name's length, and those of writers that died go with the next write."""

from __future__ import annotations

import os

import obook
from obook.gen.itch import write_itch
from obook.output import write_file
from obook.tempfiles import temp_path

DEAD = 2**22 + 7        # a pid above any pid_max: no process has it


def test_temp_path_final_name_of_255_bytes_is_written(tmp_path):
    day = tmp_path / "day.itch"
    write_itch(day, 1000, 3, seed=1)
    out = tmp_path / ("b" * 251 + ".csv")
    assert write_file(obook.bbo(day, workers=1), out) > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([out.name, "day.itch"])


def test_temp_path_final_name_of_255_bytes_dead_writers_temp_goes(tmp_path, monkeypatch):
    final = tmp_path / ("é" * 125 + ".csv")              # 254 bytes
    monkeypatch.setattr(os, "getpid", lambda: DEAD)
    stale = temp_path(final)
    monkeypatch.undo()
    assert len(os.fsencode(stale.name)) <= 255
    stale.write_bytes(b"half")
    mine = temp_path(final)
    assert mine != stale and not stale.exists()
