"""Checks of option values the front ends share."""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import numbers
import re


def is_whole(value) -> bool:
    """An integer, or a finite number equal to one (``5.0``, ``Decimal('5')``); never a bool or
    text (``'5'``), so that an option given 1.5 or '5' is an error, not rounded or parsed."""
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Integral):
        return True
    return isinstance(value, (numbers.Real, decimal.Decimal)) and math.isfinite(value) and value == int(value)


def whole_int64(values):
    """``values`` (an array or a sequence) as an int64 array when they are whole numbers of 64
    bits (integers, or floats without a fraction), else None: 1.5 or '2' is never truncated or
    parsed."""
    import numpy as np

    try:
        a = np.asarray(values)
        with np.errstate(invalid="ignore"):
            as_int = a.astype(np.int64)
            exact = a.dtype.kind in "iub" or bool((as_int == a).all())
    except (TypeError, ValueError, OverflowError):
        return None
    return as_int if exact else None


def is_integer(value) -> bool:
    """An integer (a numpy integer too): never a bool, a float equal to one (``5.0``, ``1e9``) or
    text (``'5'``), so that a count, a step or a seed given so is an error, as a count option is."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def not_int(value, shown=repr) -> str:
    """``value``, refused by an option that takes an int, as its error shows it (by ``shown``):
    a float says it is one (``7.0 (a float)``), so that 7.0 or 1e9, whole numbers refused for
    their type, do not read as refused for a fraction."""
    text = shown(value)
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        return f"{text} (a float)"
    return text


def check_whole_at_least_1(name: str, value) -> None:
    """``value`` is an integer (never a bool, a float or text) of at least 1, else ``ObookError``."""
    import numpy as np

    from .errors import ObookError

    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise ObookError(f"{name} must be an integer, not {not_int(value)}")
    if value < 1:
        raise ObookError(f"{name} must be at least 1, got {value}")


#: the largest number of seconds (about 31 years) and of busy-polling microseconds (a second)
#: a live option takes: the loops count time in int64 nanoseconds
MAX_SECONDS = 1e9
MAX_SPIN_US = 1e6


def check_number(name: str, value, lo: float, hi: float, *, whole: bool = False, above: bool = False):
    """``value`` is a finite number (never a bool or text; ``whole``: an integer) from ``lo``
    (above it when ``above``) to ``hi`` (which may be infinite), else ``ObookError`` naming
    ``name``: the values the loops turn into 64-bit nanoseconds or counts stay in range."""
    from .errors import ObookError

    kind = "an integer" if whole else "a number"
    ok = is_integer(value) if whole else (isinstance(value, numbers.Real) and not isinstance(value, bool)
                                          and math.isfinite(value))
    if not ok or not (lo < value if above else lo <= value) or not value <= hi:
        if math.isinf(hi):
            bounds = f"{'above' if above else 'of at least'} {_shown(lo)}"
        else:
            bounds = f"{'above' if above else 'from'} {_shown(lo)}{' and at most' if above else ' to'} {_shown(hi)}"
        raise ObookError(f"{name} must be {kind} {bounds}, not {not_int(value) if whole else repr(value)}")
    return value



def _shown(x: float) -> str:
    """A bound as users write it: 1,000,000,000 rather than 1e+09, 0.01 as itself."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def check_seed(seed, name: str = "seed") -> int:
    """A random seed (the latency draws'): an integer from 0 to 2^63 - 1, else ``ObookError``
    naming ``name`` (the command line's ``--seed``)."""
    from .errors import ObookError

    if not is_integer(seed) or not 0 <= seed < 1 << 63:
        raise ObookError(f"{name} must be an integer from 0 to {(1 << 63) - 1}, not {not_int(seed)}")
    return int(seed)


def check_flag(name: str, value) -> bool:
    """A yes/no option: ``True`` or ``False`` (a numpy bool too), never 0, 1 or text, so that
    ``'false'`` or ``0`` is an error instead of read by its truth."""
    import numpy as np

    from .errors import ObookError

    if not isinstance(value, (bool, np.bool_)):
        raise ObookError(f"{name} must be True or False, not {value!r}")
    return bool(value)


def check_choice(name: str, value, choices) -> str:
    """An option naming one of ``choices`` (lower-case words: ``on_error``'s raise / skip ...),
    in any case (``'Skip'``, ``'SKIP'``); as the choice, else ``ObookError`` naming the option
    and listing the choices. ``''`` is no choice: an option left out is None, not empty."""
    from .errors import ObookError

    chosen = value.lower() if isinstance(value, str) else None
    if chosen not in choices:
        raise ObookError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return chosen


def check_format_name(format) -> None:
    """``format``: None, a registered format's name (text) or a FeedFormat."""
    from .errors import ObookError
    from .feeds import FeedFormat

    if format is not None and not isinstance(format, (str, FeedFormat)):
        raise ObookError(f"format must be a feed format's name (text such as 'itch'), not {format!r}")


