"""Several events per record: a decoder that stops when the events buffer is full is called
again with the rest of the batch, the buffer growing; the rows are those of the plain one."""

import numpy as np
import pytest

import obook
from obook.engine.applier import Applier
from obook.engine.replay import Replay
from obook.feeds.sources import iter_batches
from obook._kernels.layout import ROW_WIDTH
from obook.gen.csv import write_csv

import chunked_feed

TABLES = ("bbo", "trades", "orders", "depth")


def _tables(path, fmt, workers):
    replay = Replay(path, workers=workers, format=fmt, tables=TABLES, levels=3)
    out = {t: [] for t in TABLES}
    for table, batch in replay.table_batches():
        out[table] += batch.to_pylist()
    return out


@pytest.fixture(scope="module")
def feed(tmp_path_factory):
    path = tmp_path_factory.mktemp("chunked") / "orders.csv"
    write_csv(path, 4000, 7, seed=3)
    return path


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_multi_events_chunked_decoder_same_tables_as_csv(feed, workers):
    want = _tables(feed, "csv", 1)
    got = _tables(feed, chunked_feed.FORMAT, workers)
    assert sum(len(v) for v in want.values()) > 4000
    assert got == want


def test_multi_events_events_buffer_grows_from_one_row(feed):
    framer = chunked_feed.FORMAT.framer_class()(str(feed))
    tiny = Applier(chunked_feed.FORMAT, str(feed), 0, 1, "raise", 0, 10, events_rows=1)
    plain = Applier("csv", str(feed), 0, 1, "raise", 0, 10)
    assert len(tiny.events) == 1
    for batch in iter_batches(feed, framer, block_size=1 << 14):
        rows = [np.zeros((1 << 16, ROW_WIDTH), np.int64) for _ in range(2)]
        a = tiny.run(batch.data, batch.base_seq, {"bbo": rows[0]})
        b = plain.run(batch.data, batch.base_seq, {"bbo": rows[1]})
        assert a.counts == b.counts and a.error == b.error and a.names == b.names
        n = a.counts["bbo"]
        assert np.array_equal(rows[0][:n], rows[1][:n])
    assert len(tiny.events) > 1


def test_multi_events_error_record_same_as_csv(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"Time,Ticker,Order,T,Shares,Price\n" + b"".join(
        b"%d,AAA,%d,B,10,%d\n" % (i, i, 100 + i) for i in range(1, 40)) + b"50,AAA,999,D,0,0\n")
    with pytest.raises(obook.FeedError) as plain:
        _tables(path, "csv", 1)
    for workers in (1, 2):
        with pytest.raises(obook.FeedError) as chunked:
            _tables(path, chunked_feed.FORMAT, workers)
        assert (chunked.value.record, chunked.value.reason) == (plain.value.record, plain.value.reason)
