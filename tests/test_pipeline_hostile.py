"""Hostile pipeline definitions: a binary TOML, a dataset path that is a file or a place no
lock file can be made: one ``error:`` line, no traceback."""

from __future__ import annotations

import pytest

from cli_support import cli_error

TOML = """[source]
directory = "."
glob = "*.NASDAQ_ITCH50*"
[convert]
tables = ["bbo"]
[dataset]
path = "{dataset}"
"""


def test_cli_pipeline_binary_toml_one_line_error(tmp_path, capsys):
    p = tmp_path / "p.toml"
    p.write_bytes(bytes(range(256)) * 4)
    for command in ("run", "status"):
        assert "not valid TOML: not UTF-8 text" in cli_error(capsys, "pipeline", command, p)


def test_cli_pipeline_dataset_path_is_a_file_one_line_error(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="afile"))
    for command in ("run", "status"):
        assert "is a file, not a directory" in cli_error(capsys, "pipeline", command, p)


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self"), reason="no /proc")
def test_cli_pipeline_dataset_in_proc_one_line_error(tmp_path, capsys):
    p = tmp_path / "p.toml"
    p.write_text(TOML.format(dataset="/proc/self"))
    assert "cannot hold the dataset's lock" in cli_error(capsys, "pipeline", "run", p)
