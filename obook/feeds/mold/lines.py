"""Which datagrams of which captures are line A, B ...: ``PATH[:ADDRESS:PORT]`` specs.

:func:`lines` (``obook.lines``) builds a :class:`Lines` source: the engine reads it as one
ITCH feed (``open_feed``: the lines' MoldUDP64 messages arbitrated, see ``stream``).
A spec without address and port takes every UDP destination of that capture carrying
MoldUDP64 as its own line, in order of first appearance.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ...errors import ObookError
from ..sources import is_stream, source_name
from .capture import ip_number, ip_text

LINE_NAMES = "ABCDEFGH"


@dataclass(frozen=True)
class LineSpec:
    """One line: a capture file and the destination address and port of its datagrams
    (None: every destination of the capture, each a line)."""

    path: str
    ip: int | None = None
    port: int | None = None

    def __fspath__(self) -> str:
        return self.path

    def __str__(self) -> str:
        return self.path if self.ip is None else f"{self.path}:{ip_text(self.ip)}:{self.port}"

    @classmethod
    def parse(cls, spec) -> "LineSpec":
        """``PATH:ADDRESS:PORT`` or ``PATH`` (a LineSpec passes as is)."""
        if isinstance(spec, LineSpec):
            return spec
        text = os.fspath(spec)
        head, sep, port = text.rpartition(":")
        if sep and port.isdigit():
            path, sep2, addr = head.rpartition(":")
            if sep2 and addr.count(".") == 3:
                if not 0 < int(port) < 65536:
                    raise ObookError(f"{text}: UDP port must be 1..65535, not {port}")
                return cls(path, ip_number(addr), int(port))
        if os.path.exists(text) or ":" not in text:
            return cls(text)
        raise ObookError(f"{text}: a line is CAPTURE[:ADDRESS:PORT] (e.g. a.pcap:233.54.12.111:26477)")


class Lines(tuple):
    """The lines of one MoldUDP64 session, as a feed source (a tuple of :class:`LineSpec`;
    ``os.fspath`` of each is its capture file)."""

    def __new__(cls, specs):
        specs = [LineSpec.parse(s) for s in specs]
        if not specs:
            raise ObookError("no line given")
        if len(specs) > len(LINE_NAMES):
            raise ObookError(f"at most {len(LINE_NAMES)} lines, not {len(specs)}")
        seen = set()
        for s in specs:
            key = (os.path.realpath(s.path), s.ip, s.port)
            if key in seen:
                raise ObookError(f"{s}: given for two lines; each line is its own capture or address")
            seen.add(key)
        return super().__new__(cls, specs)

    def prefetch(self) -> "Lines":
        """Start reading and arbitrating the captures in a thread (the kernels release the
        GIL): a replay's worker processes start meanwhile. The first :meth:`open_feed` takes
        the result; later ones read the captures again."""
        if not getattr(self, "_pending", None):
            import threading

            from .rounds import Rounds, streamable
            from .stream import arbitrate

            if streamable(self):         # arbitrated in rounds: the replay starts at once
                self._pending = Rounds(self)
                return self

            box: dict = {}

            def run():
                try:
                    box["arb"] = arbitrate(self)
                except BaseException as e:  # noqa: BLE001 - raised by open_feed
                    box["error"] = e
            thread = threading.Thread(target=run, name="obook-arbitrate", daemon=True)
            thread.start()
            self._pending = (thread, box)
        return self

    def open_feed(self):
        """The arbitrated ITCH stream of the lines (a Reader: readinto, pos, close)."""
        from .stream import ArbitratedStream, arbitrate

        pending, self._pending = getattr(self, "_pending", None), False
        if pending and not isinstance(pending, tuple):
            return ArbitratedStream(self, pending)
        if pending:
            thread, box = pending
            thread.join()
            if "error" in box:
                raise box.pop("error")
            return ArbitratedStream(self, _found(box.pop("arb")))
        return ArbitratedStream(self, _found(arbitrate(self)))

    def __repr__(self) -> str:
        return f"lines({', '.join(repr(str(s)) for s in self)})"


def _found(arb):
    """The arbitration of the captures read whole, checked: each line named by address
    and port has packets (a destination of no packet would replay to empty tables)."""
    import numpy as np

    counts = np.bincount(arb.p_line, minlength=len(arb.lines))
    for (spec, ip, port), n in zip(arb.lines, counts.tolist()):
        if spec.ip is not None and n == 0:
            raise ObookError(f"{spec.path}: no UDP datagram to {ip_text(ip)}:{port} in the capture")
    return arb


def lines(a=None, b=None, *more) -> Lines:
    """A feed of MoldUDP64 lines in packet captures: ``obook.lines(a="A.pcap:233.54.12.111:26477",
    b="B.pcap:233.54.12.112:26477")`` (each ``CAPTURE[:ADDRESS:PORT]`` or a :class:`LineSpec`;
    both lines may be in one capture). Pass it wherever a feed path goes: ``obook.bbo(obook.lines(...))``."""
    specs = [s for s in (a, b, *more) if s is not None]
    return Lines(specs)


def as_lines(source) -> Lines:
    """A path, a list of paths or specs, or Lines, as :class:`Lines` (a stream is an
    ObookError: a capture is mapped, read where each line's packets are)."""
    if isinstance(source, Lines):
        return source
    if is_stream(source):
        raise ObookError(f"{source_name(source)}: a packet capture is read from a file, not a stream: "
                         "save it to a file and give its path")
    if isinstance(source, (list, tuple)):
        return Lines(source)
    return Lines([source])
