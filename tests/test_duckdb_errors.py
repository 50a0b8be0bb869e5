"""DuckDB's error text for an obook error ending a scan: the error's one line, whatever it holds."""

import ctypes

import duckdb
import pyarrow as pa
import pytest

import obook.duckdb as od
from obook.errors import ObookError

SCHEMA = pa.schema([("a", pa.int64())])


class _Failing:
    """A reader giving ``rows`` one-row batches, then raising ``error``."""

    schema = SCHEMA

    def __init__(self, error, rows=0):
        self.error, self.rows = error, rows

    def read_next_batch(self):
        if self.rows:
            self.rows -= 1
            return pa.record_batch([pa.array([1])], schema=SCHEMA)
        raise self.error


def _source(error, rows=0):
    source = od._Source("failing", SCHEMA, lambda: _Failing(error, rows))
    source.args = ()
    return source


def _scan_error(error, rows=0) -> str:
    con = duckdb.connect()
    try:
        with pytest.raises(duckdb.Error) as err:
            con.from_arrow(_source(error, rows)).fetchall()
    finally:
        con.close()
    return str(err.value)


def _failed_stream(error):
    """A C stream of a failing source moved out of its capsule (as DuckDB does), after its
    failing get_next: (stream, its get_last_error, its release)."""
    capsule = _source(error).__arrow_c_stream__()
    address = od._capsule_pointer(capsule, b"arrow_array_stream")
    stream = od._CStream()
    ctypes.memmove(ctypes.addressof(stream), address, ctypes.sizeof(stream))
    od._CStream.from_address(address).release = None
    array = ctypes.create_string_buffer(80)
    get_next = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(stream.get_next)
    assert get_next(ctypes.addressof(stream), ctypes.addressof(array)) != 0
    release = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(stream.release)
    return stream, od._LAST_ERROR(stream.get_last_error), release


@pytest.mark.parametrize("rows", [0, 3])
def test_scan_error_message_with_newline_is_the_message_without_traceback(rows):
    text = _scan_error(ObookError("day\n1.itch: message 7: bad"), rows)
    assert text.endswith("failed: ObookError: day\n1.itch: message 7: bad"), text
    assert "Traceback" not in text


def test_scan_error_message_with_detail_marker_is_the_whole_message():
    message = "a. Detail: Python exception: b.itch: message 7: bad"
    text = _scan_error(ObookError(message))
    assert text.endswith(f"failed: ObookError: {message}"), text
    assert "Traceback" not in text


@pytest.mark.parametrize("name, shown", [("b\udcff.itch", "b\\xff.itch"), ("b\x00.itch", "b\\x00.itch")])
def test_scan_error_file_name_undecodable_or_nul_byte_is_escaped_one_line(name, shown):
    text = _scan_error(ObookError(f"{name}: message 7: bad"))
    assert text.endswith(f"failed: ObookError: {shown}: message 7: bad"), text
    assert "Traceback" not in text and "UnicodeEncodeError" not in text


def test_scan_error_text_stays_valid_after_many_other_streams_errors():
    first = _failed_stream(ObookError("first stream's error"))
    pointer = first[1](ctypes.addressof(first[0]))
    others = [_failed_stream(ObookError(f"error {i}")) for i in range(80)]
    for i, (stream, last_error, _) in enumerate(others):
        assert ctypes.string_at(last_error(ctypes.addressof(stream))) == f"ObookError: error {i}".encode()
    filler = [ctypes.create_string_buffer(b"Z" * 26) for _ in range(1000)]
    assert ctypes.string_at(pointer) == b"ObookError: first stream's error"
    for stream, _, release in [first, *others]:
        release(ctypes.addressof(stream))
    del filler


def test_scan_error_get_last_error_after_release_is_a_fixed_text():
    stream, last_error, release = _failed_stream(ObookError("boom"))
    assert ctypes.string_at(last_error(ctypes.addressof(stream))) == b"ObookError: boom"
    release(ctypes.addressof(stream))
    assert ctypes.string_at(last_error(ctypes.addressof(stream))) == \
        b"get_last_error called on a released Arrow stream"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"database": None}, "^database must be a path"), ({"database": "a\0b.duckdb"}, "^database .* holds a NUL"),
    ({"read_only": 1}, "^read_only must be True or False"), ({"config": []}, "^config must be a dict"),
])
def test_connect_wrong_argument_raises_naming_it(tmp_path, monkeypatch, kwargs, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ObookError, match=message):
        od.connect(**kwargs)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("call", ["obook_price(100, NULL)", "obook_ticks(1.5, NULL)",
                                  "obook_time_of_day(100, NULL)", "obook_unit(to_json(NULL), NULL, 'price_scale')"])
def test_obook_unit_of_a_null_feed_is_an_obook_error_saying_to_give_the_path(call):
    con = od.connect()
    try:
        with pytest.raises(duckdb.Error, match=r"ObookError: obook_unit: the feed is NULL") as got:
            con.execute(f"SELECT {call}").fetchall()
        assert "TypeError" not in str(got.value)
    finally:
        con.close()


def test_obook_unit_null_key_raises_naming_null_not_none(tmp_path):
    from frontend_feeds import write_small_feed

    feed = write_small_feed(tmp_path / "small.itch")
    con = od.connect()
    try:
        with pytest.raises(duckdb.Error, match=r"obook_unit: no unit NULL; choose from price_scale"):
            con.execute(f"SELECT obook_unit(to_json('{feed}'), NULL, NULL)").fetchall()
    finally:
        con.close()
