"""The last line of an AX-SBE text log (Shanghai, Shenzhen) when it has no line end:
whether it is cut, as far as the line tells.

Many logs end without a newline after a whole line; a line cut while it was written
ends the same way. Only its last token can be cut, so the line is cut when its message
type needs a field it lacks, when it ends inside a key (a token without ``=``), or when
its last value is empty, shorter than the field's fixed width (Shenzhen's 17-digit
TransactTime) or the start of a message type (``MsgType=19``). A cut inside a value of
no fixed width (``BizIndex=12`` of ``BizIndex=123``) looks like a whole line and is read
as one. Pure Python: one line a feed, read by the framers.
"""

from __future__ import annotations

#: the message types of the logs (snapshot, execution / trade, order)
TYPES = (b"111", b"191", b"192")
#: a UTF-8 byte order mark, which an editor may put before a log's first line
BOM = b"\xef\xbb\xbf"


def drop_bom(buf) -> None:
    """A byte order mark at the front of ``buf`` (a log's first bytes, uint8) moved out of the
    way in place: the first token (or the whole first line) shifted left over it, three spaces
    after it, so the line starts with its ``//`` and the bytes, lines and offsets keep their
    count. A first token longer than the bytes looked at: the mark becomes spaces."""
    if bytes(buf[:3]) != BOM:
        return
    head = bytes(buf[3:3 + 4096])
    ends = [i for i in (head.find(b" "), head.find(b"\n"), head.find(b"\r")) if i >= 0]
    end = min(ends) if ends else 0
    buf[:end] = buf[3:3 + end]
    buf[end:end + 3] = 32


def _shown(b: bytes) -> str:
    text = b.decode("utf-8", "replace")
    return text if len(text) <= 40 else f"{text[:40]}... ({len(b)} bytes)"


def number_reason(name: str, value: str) -> str:
    """The reason of a value the scan could not read as an integer: out of range when it
    is one (an optional '-', then digits), not an integer otherwise."""
    digits = value[1:] if value.startswith("-") else value
    if digits.isascii() and digits.isdigit():
        return f"malformed line: {name} out of range: '{_shown(value.encode())}'"
    return f"malformed line: {name} is not an integer: '{_shown(value.encode())}'"


def marker_reason(line: bytes) -> str:
    """The reason of a line that starts like a message (``Key=``) without the ``//`` every
    message starts with (l2_text.marker_lost): a lost marker, not a hex dump to pass over."""
    return f"malformed line: a message without its leading '//': '{_shown(line)}'"


def binary_reason(line: bytes, first: bool = False) -> str:
    """The reason of a line holding a byte no text has (l2_text.binary_at): binary data, not
    a line of the log; ``first``: the feed's first line, a file that is no text log at all."""
    from .._kernels.l2_text import binary_at

    at = binary_at.py_func(line, 0, len(line))       # (one line, in Python: the kernel's rule)
    what = f"byte 0x{line[at]:02x} at column {at + 1} is not text" if at >= 0 else "bytes that are not text"
    if first:
        return f"not a text log: its first line holds binary data ({what})"
    return f"malformed line: binary data, not a line of the log ({what})"


def cut_reason(line: bytes, needed: dict[int, tuple[str, ...]], widths: dict[str, int] | None = None) -> str | None:
    """The reason ("the last line is cut: ...") when ``line``, the feed's last line without
    its line end, is a message that is not whole; None for a whole message and for a line
    that is no message (it carries nothing). ``needed``: per message type the keys it needs
    (the first missing one is named); ``widths``: the digits of fixed-width keys."""
    text = line.rstrip(b"\r ")
    if not text.startswith(b"//"):
        return None
    why = _why([t for t in text[2:].split(b" ") if t], needed, widths or {})
    return None if why is None else f"the last line is cut: it has no line end and {why}"


def _why(tokens: list[bytes], needed: dict, widths: dict) -> str | None:
    if not tokens:
        return "no MsgType"
    key, eq, value = tokens[-1].partition(b"=")
    if not eq:
        return f"ends inside a key ('{_shown(key)}')"
    name = key.decode("latin-1")
    if name == "MsgType":
        if not value:
            return "MsgType has no value"
        if value not in TYPES and any(t.startswith(value) for t in TYPES):
            return f"MsgType ends at '{_shown(value)}'"
    fields = {}
    for t in tokens:          # a key given twice: its last value (as the parser reads it)
        k, e, v = t.partition(b"=")
        if e:
            fields[k.decode("latin-1")] = v
    if "MsgType" not in fields:
        return "no MsgType"
    try:
        keys = needed.get(int(fields["MsgType"]))
    except ValueError:
        return None
    if keys is None:
        return None           # a type whose fields are not read
    if name in keys and not value:
        return f"{name} has no value"
    width = widths.get(name)
    if width and name in keys and value.isdigit() and len(value) < width:
        return f"{name} has {len(value)} of its {width} digits"
    for k in keys:
        if k not in fields:
            return f"no {k}"
    return None
