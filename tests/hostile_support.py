"""Helpers of the hostile-input tests that run the command line in a subprocess: a crash
(a signal), a traceback or a hang fails the test, never the test session."""

from __future__ import annotations

import os
import subprocess
import sys

TIMEOUT = 120


def obook_cli(*args, compiled: bool = False, stdin=None, timeout: float = TIMEOUT,
              env: dict | None = None) -> subprocess.CompletedProcess:
    """``obook ARGS`` in a subprocess (bytes out and err). ``compiled``: the numba kernels
    even for a tiny input (the command line runs tiny inputs on the Python kernels)."""
    e = {k: v for k, v in os.environ.items() if k != "OBOOK_KERNELS"}
    if compiled:
        e["OBOOK_KERNELS"] = "numba"
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "obook", *map(str, args)], stdin=stdin, capture_output=True,
                          timeout=timeout, env=e)


def cli_error(*args, compiled: bool = False, stdin=None, env: dict | None = None) -> str:
    """The one-line ``error: ...`` of a command that must fail cleanly (exit 1, no traceback,
    no signal); returns the line."""
    r = obook_cli(*args, compiled=compiled, stdin=stdin, env=env)
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 1, (r.returncode, err[-2000:])
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines and lines[-1].startswith("error: ") and "Traceback" not in err, err[-2000:]
    return lines[-1]


def peak_rss_mib(*args, stdin=None, timeout: float = TIMEOUT) -> tuple[int, float, str]:
    """(exit code, peak RSS in MiB, stderr) of ``obook ARGS`` run under a small wrapper
    process that reads its child's ``ru_maxrss`` (the largest of the command and its workers)."""
    wrapper = ("import resource, subprocess, sys\n"
               "r = subprocess.run([sys.executable, '-m', 'obook', *sys.argv[1:]], stdout=subprocess.DEVNULL)\n"
               "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    e = {k: v for k, v in os.environ.items() if k != "OBOOK_KERNELS"}
    r = subprocess.run([sys.executable, "-c", wrapper, *map(str, args)], stdin=stdin, capture_output=True,
                       timeout=timeout, env=e)
    code, kib = r.stdout.decode().split()
    return int(code), int(kib) / 1024, r.stderr.decode("utf-8", "replace")


def batches_until_error(reader) -> tuple[list, Exception | None]:
    """(batches, the ObookError that ended the reader or None) of a batch reader."""
    from obook.errors import ObookError

    batches = []
    try:
        for b in reader:
            batches.append(b)
    except ObookError as e:
        return batches, e
    return batches, None


def generated_day(path, kind: str, n: int, *args):
    """``obook gen KIND PATH -n N ARGS`` (a synthetic day, as a tester writes one); returns the path."""
    r = obook_cli("gen", kind, path, "-n", n, *args)
    assert r.returncode == 0, r.stderr.decode("utf-8", "replace")[-2000:]
    return path


def zstd_block_starts(frame: bytes) -> list[int]:
    """The offsets of the blocks of one zstd frame (each a 3-byte header: last-block bit,
    type, size; then its content: ``size`` bytes, one for an RLE block)."""
    import zstandard

    p, out = zstandard.frame_header_size(frame), []
    while True:
        out.append(p)
        header = int.from_bytes(frame[p:p + 3], "little")
        p += 3 + (1 if header >> 1 & 3 == 1 else header >> 3)
        if header & 1:
            return out


def damage_zstd_block(frame: bytes, k: int) -> tuple[bytes, int]:
    """``frame`` with its block ``k`` (0-based) damaged: its header's type made the reserved
    one (zstd fails there, whatever its version). Returns (the damaged frame, the offset of
    the damaged block): zstd decodes every block before it."""
    at = zstd_block_starts(frame)[k]
    damaged = bytearray(frame)
    damaged[at] |= 0b110
    return bytes(damaged), at

def lose_marker_checked(tmp_path, lines: list[str], k: int, lost: str, skipped: str) -> None:
    """Line ``k`` of a text log (``lines``) loses its leading ``lost`` (``//`` or ``/``), with a
    hex dump line and a blank line before it: a strict replay stops at it (its record, the
    reason quoting it) after rows of the lines before it, a tolerant one counts it once as
    ``skipped``."""
    import obook
    from obook.errors import FeedError

    lines = list(lines)
    lines[k] = lines[k].replace(lost, "", 1)
    lines[k:k] = ["0000: c0 00 30 00 36 30 30", ""]
    p = tmp_path / "lost.log"
    p.write_text("\n".join(lines) + "\n")
    batches, error = batches_until_error(obook.bbo(p, workers=1))
    assert isinstance(error, FeedError) and error.record == k + 3 and error.path.endswith("lost.log")
    assert f"a message without its leading '//': '{lines[k + 2][:40]}" in error.reason
    assert sum(b.num_rows for b in batches) > 50
    stats: dict = {}
    got = obook.bbo(p, workers=1, on_error="skip", stats=stats).read_all()
    assert stats["skipped"][skipped] == 1 and got.num_rows > 50
