"""``obook gen pcap`` and ``obook bbo --line-a/--line-b``."""

from __future__ import annotations

import sys

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import obook
from obook.cli import app
from obook.gen.itch import write_itch

runner = CliRunner()


def _main(args):
    from obook.cli import main

    old = sys.argv
    sys.argv = ["obook", *map(str, args)]
    try:
        with pytest.raises(SystemExit) as e:
            main()
    finally:
        sys.argv = old
    return e.value.code


def test_cli_gen_pcap_then_bbo_lines_equal_plain_replay(tmp_path):
    itch = tmp_path / "day.itch"
    write_itch(itch, 3000, 4, seed=2)
    r = runner.invoke(app, ["gen", "pcap", str(itch), str(tmp_path / "a.pcap"), str(tmp_path / "b.pcap"),
                            "--drop", "0.1", "--seed", "3"])
    assert r.exit_code == 0, r.output
    out = tmp_path / "bbo.parquet"
    r = runner.invoke(app, ["bbo", "--line-a", f"{tmp_path / 'a.pcap'}:233.54.12.111:26477",
                            "--line-b", f"{tmp_path / 'b.pcap'}:233.54.12.112:26477", "-o", str(out), "-w", "1"])
    assert r.exit_code == 0, r.output
    got = pq.read_table(out)
    plain = obook.bbo(str(itch), workers=1).read_all()
    assert got.schema.names[-3:] == ["mold_seq", "line", "ts_recv"]
    assert got.column("seq").equals(plain.column("seq")) and got.column("bid_px").equals(plain.column("bid_px"))