def check_tickers(tickers):
    """``tickers``: None, text (``'AAA,BBB'``) or a collection of texts (a list, tuple, set or
    any other iterable, read once here: the replay reads it more than once); the same, a
    collection as a tuple. A number, bytes or an item that is not text is ``ObookError``."""
    if tickers is None or isinstance(tickers, str):
        return tickers
    return check_names("tickers", tickers, "a list of tickers (['AAPL', 'MSFT']) or text", "text")


def ticker_names(tickers, name: str = "--tickers / tickers=") -> list[str] | None:
    """``tickers`` (see :func:`check_tickers`) as a list of names in the order given (stripped,
    each once); None for None. Naming none ('', ',', []) is ``ObookError`` naming ``name``: it
    is no way to say every ticker."""
    from .errors import ObookError

    tickers = check_tickers(tickers)
    if tickers is None:
        return None
    names = list(dict.fromkeys(t.strip() for t in (tickers.split(",") if isinstance(tickers, str) else tickers)
                               if t.strip()))
    if not names:
        raise ObookError(f"{name}: no ticker given")
    return names


def check_feed_path(source, what: str = "feed path") -> None:
    """A feed argument: a path (text or ``os.PathLike``), a list or tuple of them, a binary
    stream (``read`` / ``readinto``, a socket) or a feed object (``open_feed``, e.g.
    ``obook.lines``). Anything else, an empty path or a list of non-paths is ``ObookError``
    naming the argument and what it was given."""
    import io
    import os
    import socket

    from .errors import ObookError

    def one(p):
        if not isinstance(p, (str, os.PathLike)) or not isinstance(os.fspath(p), str):
            raise ObookError(f"the {what} must be text (a file, a glob pattern), a path or a list or tuple of "
                             f"them, not {p!r}")
        check_path(f"the {what}", p)

    if isinstance(source, io.TextIOBase):
        raise ObookError(f"the feed is a text stream ({getattr(source, 'name', type(source).__name__)!r}): "
                         "open the feed in binary mode ('rb')")
    if isinstance(source, socket.socket) or any(hasattr(source, a) for a in ("read", "readinto", "open_feed")):
        if getattr(source, "closed", False) is True:
            raise ObookError(f"the feed stream {getattr(source, 'name', type(source).__name__)!r} is closed")
        return
    if isinstance(source, (list, tuple)):
        for p in source:
            one(p)
        return
    one(source)


def check_names(name: str, value, whole: str = "a name or a list of names", item: str = "names (text)") -> tuple:
    """A choice of several names (tables, instruments): one text, or a collection of texts
    (any iterable, read once); as a tuple. One text is one name, never its letters.
    ``whole`` / ``item``: what the error says the value / each item must be."""
    from .errors import ObookError

    if isinstance(value, str):
        return (value,)
    if isinstance(value, (bytes, bytearray)) or not hasattr(value, "__iter__"):
        raise ObookError(f"{name} must be {whole}, not {value!r}")
    items = tuple(value)
    bad = [v for v in items if not isinstance(v, str)]
    if bad:
        raise ObookError(f"{name} must be {item}, not {bad[0]!r} (in {list(items)!r})")
    return items


def check_progress(progress) -> None:
    """``progress``: None or a function of the bytes of the feed read so far."""
    from .errors import ObookError

    if progress is not None and not callable(progress):
        raise ObookError(f"progress must be a function of the bytes read, not {progress!r}")


def check_workers(workers, default: int | None = None) -> int | None:
    """``workers`` of a front end: None (``default``), or an integer from 1 to 64."""
    from .errors import ObookError

    if workers is None:
        return default
    check_whole_at_least_1("workers", workers)
    if workers > 64:
        raise ObookError(f"workers must be between 1 and 64, not {workers}")
    return int(workers)


def check_path(name: str, path) -> str:
    """A path given as text or ``os.PathLike``: not empty and without a NUL character (which the
    operating system would cut the name at); as text, else ``ObookError`` naming ``name``."""
    import os

    from .errors import ObookError

    text = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(text, str):
        raise ObookError(f"{name} must be a path (text or pathlib.Path), not {path!r}")
    if not text:
        raise ObookError(f"{name} is empty")
    if "\0" in text:
        raise ObookError(f"{name} {text!r} holds a NUL character, which no file name can")
    return text


def no_file(path, what: str = "feed") -> str:
    """Why ``path``, which names no file one can reach, is none: missing (``no such feed
    file``), or the system's reason (a loop of symbolic links, a folder one may not enter ...)."""
    import errno
    import os

    try:
        os.stat(path)
    except OSError as e:
        if e.errno not in (errno.ENOENT, None) and e.strerror:
            return f"{os.fspath(path)}: {e.strerror[:1].lower()}{e.strerror[1:]} (no {what} file reached)"
    return f"{os.fspath(path)}: no such {what} file"


