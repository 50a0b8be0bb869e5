"""The synthetic CSV feed generator."""

from __future__ import annotations

from obook.gen.csv import ticker_names, write_csv

from reference_csv import reference_csv_bbo


def test_write_csv_same_seed_identical_bytes(tmp_path):
    a, b, c = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv"
    assert write_csv(a, 3000, 4, seed=7) == write_csv(b, 3000, 4, seed=7)
    write_csv(c, 3000, 4, seed=8)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()


def test_write_csv_format_header_crlf_and_tickers(tmp_path):
    p = tmp_path / "g.csv"
    n = write_csv(p, 2000, 30, seed=1)
    data = p.read_bytes()
    assert data.startswith(b"Time,Ticker,Order,T,Shares,Price,MPID,X\r\n") and data.endswith(b"\r\n")
    lines = data.split(b"\r\n")[1:-1]
    assert len(lines) == n and n >= 2000
    assert all(len(ln.split(b",")) == 8 for ln in lines)
    assert {ln.split(b",")[1] for ln in lines} <= {bytes(t) for t in ticker_names(30)}
    times = [int(ln.split(b",")[0]) for ln in lines]
    assert times == sorted(times)


def test_write_csv_mix_of_types_roughly_as_specified(tmp_path):
    p = tmp_path / "g.csv"
    write_csv(p, 20000, 10, seed=2)
    types = [ln.split(b",")[3] for ln in p.read_bytes().split(b"\r\n")[1:20001]]
    share = {t: types.count(t) / len(types) for t in set(types)}
    assert 0.40 < share[b"B"] + share[b"S"] < 0.52
    assert 0.20 < share[b"D"] < 0.32
    assert 0.05 < share[b"T"] + share[b"X"] < 0.09
    assert all(share.get(t, 0) > 0.02 for t in (b"C", b"E", b"F"))


def test_write_csv_replays_cleanly_never_crosses_and_drains(tmp_path):
    p = tmp_path / "g.csv"
    write_csv(p, 8000, 6, seed=3, depth=40)
    rows, error, _ = reference_csv_bbo(p)
    assert error is None
    for r in rows:
        _, _, bp, _, ap, _ = r.split(",")
        assert not (bp and ap and int(bp) >= int(ap))
    last = {}
    for r in rows:
        last[r.split(",")[1]] = r
    assert all(r.endswith(",,,,") for r in last.values())       # every book ends empty


def test_ticker_names_aaa_aab_and_four_letters():
    assert [bytes(t) for t in ticker_names(3)] == [b"AAA", b"AAB", b"AAC"]
    assert bytes(ticker_names(17577)[-1]) == b"BAAA"
