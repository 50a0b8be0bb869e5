"""obook._kernels.cache_dirs: where the kernel cache can be written."""

import os
import tempfile

from obook._kernels import cache_dirs


def _temp(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path / f"obook-kernels-{os.getuid()}"


def test_roots_configured_first_then_user_cache_then_private_temp(monkeypatch, tmp_path):
    private = _temp(monkeypatch, tmp_path)
    assert list(cache_dirs.roots("/configured", "/user")) == ["/configured", "/user", str(private)]
    assert list(cache_dirs.roots("", "/user"))[0] is None       # beside the sources


def test_roots_private_temp_made_only_when_reached(monkeypatch, tmp_path):
    private = _temp(monkeypatch, tmp_path)
    assert next(cache_dirs.roots("", "/user")) is None
    assert not private.exists()


def test_private_temp_root_made_private(monkeypatch, tmp_path):
    private = _temp(monkeypatch, tmp_path)
    assert cache_dirs.private_temp_root() == str(private)
    assert private.stat().st_mode & 0o777 == 0o700


def test_private_temp_root_others_may_write_none(monkeypatch, tmp_path, caplog):
    private = _temp(monkeypatch, tmp_path)
    private.mkdir()
    private.chmod(0o777)
    assert cache_dirs.private_temp_root() is None
    assert str(private) in caplog.text


def test_private_temp_root_symlink_none(monkeypatch, tmp_path):
    private = _temp(monkeypatch, tmp_path)
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    private.symlink_to(tmp_path / "elsewhere")
    assert cache_dirs.private_temp_root() is None


def test_private_temp_root_no_temp_dir_none(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "file" / "below"))
    (tmp_path / "file").write_text("")
    assert cache_dirs.private_temp_root() is None


def test_seed_copies_cache_files_without_partial_writes(tmp_path):
    source = tmp_path / "beside"
    source.mkdir()
    (source / "k.nbi").write_bytes(b"index")
    (source / "k.1.nbc").write_bytes(b"code")
    (source / "k.nbi.tmp.0123").write_bytes(b"half")
    target = tmp_path / "user" / "sub" / "kernels-x"
    assert cache_dirs.seed(str(source), str(target)) is True
    assert sorted(p.name for p in target.iterdir()) == ["k.1.nbc", "k.nbi"]
    assert (target / "k.1.nbc").read_bytes() == b"code"
    assert [p.name for p in target.parent.iterdir()] == ["kernels-x"]     # no staging left


def test_seed_target_exists_false_and_untouched(tmp_path):
    source = tmp_path / "beside"
    source.mkdir()
    (source / "k.nbi").write_bytes(b"index")
    target = tmp_path / "kernels-x"
    target.mkdir()
    (target / "own.nbi").write_bytes(b"mine")
    assert cache_dirs.seed(str(source), str(target)) is False
    assert [p.name for p in target.iterdir()] == ["own.nbi"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".seed")] == []
