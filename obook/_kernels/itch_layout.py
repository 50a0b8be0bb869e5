"""The one definition of the Nasdaq TotalView-ITCH 5.0 message layout.

Every message starts with the type byte (offset 0), then ``locate`` (1, 2 bytes),
``tracking`` (3, 2) and ``timestamp`` (5, 6: ns since midnight); integers are big-endian.
``MESSAGES[type]`` gives the message size (type byte included) and its named fields
``(name, offset, width, kind)``; kind ``"u"`` is an unsigned integer, ``"c"`` one
character, ``"s"`` text (space padded). ``OTHER`` lists types obook does not check (``MESSAGES``
leaves them out: they are framed by their length and skipped, whatever it is)
that the generator writes.

Read by the kernels (``obook._kernels.itch``: sizes and field offsets as module constants
numba folds into the code), the messages reader, the side tables and the generator of
``obook.feeds.itch`` and ``obook.gen.itch``, and by the tests' feed builders. Plain data:
no numba, no numpy. (A change here compiles every kernel again: their cache is keyed by a
hash of ``obook/_kernels``, see ``obook._kernels.cached_load``.)
"""

HEADER = (("locate", 1, 2, "u"), ("tracking", 3, 2, "u"), ("timestamp", 5, 6, "u"))
BODY = 11     # the first byte after the header

_ADD = (("ref", 11, 8, "u"), ("side", 19, 1, "c"), ("shares", 20, 4, "u"), ("stock", 24, 8, "s"),
        ("price", 32, 4, "u"))
_EXEC = (("ref", 11, 8, "u"), ("shares", 19, 4, "u"), ("match", 23, 8, "u"))

#: the types obook checks: size (type byte included) and fields after the header
MESSAGES = {
    "S": (12, (("event_code", 11, 1, "c"),)),
    "R": (39, (("stock", 11, 8, "s"), ("market_category", 19, 1, "c"), ("financial_status", 20, 1, "c"),
               ("round_lot_size", 21, 4, "u"), ("round_lots_only", 25, 1, "c"),
               ("issue_classification", 26, 1, "c"), ("issue_subtype", 27, 2, "s"),
               ("authenticity", 29, 1, "c"), ("short_sale_threshold", 30, 1, "c"), ("ipo_flag", 31, 1, "c"),
               ("luld_tier", 32, 1, "c"), ("etp_flag", 33, 1, "c"), ("etp_leverage_factor", 34, 4, "u"),
               ("inverse", 38, 1, "c"))),
    "H": (25, (("stock", 11, 8, "s"), ("state", 19, 1, "c"), ("reserved", 20, 1, "c"), ("reason", 21, 4, "s"))),
    "A": (36, _ADD),
    "F": (40, _ADD + (("mpid", 36, 4, "s"),)),
    "E": (31, _EXEC),
    "C": (36, _EXEC + (("printable", 31, 1, "c"), ("price", 32, 4, "u"))),
    "X": (23, (("ref", 11, 8, "u"), ("shares", 19, 4, "u"))),
    "D": (19, (("ref", 11, 8, "u"),)),
    "U": (35, (("ref", 11, 8, "u"), ("new_ref", 19, 8, "u"), ("shares", 27, 4, "u"), ("price", 31, 4, "u"))),
    "P": (44, _ADD + (("match", 36, 8, "u"),)),
    "Q": (40, (("shares", 11, 8, "u"), ("stock", 19, 8, "s"), ("price", 27, 4, "u"), ("match", 31, 8, "u"),
               ("cross_type", 39, 1, "c"))),
    "B": (19, (("match", 11, 8, "u"),)),
}

#: types outside that table that the generator writes (never checked against a size)
OTHER = {
    "I": (50, (("paired_shares", 11, 8, "u"), ("imbalance_shares", 19, 8, "u"),
               ("imbalance_direction", 27, 1, "c"), ("stock", 28, 8, "s"), ("far_price", 36, 4, "u"),
               ("near_price", 40, 4, "u"), ("reference_price", 44, 4, "u"), ("cross_type", 48, 1, "c"),
               ("price_variation", 49, 1, "c"))),
    "L": (26, (("mpid", 11, 4, "s"), ("stock", 15, 8, "s"), ("primary", 23, 1, "c"), ("mode", 24, 1, "c"),
               ("state", 25, 1, "c"))),
    "Y": (20, (("stock", 11, 8, "s"), ("reg_sho_action", 19, 1, "c"))),
    "V": (35, (("level1", 11, 8, "u"), ("level2", 19, 8, "u"), ("level3", 27, 8, "u"))),
}


def size(typ: str) -> int:
    """The size of a message type (type byte included)."""
    return (MESSAGES.get(typ) or OTHER[typ])[0]


def field(typ: str, name: str) -> tuple[int, int, str]:
    """(offset, width, kind) of a field of a message type (header fields too)."""
    for f in HEADER + (MESSAGES.get(typ) or OTHER[typ])[1]:
        if f[0] == name:
            return f[1], f[2], f[3]
    raise KeyError(f"ITCH {typ!r} has no field {name!r}")


def offset(typ: str, name: str) -> int:
    """The byte offset of a field in its message (type byte = 0)."""
    return field(typ, name)[0]


def _bytes(value, width: int, kind: str) -> bytes:
    if kind == "u":
        return int(value).to_bytes(width, "big")
    raw = value.encode("latin-1") if isinstance(value, str) else bytes(value)
    return raw.ljust(width)[:width]


def pack(typ: str, locate: int = 0, tracking: int = 0, timestamp: int = 0, **fields) -> bytes:
    """The bytes of one message (type byte first, no frame length): the header, then the
    named fields by the layout (text padded with spaces); fields not given are zero bytes."""
    n, layout = MESSAGES.get(typ) or OTHER[typ]
    out = bytearray(n)
    out[0] = ord(typ)
    values = {"locate": locate, "tracking": tracking, "timestamp": timestamp, **fields}
    known = {f[0] for f in HEADER + layout}
    unknown = set(values) - known
    if unknown:
        raise KeyError(f"ITCH {typ!r} has no field(s) {', '.join(sorted(unknown))}")
    for name, start, width, kind in HEADER + layout:
        if name in values:
            out[start:start + width] = _bytes(values[name], width, kind)
    return bytes(out)
