"""Parquet footers read and written, so that row groups encoded apart (each into a Parquet
file of its own, in memory) can be stitched into one file: :func:`split` cuts a whole
Parquet file into its body and footer, :func:`shifted` moves a row group's offsets to where
its bytes land, :func:`footer` writes the merged ``FileMetaData``.

A footer is Thrift's compact protocol (parquet.thrift). It is decoded generically, without
the IDL: a struct is a list of ``[field id, type, value]``, so whatever a field holds (future
fields too) is written back byte for byte; only the fields named below are read or changed.
"""

from __future__ import annotations

import struct

__all__ = ["split", "shifted", "footer", "Struct", "encode_struct"]

MAGIC = b"PAR1"

# compact protocol types
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)

#: the compact protocol's types by name, for structs built elsewhere (obook.parquet_levels)
T_FALSE, T_I32, T_I64, T_BINARY, T_LIST, T_STRUCT = _FALSE, _I32, _I64, _BINARY, _LIST, _STRUCT

# parquet.thrift field ids
FILE_NUM_ROWS, FILE_ROW_GROUPS, FILE_KEY_VALUES = 3, 4, 5
GROUP_COLUMNS, GROUP_FILE_OFFSET, GROUP_ORDINAL = 1, 5, 7
#: ColumnChunk: file_offset, meta_data, offset_index_offset, column_index_offset
CHUNK_OFFSETS, CHUNK_META = (2, 4, 6), 3
#: ColumnMetaData: data_page_offset, index_page_offset, dictionary_page_offset, bloom_filter_offset
META_OFFSETS = (9, 10, 11, 14)


class Struct(list):
    """A decoded struct: ``[field id, type, value]`` items in wire order."""

    def get(self, fid: int, default=None):
        for f in self:
            if f[0] == fid:
                return f[2]
        return default

    def set(self, fid: int, typ: int, value) -> None:
        for f in self:
            if f[0] == fid:
                f[1], f[2] = typ, value
                return
        self.append([fid, typ, value])
        self.sort(key=lambda f: f[0])


# --------------------------------------------------------------------------- decoding


class _Reader:
    def __init__(self, buf: bytes):
        self.buf = memoryview(buf)
        self.pos = 0

    def varint(self) -> int:
        shift = result = 0
        buf, pos = self.buf, self.pos
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, typ: int):
        if typ in (_I16, _I32, _I64):
            return self.zigzag()
        if typ == _BINARY:
            n = self.varint()
            self.pos += n
            return bytes(self.buf[self.pos - n:self.pos])
        if typ == _STRUCT:
            return self.struct()
        if typ in (_LIST, _SET):
            head = self.buf[self.pos]
            self.pos += 1
            size, elem = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            if elem in (_TRUE, _FALSE):          # a list's booleans are one byte each
                self.pos += size
                return (elem, list(self.buf[self.pos - size:self.pos]))
            return (elem, [self.value(elem) for _ in range(size)])
        if typ == _MAP:
            size = self.varint()
            if not size:
                return (0, 0, [])
            kinds = self.buf[self.pos]
            self.pos += 1
            kt, vt = kinds >> 4, kinds & 0x0F
            return (kt, vt, [(self.value(kt), self.value(vt)) for _ in range(size)])
        if typ == _BYTE:
            self.pos += 1
            return self.buf[self.pos - 1]
        if typ == _DOUBLE:
            self.pos += 8
            return struct.unpack("<d", self.buf[self.pos - 8:self.pos])[0]
        if typ in (_TRUE, _FALSE):               # a struct field's boolean is its type
            return typ == _TRUE
        raise ValueError(f"Parquet footer: unknown Thrift type {typ} at byte {self.pos}")

    def struct(self) -> Struct:
        out = Struct()
        fid = 0
        while True:
            head = self.buf[self.pos]
            self.pos += 1
            if head == 0:
                return out
            typ, delta = head & 0x0F, head >> 4
            fid = fid + delta if delta else self.zigzag()
            out.append([fid, typ, self.value(typ)])


# --------------------------------------------------------------------------- encoding


def _varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(out: bytearray, n: int) -> None:
    _varint(out, (n << 1) ^ (n >> 63))


