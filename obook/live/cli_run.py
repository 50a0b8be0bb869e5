"""The body of ``obook listen`` (kept out of the CLI module: it wires sinks, strategy,
gateway and reports)."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from ..errors import ObookError
from .net import check_interface, distinct_addresses, parse_address


def check_strategy_text(spec: str, what: str = "--strategy") -> tuple[str, str]:
    """``FILE.py:NAME`` or ``module:NAME`` checked without loading it (a front end that loads
    it later refuses at once what cannot be one): its form, and a FILE.py that is a file;
    (FILE.py or module, NAME). Else ObookError naming ``what``."""
    where, _, name = spec.rpartition(":")
    if not where or not name:
        raise ObookError(f"{what} {spec!r}: give FILE.py:NAME or module:NAME")
    path = Path(where)
    # a path: a module's name has no slash, and a file of that name is the one meant
    if where.endswith(".py") or "/" in where or os.sep in where or path.is_file():
        if not path.exists():
            raise ObookError(f"{what}: no such file {where}")
        if not where.endswith(".py") or not path.is_file():
            raise ObookError(f"{what}: {where} is a {'folder' if path.is_dir() else 'file'}, not a Python file "
                             "(give FILE.py:NAME or module:NAME)")
    elif ":" in where:          # (a module's name has no colon)
        raise ObookError(f"{what} {spec!r}: give FILE.py:NAME or module:NAME, one name after one colon")
    return where, name


def _strategy_names(module) -> list[str]:
    """The names a strategy file or module defines that may be strategies: its own classes
    and functions, and numba strategies (none starting with ``_``, none imported)."""
    from .fast_strategy import NumbaStrategy

    own = getattr(module, "__name__", None)
    return sorted(n for n, v in vars(module).items() if not n.startswith("_") and (
        isinstance(v, NumbaStrategy) or callable(v) and getattr(v, "__module__", None) == own))


def load_strategy(spec: str, what: str = "--strategy", accept: tuple = ()):
    """``FILE.py:NAME`` or ``module:NAME``; a class is instantiated without arguments. What
    is no strategy (no ``on_book`` / ``on_order`` / ``on_timer``, not callable, not a
    ``numba_strategy``, not an instance of one of the classes ``accept``: a backtest's
    compiled strategy), or a file or module that fails to load, raises ObookError naming
    ``what`` (the option or argument it was given as)."""
    from .strategy import raised

    where, name = check_strategy_text(spec, what)
    try:
        if where.endswith(".py"):
            path = Path(where)
            s = importlib.util.spec_from_file_location(f"obook_strategy_{path.stem}", path)
            module = importlib.util.module_from_spec(s)
            s.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except ObookError as e:     # obook refused something the module made (a numba_strategy): say which file
        said = f"{what}: {where} failed to load: {e}"
        try:
            again = type(e)(said)
        except TypeError:       # (an error class of other arguments)
            again = ObookError(said)
        raise again from e
    except (Exception, SystemExit) as e:   # the user's module: whatever it raises while it loads
        here = f"{where.replace('.', os.sep)}.py"
        hint = (f" ({here} is a file here: give {here}:{name})"
                if isinstance(e, ModuleNotFoundError) and e.name == where and Path(here).is_file() else "")
        raise ObookError(f"{what}: {where} failed to load: {raised(e)}{hint}") from e
    try:
        obj = getattr(module, name)
    except AttributeError as e:
        has = _strategy_names(module)
        said = f" (its strategies may be: {', '.join(has[:10])}{' ...' if len(has) > 10 else ''})" if has else ""
        raise ObookError(f"{what}: {where} has no {name}{said}") from e
    if isinstance(obj, type):
        try:
            obj = obj()
        except (Exception, SystemExit) as e:
            raise ObookError(f"{what}: {where}:{name}() failed: {raised(e)} "
                             "(a strategy class is made without arguments)") from e
    from .fast_strategy import NumbaStrategy

    if not (isinstance(obj, (NumbaStrategy, *accept)) or callable(obj)
            or any(hasattr(obj, m) for m in ("on_book", "on_order", "on_timer"))):
        raise ObookError(f"{what}: {where}:{name} is no strategy ({type(obj).__name__}: it has no on_book, "
                         "on_order or on_timer and is not callable)")
    return obj


def run_listen(a: dict) -> None:
    import typer

    from ..interrupts import stopping
    from .latency import report_table, report_text
    from .listener import Listener
    from .sinks import close_sinks, open_sinks

    tables = tuple(t.strip() for t in a["tables"].split(",") if t.strip() and t.strip() != "none")
    kind = a["to"].value
    addresses, tickers = _check_options(a, tables, kind)     # all of it before the venue's login
    ttt = gw = None
    if a["strategy"]:
        from .gateway import Gateway
        from .risk import RiskGate
        from .strategy import TickToTrade

        strategy = load_strategy(a["strategy"])
        from .fast_strategy import NumbaStrategy
        from .strategy import check_live_strategy

        check_live_strategy(strategy, f"--strategy {a['strategy']}")

        if isinstance(strategy, NumbaStrategy):    # one the loop cannot call: refused before the venue's login
            if a["loop"].value == "compiled":
                strategy.address
            else:
                strategy.check_result()
        gw = Gateway(*parse_address(a["venue"], "--venue", False), username=a["venue_username"],
                     password=a["venue_password"]) if a["venue"] else None
        ttt = TickToTrade(strategy, tickers,
                          RiskGate(max_qty=a["max_qty"], max_orders_per_second=a["max_rate"], band_bps=a["band_bps"]), gw)
    try:
        with gw.heartbeats() if gw is not None else contextlib.nullcontext():   # logged in, loading the loop
            lst = Listener(addresses["--line-a"], addresses["--line-b"], addresses.get("--request"), tables=tables,
                           tick_to_trade=ttt, on_gap=a["on_gap"].value, request_timeout=a["timeout"],
                           retries=a["retries"], gap_wait=a["gap_wait"], idle_timeout=a["idle_timeout"],
                           session=a["session"], interface=a["interface"], loop=a["loop"].value, spin=a["spin"],
                           cpu=a["cpu"], rcvbuf=a["rcvbuf"], spin_us=a["spin_us"],
                           **({"realtime": a["realtime"]} if a["realtime"] else {}))
    except BaseException:
        if gw is not None:     # logged in: log out
            gw.close()
        raise
    try:
        sinks = {} if kind == "text" else open_sinks(kind, a["output"], tables, lst.schema, a["interval"])
        if kind == "parquet" and not tables:    # no tables, but line_stats.parquet (and gaps.parquet) go there
            try:
                Path(a["output"]).mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise ObookError(f"{a['output']}: cannot write the live tables there: {e.strerror or e}") from None
    except BaseException:
        lst.close()
        raise
    typer.echo(f"listening: line A {a['line_a']}, line B {a['line_b']}"
               + (f" (receive buffers {lst.rcvbuf[0]} and {lst.rcvbuf[1]} bytes)" if hasattr(lst, "rcvbuf") else ""),
               err=True)
    try:
        with stopping(lst.stop):    # Ctrl-C ends the session: what was received still goes to the tables
            if kind == "text":
                from ..output import text_lines

                out = sys.stdout.buffer
                try:
                    for t, batch in lst.table_batches():
                        if t == "bbo":
                            out.write(text_lines(batch))
                            out.flush()
                except BrokenPipeError:   # `obook listen | head`: a quiet end
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                except OSError as e:      # `> /dev/full`: the session ends, the error names stdout
                    from ..errors import OutputError

                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                    raise OutputError(f"<stdout>: write failed: {e.strerror or e}") from None
            else:
                for t, batch in lst.table_batches():
                    sinks[t].write(batch)
    finally:
        try:
            close_sinks(sinks)
        finally:
            if kind == "parquet":      # beside the tables: what each line delivered, what was lost
                import pyarrow.parquet as pq

                pq.write_table(lst.line_stats_table(), Path(a["output"]) / "line_stats.parquet")
                lost = lst.feed.lost       # the compiled loop's: a method
                if lost() if callable(lost) else lost:
                    pq.write_table(lst.gaps_table(), Path(a["output"]) / "gaps.parquet")
            st = lst.stats()
            typer.echo("listen: " + ", ".join(f"{k} {v}" for k, v in st.items() if k != "lines"), err=True)
            for line, s in st["lines"].items():
                typer.echo(f"  line {line}: " + (", ".join(f"{k} {v}" for k, v in s.items() if v) or "nothing"), err=True)
            if ttt is not None:
                typer.echo(f"orders: {len(ttt.orders)}, sha256 {ttt.digest()}", err=True)
            rejected = gw.rejections() if gw is not None else None
            if rejected:
                typer.echo(rejected, err=True)
            if gw is not None and gw.ended:
                typer.echo(f"venue {gw.where}: closed the connection; {gw.unsent} orders after it not sent", err=True)
            if a["latency"] or a["latency_output"]:
                hists = lst.latency()
                if a["latency"]:
                    typer.echo(report_text(hists), err=True)
                if a["latency_output"]:
                    import pyarrow.parquet as pq

                    try:
                        pq.write_table(report_table(hists), a["latency_output"])
                    except OSError as e:
                        raise ObookError(f"--latency-output {a['latency_output']}: cannot write it: {e}") from None


def _check_options(a: dict, tables: tuple, kind: str) -> tuple[dict, list | None]:
    """The addresses (option -> (host, port)) and the tickers of ``obook listen``'s options,
    or an ObookError for options that cannot go together, before anything is opened."""
    addresses = {o: parse_address(a[k], o, False, ipv6=False) for o, k in
                 (("--line-a", "line_a"), ("--line-b", "line_b"), ("--request", "request")) if a[k]}
    distinct_addresses(addresses)
    check_interface(a["interface"])
    if a["venue"]:
        from .accounts import check_login_fields

        parse_address(a["venue"], "--venue", False)
        check_login_fields(a["venue_username"], a["venue_password"], ("--venue-username", "--venue-password"))
    for option in ("venue", "tickers"):
        if a[option] is not None and not a["strategy"]:
            raise ObookError(f"--{option} is the strategy's: give --strategy FILE.py:NAME too")
    tickers = None
    if a["tickers"] is not None:
        tickers = [t.strip() for t in a["tickers"].split(",") if t.strip()]
        if not tickers:
            raise ObookError(f"--tickers {a['tickers']!r}: no ticker in it (leave it out for all)")
        for t in tickers:
            if len(t) > 8 or not t.isascii():
                raise ObookError(f"--tickers: {t!r} is no ITCH stock symbol (8 ASCII characters at most)")
    from ..engine.tables import TABLES

    if not tables and not any(t.strip() == "none" for t in a["tables"].split(",")):
        raise ObookError(f"--tables {a['tables']!r}: no table in it (--tables none: the loop alone, no tables)")
    unknown = [t for t in tables if t not in TABLES]
    if unknown:
        raise ObookError(f"unknown table(s) {', '.join(unknown)}; choose from {', '.join(TABLES)} (or none)")
    if kind == "text" and a["output"] is not None:
        raise ObookError(f"--to text prints the BBO on stdout; --output {a['output']} is for --to parquet, "
                         "arrow or duckdb")
    if kind == "text" and set(tables) - {"bbo"}:
        raise ObookError(f"--to text prints the BBO only; write --tables {','.join(tables)} with --to parquet, "
                         "arrow or duckdb")
    if kind != "text" and a["output"] is None:
        raise ObookError(f"--to {kind} needs --output")
    if kind != "text":
        from .sinks import check_place

        check_place(kind, Path(a["output"]), tables)     # a place the sinks would refuse: before the venue's login
    from .hotpath import check_cpu, check_realtime

    check_cpu(a["cpu"])
    from .listener import check_loop_options

    check_loop_options(a["loop"].value, {n: a[n] for n in ("spin", "spin_us", "cpu", "rcvbuf", "realtime")})
    check_realtime(a["realtime"])       # the machine may refuse SCHED_FIFO: now, not in the loop's thread
    return addresses, tickers
