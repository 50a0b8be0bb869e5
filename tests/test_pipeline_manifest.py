"""The dataset's manifest (pipelines/manifest.py): its write interrupted, or left half done by a
run killed outright."""

from __future__ import annotations

import json

import pytest


def test_manifest_write_interrupted_leaves_no_temp_file_old_manifest_whole(tmp_path, monkeypatch):
    from obook.pipelines import manifest

    manifest.write(tmp_path, {"version": 1, "days": {}, "failed": {}})

    def interrupted(*args, **kwargs):       # Ctrl-C as the manifest is being written
        raise KeyboardInterrupt

    monkeypatch.setattr(json, "dump", interrupted)
    with pytest.raises(KeyboardInterrupt):
        manifest.write(tmp_path, {"version": 1, "days": {"2019-12-30": {}}, "failed": {}})
    assert sorted(x.name for x in tmp_path.iterdir()) == [manifest.MANIFEST]
    assert manifest.read(tmp_path)["days"] == {}


def test_manifest_write_removes_the_temp_file_of_a_run_killed_outright(tmp_path):
    from obook.pipelines import manifest

    dead = tmp_path / f".{manifest.MANIFEST}.99999999.tmp"      # (no such process)
    dead.write_text('{"days": ')
    manifest.write(tmp_path, {"version": 1, "days": {}, "failed": {}})
    assert sorted(x.name for x in tmp_path.iterdir()) == [manifest.MANIFEST]


def test_manifest_lock_on_a_filesystem_without_locks_pipeline_error_naming_the_dataset(tmp_path, monkeypatch):
    import errno
    import fcntl

    from obook.pipelines import manifest
    from obook.pipelines.config import PipelineError

    def no_locks(fd, operation):            # an NFS mount without its lock service
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(PipelineError, match=r"cannot hold the dataset's lock \(\.lock\): No locks available"):
        with manifest.locked(tmp_path / "ds"):
            pass


@pytest.mark.parametrize("make, says", [
    (lambda m: m.mkdir(), "Is a directory"),
    (lambda m: m.write_text("garbage\n"), "not JSON (Expecting value: line 1 column 1 (char 0)); remove the file "
                                          "to convert every day again"),
    (lambda m: m.write_bytes(b"\xff\x00"), "not JSON (not UTF-8 text); remove the file to convert every day again"),
])
def test_manifest_read_folder_or_not_json_one_line_error_naming_it_once(tmp_path, make, says):
    from obook.pipelines import manifest
    from obook.pipelines.config import PipelineError

    path = tmp_path / manifest.MANIFEST
    make(path)
    with pytest.raises(PipelineError) as e:
        manifest.read(tmp_path)
    assert str(e.value) == f"{path}: cannot read the manifest: {says}"