def _value(out: bytearray, typ: int, v) -> None:
    if typ in (_I16, _I32, _I64):
        _zigzag(out, v)
    elif typ == _BINARY:
        _varint(out, len(v))
        out += v
    elif typ == _STRUCT:
        _struct(out, v)
    elif typ in (_LIST, _SET):
        elem, items = v
        n = len(items)
        if n < 15:
            out.append(n << 4 | elem)
        else:
            out.append(0xF0 | elem)
            _varint(out, n)
        if elem in (_TRUE, _FALSE):
            out += bytes(items)
        else:
            for item in items:
                _value(out, elem, item)
    elif typ == _MAP:
        kt, vt, items = v
        _varint(out, len(items))
        if items:
            out.append(kt << 4 | vt)
            for k, x in items:
                _value(out, kt, k)
                _value(out, vt, x)
    elif typ == _BYTE:
        out.append(v)
    elif typ == _DOUBLE:
        out += struct.pack("<d", v)
    # a boolean field is all in its header


def _struct(out: bytearray, s: Struct) -> None:
    last = 0
    for fid, typ, v in s:
        if typ in (_TRUE, _FALSE):
            typ = _TRUE if v else _FALSE
        if 0 < fid - last <= 15:
            out.append((fid - last) << 4 | typ)
        else:
            out.append(typ)
            _zigzag(out, fid)
        last = fid
        _value(out, typ, v)
    out.append(0)


def encode_struct(s: Struct) -> bytes:
    """A struct in the compact protocol (e.g. a page header)."""
    out = bytearray()
    _struct(out, s)
    return bytes(out)


# --------------------------------------------------------------------------- Parquet


def split(data) -> tuple[memoryview, Struct]:
    """A whole Parquet file's bytes -> (its body: the bytes after the leading magic up to the
    footer, the decoded ``FileMetaData``)."""
    view = memoryview(data).cast("B")     # a pyarrow Buffer's items are signed
    if len(view) < 12 or view[:4] != MAGIC or view[-4:] != MAGIC:
        raise ValueError("not a Parquet file (no PAR1 magic)")
    n = int.from_bytes(view[-8:-4], "little")
    start = len(view) - 8 - n
    return view[4:start], _Reader(view[start:-8]).struct()


def shifted(group: Struct, delta: int, ordinal: int) -> Struct:
    """``group`` (a RowGroup) with every file offset moved by ``delta`` bytes and its
    ``ordinal`` (when written) set."""
    for f in group:
        if f[0] == GROUP_FILE_OFFSET:
            f[2] += delta
        elif f[0] == GROUP_ORDINAL:
            f[2] = ordinal
        elif f[0] == GROUP_COLUMNS:
            for chunk in f[2][1]:
                for c in chunk:
                    if c[0] in CHUNK_OFFSETS and c[2] > 0:
                        c[2] += delta
                    elif c[0] == CHUNK_META:
                        for m in c[2]:
                            if m[0] in META_OFFSETS and m[2] > 0:
                                m[2] += delta
    return group


def footer(meta: Struct, groups: list[Struct], key_values: dict[str, str] | None = None) -> bytes:
    """The footer (FileMetaData, its length, the magic) of ``meta`` (a writer's, for the
    schema and its key-value metadata) holding ``groups``, plus ``key_values`` (a key
    already there gets the new value)."""
    meta = Struct(list(meta))
    meta.set(FILE_NUM_ROWS, _I64, sum(g.get(3, 0) for g in groups))
    meta.set(FILE_ROW_GROUPS, _LIST, (_STRUCT, groups))
    if key_values:
        _, pairs = meta.get(FILE_KEY_VALUES, (_STRUCT, []))
        merged = {p.get(1): p for p in pairs}
        for k, v in key_values.items():
            merged[k.encode()] = Struct([[1, _BINARY, k.encode()], [2, _BINARY, v.encode()]])
        meta.set(FILE_KEY_VALUES, _LIST, (_STRUCT, list(merged.values())))
    out = bytearray()
    _struct(out, meta)
    return bytes(out) + len(out).to_bytes(4, "little") + MAGIC