def test_cli_bbo_lines_lost_on_both_is_error_naming_range(tmp_path, capsys):
    itch = tmp_path / "day.itch"
    write_itch(itch, 3000, 4, seed=2)
    from obook.gen.pcap import write_pcap
    info = write_pcap(itch, tmp_path / "both.pcapng", None, kind="pcapng", both_gaps=1, seed=4)
    a, c = info["lost"][0]
    cap = tmp_path / "both.pcapng"
    code = _main(["bbo", "--line-a", f"{cap}:233.54.12.111:26477", "--line-b", f"{cap}:233.54.12.112:26477",
                  "-o", tmp_path / "x.parquet"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: ") and f"messages {a} to {a + c - 1} lost on every line" in err
    assert _main(["bbo", str(itch), "--line-a", f"{cap}:233.54.12.111:26477"]) == 1
    assert "not both" in capsys.readouterr().err


def test_cli_convert_capture_gaps_and_line_stats_equal_python_readers(tmp_path):
    itch = tmp_path / "day.itch"
    write_itch(itch, 3000, 4, seed=2)
    from obook.gen.pcap import write_pcap
    cap = tmp_path / "both.pcap"
    write_pcap(itch, cap, None, both_gaps=2, drop=0.05, seed=4)
    r = runner.invoke(app, ["convert", str(cap), str(tmp_path / "out"), "-t", "gaps,line_stats", "-w", "1"])
    assert r.exit_code == 0, r.output
    for name in ("gaps", "line_stats"):
        got, want = pq.read_table(tmp_path / "out" / f"{name}.parquet"), getattr(obook, name)(cap).read_all()
        assert want.num_rows > 0 and got.equals(want), name
        assert "timestamp" not in got.schema.names


def test_cli_gen_pcap_refuses_what_would_lose_data_or_write_nonsense(tmp_path):
    itch = tmp_path / "day.itch"
    write_itch(itch, 2000, 4, seed=2)
    before = itch.read_bytes()
    cut = tmp_path / "cut.itch"
    cut.write_bytes(before[:len(before) // 2 + 3])
    csv = tmp_path / "day.csv"
    csv.write_text("Time,Ticker,Order,T,Shares,Price\n1,AAA,a,B,100,1000\n")
    for args, says in (([itch, itch], "is the ITCH day being read"),
                       ([itch, tmp_path / "x.pcap", tmp_path / "x.pcap"], "given for both lines"),
                       ([cut, tmp_path / "x.pcap"], "cut short"),
                       ([csv, tmp_path / "x.pcap"], "a csv feed, not an ITCH day"),
                       ([itch, tmp_path / "x.pcap", "--date", "1600-01-01"], "a capture's clock holds"),
                       ([itch, tmp_path / "x.pcap", "--date", "2300-01-01"], "a capture's clock holds")):
        r = runner.invoke(app, ["gen", "pcap", *map(str, args)])
        assert r.exit_code != 0 and says in str(r.exception), (args, r.output)
    assert itch.read_bytes() == before and not (tmp_path / "x.pcap").exists()


@pytest.mark.parametrize("lines", [True, False])
def test_cli_bbo_first_file_of_no_format_error_names_that_file(tmp_path, capsys, lines):
    """Line A's capture (or a list's first file) that no format reads: the error names that
    file, not the lines' or the list's Python form."""
    noise = tmp_path / "noise.pcap"
    noise.write_bytes(bytes(range(7, 107)))
    itch = tmp_path / "day.itch"
    write_itch(itch, 300, 3, seed=2)
    given = (["--line-a", f"{noise}:233.54.12.111:26477", "--line-b", f"{itch}:233.54.12.112:26477"] if lines
             else [noise, itch])
    assert _main(["bbo", *given, "-o", tmp_path / "x.parquet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {noise}: cannot tell the feed format; pass --format ("), err


def test_lines_the_same_line_twice_is_an_error(tmp_path):
    from obook.errors import ObookError

    with pytest.raises(ObookError, match="given for two lines"):
        obook.lines(f"{tmp_path / 'a.pcap'}:233.54.12.111:26477", f"{tmp_path / 'a.pcap'}:233.54.12.111:26477")
    assert len(obook.lines(f"{tmp_path / 'a.pcap'}:233.54.12.111:26477",
                           f"{tmp_path / 'a.pcap'}:233.54.12.112:26477")) == 2


@pytest.mark.parametrize("given", [(), ("-f", "itch-pcap")])
def test_cli_pcap_on_stdin_one_line_error_asks_for_the_file(tmp_path, given):
    from hostile_support import cli_error
    from obook.gen.pcap import write_pcap

    itch = tmp_path / "day.itch"
    write_itch(itch, 3000, 4, seed=2)
    capture = tmp_path / "day.pcap"
    write_pcap(itch, capture)
    with open(capture, "rb") as stdin:
        line = cli_error("bbo", *given, "-", stdin=stdin)
    assert line == ("error: <stdin>: a packet capture is read from a file, not a stream: save it to a file "
                    "and give its path")


@pytest.mark.parametrize(("option", "says"), [
    ({"kind": "pcapx"}, r"^kind must be one of pcap, pcap-ns, pcapng, not 'pcapx'$"),
    ({"kind": 5}, r"^kind must be one of pcap, pcap-ns, pcapng, not 5$"),
    ({"seed": 1.0}, r"^seed must be an integer from 0 to \d+, not 1\.0 \(a float\)$"),
    ({"max_messages": 0}, r"^max_messages must be an integer of messages a packet >= 1, not 0$"),
    ({"max_messages": 12.0}, r"^max_messages must be an integer of messages a packet >= 1, not 12\.0 \(a float\)$"),
    ({"delay_ns": "5"}, r"^delay_ns must be an integer of ns >= 0, not '5'$"),
    ({"date": "30/11/2026"}, r"^--date / date= '30/11/2026': not a day YYYY-MM-DD$"),
])
def test_write_pcap_bad_option_is_obook_error_naming_it_no_capture(tmp_path, option, says):
    from obook.errors import ObookError
    from obook.gen.pcap import write_pcap

    itch = tmp_path / "day.itch"
    write_itch(itch, 200, 2, seed=2)
    with pytest.raises(ObookError, match=says):
        write_pcap(itch, tmp_path / "a.pcap", **option)
    assert not (tmp_path / "a.pcap").exists()


def test_write_pcap_kind_in_any_case_written_as_that_kind(tmp_path):
    from obook.gen.pcap import write_pcap

    itch = tmp_path / "day.itch"
    write_itch(itch, 200, 2, seed=2)
    write_pcap(itch, tmp_path / "a.pcapng", kind="PCAPNG")
    assert (tmp_path / "a.pcapng").read_bytes()[:4] == bytes.fromhex("0a0d0d0a")     # a pcapng section header


@pytest.mark.parametrize("both_gaps", [-1, 1.5, 2.0, "2", True])
def test_write_pcap_both_gaps_not_a_count_is_obook_error_no_capture(tmp_path, both_gaps):
    from obook.errors import ObookError
    from obook.gen.pcap import write_pcap

    itch = tmp_path / "day.itch"
    write_itch(itch, 200, 2, seed=2)
    with pytest.raises(ObookError, match="both_gaps must be an integer of packets >= 0"):
        write_pcap(itch, tmp_path / "a.pcap", both_gaps=both_gaps)
    assert not (tmp_path / "a.pcap").exists()


@pytest.mark.parametrize("content", [b"", __import__("gzip").compress(b"", mtime=0)], ids=["plain", "gzip"])
def test_cli_gen_pcap_empty_itch_day_one_line_error_no_capture(tmp_path, capsys, content):
    from cli_support import cli_error

    empty = tmp_path / ("empty.itch" + (".gz" if content else ""))
    empty.write_bytes(content)
    err = cli_error(capsys, "gen", "pcap", empty, tmp_path / "x.pcap")
    assert err == f"error: {empty}: empty file: no ITCH message to send\n"
    assert not (tmp_path / "x.pcap").exists()
