"""The dataset's manifest (which days are done, from which file) and its lock.

``DATASET/_manifest.json`` is replaced atomically (temp file, fsync, ``os.replace``), so a
reader sees the old or the new manifest, never half of one. A day counts as done only when
the manifest says so: a run that dies after moving a day's files into place but before
recording it redoes that day next time.

The manifest names the pipeline definition whose dataset it is (``pipeline``): another
definition's run is refused (:func:`claim`), while that one can run.

``DATASET/.lock`` is held (``fcntl.flock``, exclusive) for the whole of a run, so two runs on
one dataset take turns: the second one finds the first one's days done.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import time
from contextlib import contextmanager
from pathlib import Path

from obook.dataset import MANIFEST
from obook.tempfiles import remove_quietly, temp_path

from .config import PipelineError

LOCK = ".lock"
VERSION = 1

log = logging.getLogger("obook")


def read(dataset: Path) -> dict:
    path = Path(dataset) / MANIFEST
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return {"version": VERSION, "days": {}, "failed": {}}
    except OSError as e:
        raise PipelineError(f"{path}: cannot read the manifest: {e.strerror or e}") from None
    except ValueError as e:     # (json's errors, and a UnicodeDecodeError)
        why = "not UTF-8 text" if isinstance(e, UnicodeDecodeError) else e
        raise PipelineError(f"{path}: cannot read the manifest: not JSON ({why}); remove the file to convert "
                            "every day again") from None
    if not isinstance(doc, dict):
        raise PipelineError(f"{path}: cannot read the manifest: not a JSON object")
    doc.setdefault("days", {})
    doc.setdefault("failed", {})
    for key in ("days", "failed"):
        if not isinstance(doc[key], dict) or not all(isinstance(v, dict) for v in doc[key].values()):
            raise PipelineError(f"{path}: cannot read the manifest: {key!r} is not an object of day records "
                                "(remove the file to convert every day again)")
        for date, rec in doc[key].items():
            wrong = [k for k, kinds in _RECORD[key].items() if not isinstance(rec.get(k), kinds)
                     or isinstance(rec.get(k), bool)]
            if wrong:
                raise PipelineError(f"{path}: cannot read the manifest: {key}[{date!r}] has no valid "
                                    f"{', '.join(wrong)} (remove the file to convert every day again)")
    return doc


#: what the run reads of a day record, and its types (a record edited by hand: an error, not a crash)
_RECORD = {"days": {"source": str, "size": int, "sha256": str},
           "failed": {"size": int, "sha256": str, "error": str}}


def claim(p, doc: dict) -> bool:
    """Pipeline ``p`` (its definition's path: ``p.path``; None, a pipeline made in code: not
    checked) owns its dataset, whose manifest is ``doc``: a PipelineError when the manifest's
    ``pipeline`` is another definition that still has this dataset and reads other day files
    (another source directory or glob): two pipelines on one dataset would replace each
    other's days, each run, and mix their formats. Otherwise ``p``'s definition becomes the
    owner (one moved, renamed, copied, or the old one pointed elsewhere since; or the old one
    can run no more, its definition broken or its source directory gone: a warning names
    it). True when ``doc`` changed."""
    if p.path is None:
        return False
    me, owner = str(Path(p.path).resolve()), doc.get("pipeline")
    if owner == me:
        return False
    other = _other(owner, p)
    if other is not None:
        raise PipelineError(f"{p.path}: {p.dataset} is the dataset of another pipeline, {owner} (its {MANIFEST} "
                            f"says), which reads {other.source_dir / other.glob}: two pipelines on one dataset "
                            "replace each other's days; give this one its own [dataset] path (or that one "
                            "another, or remove it if it is retired)")
    doc["pipeline"] = me
    return True


def _other(owner, p):
    """The owner's definition, loaded, when it is another pipeline on ``p``'s dataset (its
    file still there, its dataset this one, its day files others); else None. An owner that
    can run no more (its definition broken, its source directory gone) is None too, with a
    warning naming it: ``p`` takes the dataset over."""
    from .config import load

    if not isinstance(owner, str) or not os.path.isfile(owner) or _same_file(owner, p.path):
        return None
    try:
        other = load(owner)
    except PipelineError as e:
        _taken_over(p, owner, f"its definition no longer loads ({e})")
        return None
    if other.dataset != p.dataset or (other.source_dir, other.glob) == (p.source_dir, p.glob):
        return None
    if not other.source_dir.is_dir():
        why = "is not a directory" if other.source_dir.exists() else "does not exist"
        _taken_over(p, owner, f"its source directory {other.source_dir} {why}")
        return None
    return other


def _taken_over(p, owner: str, why: str) -> None:
    log.warning("%s: the dataset of the pipeline %s (its %s says), which can run no more: %s; %s takes "
                "the dataset over", p.dataset, owner, MANIFEST, why, p.path)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def write(dataset: Path, doc: dict) -> None:
    path = Path(dataset) / MANIFEST
    tmp = temp_path(path)       # (those of runs killed outright go first)
    try:
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:   # a full disk: the old manifest stays, the temp file goes
        remove_quietly(tmp)
        raise PipelineError(f"{path}: write failed: {e.strerror or e}") from e
    except BaseException:   # Ctrl-C, a stop: the same
        remove_quietly(tmp)
        raise
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def locked(dataset: Path, timeout: float | None = None, on_wait=None):
    """Hold the dataset's lock; wait for another run (at most ``timeout`` seconds)."""
    dataset = Path(dataset)
    try:
        dataset.mkdir(parents=True, exist_ok=True)
        fd = os.open(dataset / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise PipelineError(f"{dataset}: cannot hold the dataset's lock ({LOCK}): {e.strerror or e}") from e
    try:
        if not _take(fd, dataset):
            if on_wait:
                on_wait()
            deadline = None if timeout is None else time.monotonic() + timeout
            while not _take(fd, dataset):
                if deadline is not None and time.monotonic() > deadline:
                    raise PipelineError(f"{dataset}: another pipeline run holds {LOCK}") from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)   # closing the descriptor releases the lock


def _take(fd: int, dataset: Path) -> bool:
    """Take the lock of ``fd`` if it is free: True, else False (another run holds it); a
    filesystem without file locks (an NFS mount without its lock service) is a PipelineError."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as e:
        raise PipelineError(f"{dataset}: cannot hold the dataset's lock ({LOCK}): {e.strerror or e} (its "
                            "filesystem gives no file locks: put the dataset on one that does)") from e
    return True