def not_a_file(path, what: str = "feed", stream: bool | None = None) -> str:
    """Why ``path``, which is there but is no regular file, is no ``what`` file: a directory,
    or another kind of node (a device, a named pipe, a socket). ``stream``: whether the
    caller reads a stream in its place (a named pipe's error then says how; default: a feed's
    readers do)."""
    import os
    import stat

    if os.path.isdir(os.path.expanduser(path)):
        return f"{os.fspath(path)}: a directory, not {a_or_an(what)} file"
    try:
        fifo = stat.S_ISFIFO(os.stat(os.path.expanduser(path)).st_mode)
    except OSError:
        fifo = False
    if fifo:        # its bytes are a stream, which a feed reader takes
        how = ("; read it as a stream (open(path, 'rb') in Python, stdin with --format on the command line)"
               if (what == "feed" if stream is None else stream) else "")
        return f"{os.fspath(path)}: a named pipe (FIFO), not {a_or_an(what)} file{how}"
    return f"{os.fspath(path)}: not a regular file"


def check_orders_path(orders) -> None:
    """An order entry given by path (text or ``os.PathLike``) names a file: not empty, no NUL.
    A table (Arrow, polars, DuckDB) passes as it is."""
    import os

    if isinstance(orders, (str, os.PathLike)):
        check_path("the order file's path", orders)


def check_levels(levels, most: int = 50) -> int:
    """``levels``: price levels a side, a whole number (a numpy integer too; never a bool or
    a float) from 1 to ``most``; as an int."""
    import numpy as np

    from .errors import ObookError

    if isinstance(levels, (bool, np.bool_)) or not isinstance(levels, (numbers.Integral, np.integer)):
        raise ObookError(f"levels must be an integer between 1 and {most}, not {levels!r}")
    if not 1 <= levels <= most:
        raise ObookError(f"levels must be between 1 and {most}, not {levels}")
    return int(levels)


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def check_date(date) -> _dt.date | None:
    """A session date: None, text ``YYYY-MM-DD``, a ``datetime.date``, or a datetime (numpy's
    too) at midnight with no time zone. Other text (``20200102``, ISO weeks), a number, a
    time of day or a zone (which would name another day in the feed's zone) is ``ObookError``."""
    import numpy as np

    from .errors import ObookError

    def bad(why: str = "not a day YYYY-MM-DD"):
        return ObookError(f"--date / date= {date!r}: {why}")

    if date is None:
        return None
    if isinstance(date, np.datetime64):
        if np.isnat(date) or date != date.astype("datetime64[D]"):
            raise bad("not a day YYYY-MM-DD (a time of day is no session date)")
        return _dt.date.fromisoformat(str(date.astype("datetime64[D]")))
    if isinstance(date, _dt.datetime):
        if date.tzinfo is not None or date.time() != _dt.time(0):
            raise bad("a time of day or a time zone is no session date; give the day (YYYY-MM-DD)")
        return date.date()
    if isinstance(date, _dt.date):
        return date
    if not isinstance(date, str) or not _DAY.fullmatch(date):
        raise bad()
    try:
        return _dt.date.fromisoformat(date)
    except ValueError:
        raise bad() from None



def a_or_an(word: str) -> str:
    """``word`` after its indefinite article: ``a pitch``, ``an itch``, ``an int``; a letter
    or a word in capitals is read letter by letter: ``an S``, ``an MBO``, ``a CSV``."""
    spelled = len(word) == 1 or word.isupper()
    return f"{'an' if word[:1].lower() in ('aefhilmnorsx' if spelled else 'aeiou') else 'a'} {word}"


#: the formats whose names are read letter by letter (``an sse feed``, ``a csv feed``)
_SPELLED = ("csv", "sse", "szse")


def a_feed(name: str) -> str:
    """``a pitch feed``, ``an itch feed``, ``an sse feed``: a format's feed by its name, in a
    sentence."""
    if name.split("-")[0] in _SPELLED:
        return f"{a_or_an(name.upper())[:-len(name)]}{name} feed"
    return f"{a_or_an(name)} feed"


def raise_fd_limit(wanted: int) -> int:
    """Raise this process's soft descriptor limit towards ``wanted``; the limit obtained."""
    try:
        import resource
    except ImportError:         # not a POSIX system: nothing to raise
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            if target > soft:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                soft = target
        except (ValueError, OSError):
            pass
    return wanted if soft == resource.RLIM_INFINITY else soft


def put_back_fd_limit(soft) -> None:
    """The soft descriptor limit set back to ``soft`` (None: as it is), the hard one kept."""
    if soft is None:
        return
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    except (ValueError, OSError):       # (a limit below the files open now: kept raised)
        pass
