"""The DBN metadata header (versions 1-3), read in plain Python.

Layout (little-endian): ``DBN`` + version (u8), the length of the rest (u32), dataset
(16-byte C string), schema (u16), start, end, limit (u64); version 1 then has
record_count (u64); stype_in, stype_out, ts_out (u8); versions 2 and 3 the symbol
string length (u16); padding up to byte 108; schema definition length (u32, 0); then
the symbols, partial and not_found lists (u32 count + fixed-length C strings) and the
symbol mappings (u32 count; each: raw symbol, u32 interval count, intervals of start
date, end date (u32 YYYYMMDD) and symbol). Records start at byte 8 + length.
"""

from __future__ import annotations

import datetime as _dt
import struct
from dataclasses import dataclass, field

MAGIC = b"DBN"
VERSIONS = (1, 2, 3)
PRELUDE = 8
SYMBOL_LEN_V1 = 22
STYPE_INSTRUMENT_ID = 0
#: the largest metadata header read (symbol mappings of a whole venue fit many times over):
#: its length comes from the file, and the header is held whole before it is parsed
MAX_HEADER = 256 << 20
#: the schemas DBN defines (the header's u16); obook replays ``mbo``
SCHEMA_NAMES = ("mbo", "mbp-1", "mbp-10", "tbbo", "trades", "ohlcv-1s", "ohlcv-1m", "ohlcv-1h",
                "ohlcv-1d", "definition", "statistics", "status", "imbalance", "ohlcv-eod", "cmbp-1",
                "cbbo-1s", "cbbo-1m", "tcbbo", "bbo-1s", "bbo-1m")
SCHEMA_MBO = 0


class MetadataError(ValueError):
    """The header is not DBN metadata obook can read (the framer names file and offset)."""


@dataclass
class Metadata:
    version: int
    length: int                 # bytes of the whole header: records start here
    dataset: str = ""
    schema: int | None = None   # None: mixed schemas
    start: int = 0
    end: int | None = None
    stype_out: int = STYPE_INSTRUMENT_ID
    ts_out: bool = False
    #: raw symbol -> [(start date, end date, mapped symbol)]
    mappings: dict[str, list[tuple[_dt.date, _dt.date, str]]] = field(default_factory=dict)

    def bad_mappings(self) -> list[tuple[str, str]]:
        """(raw symbol, mapped symbol) of the mappings that should name an instrument id
        (``stype_out`` instrument_id) but name something else."""
        if self.stype_out != STYPE_INSTRUMENT_ID:
            return []
        return [(raw, symbol) for raw, intervals in self.mappings.items() for _s, _e, symbol in intervals
                if symbol and not (symbol.isascii() and symbol.isdigit())]

    def tickers(self) -> dict[int, str]:
        """instrument_id -> raw symbol, from the mappings whose mapped symbol is an
        instrument id (the first mapping found wins when several name one id)."""
        out: dict[int, str] = {}
        for raw, intervals in self.mappings.items():
            for _start, _end, symbol in intervals:
                if symbol.isascii() and symbol.isdigit():
                    out.setdefault(int(symbol), raw)
        return out


def header_length(head: bytes) -> int | None:
    """Bytes of the header at the front of ``head`` (None: fewer than 8 bytes given)."""
    if len(head) < PRELUDE:
        return None
    if head[:3] != MAGIC:
        raise MetadataError("not a DBN file (no 'DBN' signature)")
    if head[3] not in VERSIONS:
        raise MetadataError(f"unsupported DBN version {head[3]} (obook reads versions 1-3)")
    n = struct.unpack_from("<I", head, 4)[0]
    if n > MAX_HEADER:
        raise MetadataError(f"DBN metadata header length {n} bytes is implausible (more than {MAX_HEADER})")
    return PRELUDE + n


def schema_name(schema: int | None) -> str:
    if schema is None:
        return "mixed"
    return SCHEMA_NAMES[schema] if schema < len(SCHEMA_NAMES) else f"unknown schema {schema}"


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _date(v: int) -> _dt.date | None:
    try:
        return _dt.date(v // 10000, v // 100 % 100, v % 100)
    except ValueError:
        return None


def parse(head: bytes) -> Metadata:
    """The metadata of a whole header (``head`` holds at least header_length bytes)."""
    n = header_length(head)
    if n is None or len(head) < n:
        raise MetadataError("truncated DBN metadata header")
    if n < 112:
        raise MetadataError(f"DBN metadata header length {n - PRELUDE} bytes is too short (its fixed fields "
                            f"alone take {112 - PRELUDE})")
    version = head[3]
    dataset = _cstr(head[8:24])
    schema, start, end, _limit = struct.unpack_from("<HQQQ", head, 24)
    if version == 1:
        _stype_in, stype_out, ts_out = struct.unpack_from("<BBB", head, 58)
        slen = SYMBOL_LEN_V1
    else:
        _stype_in, stype_out, ts_out, slen = struct.unpack_from("<BBBH", head, 50)
    pos = 108
    try:
        (schema_def,) = struct.unpack_from("<I", head, pos)
        pos += 4 + schema_def
        for _list in ("symbols", "partial", "not_found"):
            (count,) = struct.unpack_from("<I", head, pos)
            pos += 4 + count * slen
        (count,) = struct.unpack_from("<I", head, pos)
        pos += 4
        mappings: dict[str, list] = {}
        for _ in range(count):
            raw = _cstr(head[pos:pos + slen])
            (n_int,) = struct.unpack_from("<I", head, pos + slen)
            pos += slen + 4
            intervals = mappings.setdefault(raw, [])
            for _ in range(n_int):
                a, b = struct.unpack_from("<II", head, pos)
                intervals.append((_date(a), _date(b), _cstr(head[pos + 8:pos + 8 + slen])))
                pos += 8 + slen
    except struct.error as e:       # a count or a length that runs past the header
        raise MetadataError(f"malformed DBN metadata: its symbol lists run past the end of its {n}-byte "
                            f"header (at byte {pos})") from e
    return Metadata(version, n, dataset, None if schema == 0xFFFF else schema, start,
                    None if end == 0xFFFFFFFFFFFFFFFF else end, stype_out, bool(ts_out), mappings)
