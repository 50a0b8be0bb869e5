"""The exceptions obook raises: one base class, a few precise kinds."""

from __future__ import annotations


class ObookError(Exception):
    """Base class of every error obook raises on purpose. Its message is text every consumer
    can carry (see :func:`printable`): a file name's undecodable bytes would otherwise turn
    it into a UnicodeEncodeError where pyarrow or DuckDB hand it to C."""

    def __init__(self, *args):
        super().__init__(*(printable(a) if isinstance(a, str) else a for a in args))


def printable(text: str) -> str:
    """``text`` as valid UTF-8 without NUL bytes: a file name's undecodable bytes (os.fsdecode's
    surrogates) and NUL bytes written as ``\\xff`` escapes."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace").replace("\0", "\\x00")


def name_as_given(e: ObookError, names: dict) -> None:
    """Put the files' names as the user gave them (``names``, by absolute path) in for their
    absolute paths in error ``e``'s text and its ``path`` and ``feed``: the front ends that
    hand a reader absolute paths name the files in their errors as they were given."""
    text = str(e)
    # longest first: a path that is another's beginning is not put in for it
    for full in sorted(names, key=len, reverse=True):
        text = text.replace(full, names[full])
    if text == str(e):
        return
    e.args = (text,)
    for key in ("path", "feed"):
        value = getattr(e, key, None)
        if isinstance(value, str):
            setattr(e, key, names.get(value, value))


def open_as_given(open_reader, names: dict) -> "AsGiven":
    """``open_reader()`` as an :class:`AsGiven`: its errors, opening and reading, name the
    files as the caller gave them (``names``: by their absolute paths)."""
    try:
        return AsGiven(open_reader(), names)
    except ObookError as e:
        name_as_given(e, names)
        raise


class AsGiven:
    """A table's reader whose errors name its files as the caller gave them (``names``: by
    their absolute paths, which the reader was given): the SQL macros' and the polars scans'."""

    def __init__(self, reader, names: dict):
        self.reader = reader
        self.schema = reader.schema
        self.names = names

    def read_next_batch(self):
        try:
            return self.reader.read_next_batch()
        except ObookError as e:
            name_as_given(e, self.names)
            raise

    def close(self):
        close = getattr(self.reader, "close", None)
        if close is not None:
            close()


class FeedError(ObookError):
    """A record of the feed fails (bad frame, unknown order, bad field ...).

    Carries the feed's path, the record number (ITCH: 1-based message number,
    CSV: physical line number) and the reason. Every row caused by earlier
    records has been delivered before this is raised. Of a feed read from several files
    one after the other, ``path`` and ``record`` name the file at fault and the record's
    number in it, ``feed`` and ``feed_record`` the joined feed and the record's number in
    it (the rows' ``seq``); otherwise they are the same. A feed whose records are its lines
    put in another order (the Shanghai log) names a record's line in ``record`` and the
    line's number in the joined feed in ``feed_line`` (of its book errors).
    """

    def __init__(self, path: str, record: int | None, reason: str, *, unit: str = "message"):
        self.path = self.feed = str(path)
        self.record = self.feed_record = record
        self.reason = reason
        self.unit = unit
        where = f"{unit} {record}" if record is not None else "feed"
        super().__init__(f"{self.path}: {where}: {reason}")

    def __reduce__(self):
        # its arguments are not its args: rebuilt from its message and attributes, so that it
        # reaches the caller whole from a worker process
        return _rebuilt, (type(self), self.args, self.__dict__.copy())


def _rebuilt(cls, args, state):
    e = Exception.__new__(cls)
    e.args = args
    e.__dict__.update(state)
    return e


#: how a truncated record's reason starts, its byte offset next
TRUNCATED_AT = "truncated record at byte offset "


class TruncatedFeedError(FeedError):
    """The feed ends in the middle of a record."""

    def __init__(self, path: str, record: int | None, offset: int, reason: str | None = None, *,
                 unit: str = "message"):
        self.offset = offset
        super().__init__(path, record, reason or f"{TRUNCATED_AT}{offset}", unit=unit)

    def after_offset(self) -> str | None:
        """What the reason says after a plain start, ``truncated record at byte offset N`` (N
        this error's offset), for a caller that words the offset otherwise (of another file,
        of the decompressed feed); None for a reason worded otherwise."""
        head = f"{TRUNCATED_AT}{self.offset}"
        rest = self.reason[len(head):]
        return rest if self.reason.startswith(head) and not rest[:1].isdigit() else None


class FormatError(ObookError):
    """No registered feed format can be told for a feed: ``feed`` names it, ``reason`` says
    why (its name and first bytes match none, a stream is empty), ``choices`` are the formats
    one can name. The message ends with how to name one; :meth:`hinted` gives the same error
    worded for another front end (the command line's ``--format``, a pipeline's key)."""

    def __init__(self, feed: str, reason: str, choices, hint: str = "pass format="):
        self.feed, self.reason, self.choices, self.hint = str(feed), reason, tuple(choices), hint
        named = f" ({', '.join(self.choices)})" if self.choices else ""
        super().__init__(f"{self.feed}: {reason}; {hint}{named}")

    def hinted(self, hint: str, choices=None) -> "FormatError":
        return FormatError(self.feed, self.reason, self.choices if choices is None else choices, hint)

    def __reduce__(self):
        return _rebuilt, (type(self), self.args, self.__dict__.copy())


class WorkerError(ObookError):
    """A worker process died or failed; the replay was stopped."""


class OutputError(ObookError):
    """Writing the result failed (disk full, closed pipe ...)."""


class StrategyError(ObookError):
    """A strategy raised, returned what is no list of orders, or an order that cannot be sent:
    the backtest or the live run stopped there. ``traceback``: the strategy's; ``partial``: a
    backtest's tables so far (None elsewhere)."""

    def __init__(self, message, traceback_text: str = ""):
        super().__init__(message)
        self.traceback = traceback_text
        self.partial = None
