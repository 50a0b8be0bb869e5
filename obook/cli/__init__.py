"""The ``obook`` command line: one small module per command group."""

from __future__ import annotations

import logging
import signal
import sys

import typer

from ..errors import FeedError, ObookError
from . import bbo as _bbo
from . import convert as _convert
from . import gen as _gen
from . import lobster as _lobster
from . import match as _match
from . import pipeline as _pipeline
from .sql import sql as _sql

app = typer.Typer(
    name="obook",
    help="Replay exchange market-data feeds (Nasdaq ITCH 5.0, CSV order feeds) through limit "
         "order books, and write the best bid/offer and more as text, CSV, Parquet or Arrow.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("bbo")(_bbo.bbo)
app.command("convert")(_convert.convert)
app.command("sql")(_sql)
app.command("lobster")(_lobster.lobster)
app.command("match")(_match.match)
app.add_typer(_gen.app, name="gen")
app.add_typer(_pipeline.app, name="pipeline")


def _terminated(signum, frame):
    # SIGTERM (kill, a service manager): unwind like Ctrl-C, so temp files and workers go
    raise SystemExit(128 + signum)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="obook: %(message)s", stream=sys.stderr)
    signal.signal(signal.SIGTERM, _terminated)
    try:
        app()
    except FeedError as e:
        typer.echo(f"error: {e.unit} {e.record}: {e.reason}" if e.record is not None
                   else f"error: {e}", err=True)
        raise SystemExit(1) from None
    except ObookError as e:
        typer.echo(f"error: {e}", err=True)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise SystemExit(130) from None
