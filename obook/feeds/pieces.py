"""Where each file of a feed in pieces begins, so that an error names the file at fault.

A feed given as several files read one after the other (``("day.1", "day.2")``) is numbered
as one feed: the ``seq`` column and an error's record number count from the first file's
first record. :class:`Pieces` keeps, for each file, the number of the first record that
starts in it and its first byte's offset in the joined feed; :meth:`Pieces.locate` turns an
error of the joined feed into one that names the file, the record's number in that file
and, in its reason, the record's number in the feed. A feed merged from several files in
its own order (Shenzhen vendor CSV) gives its ``origin`` instead: the file and line of a
record of the merged feed.
"""

from __future__ import annotations

import bisect

from ..errors import TRUNCATED_AT, FeedError, TruncatedFeedError


class Pieces:
    """The files of one feed read one after the other, in order (see the module)."""

    def __init__(self, feed: str):
        self.feed = feed              # how errors name the joined feed ("a+b")
        self.paths: list[str] = []
        self.first_records: list[int] = []
        self.offsets: list[int] = []
        #: of a feed merged from several files in its own order (a format's merge hook):
        #: record number -> (path, line in it), or None
        self.origin = None

    def add(self, path: str, first_record: int, offset: int) -> None:
        """File ``path`` begins at byte ``offset`` of the joined feed and its first whole
        record is record ``first_record`` of the feed."""
        self.paths.append(path)
        self.first_records.append(first_record)
        self.offsets.append(offset)

    def piece_of(self, record: int) -> int:
        """The index of the file in which record ``record`` of the feed starts."""
        return max(0, bisect.bisect_right(self.first_records, record) - 1)

    def locate(self, error):
        """``error`` (of the joined feed) naming the file of its record; other errors, and
        errors of a feed of one file, as they are."""
        if type(error) not in (FeedError, TruncatedFeedError) or error.record is None:
            return error
        if self.origin is not None:
            return self._merged(error)
        if len(self.paths) < 2:
            return error
        i = self.piece_of(error.record)
        record = error.record - self.first_records[i] + 1
        where = f"{error.unit} {error.record} of {self.feed}"
        if type(error) is TruncatedFeedError:
            offset = error.offset - self.offsets[i]
            rest = error.after_offset()     # (the framer's words: the offset in the file)
            reason = error.reason if rest is None else f"{TRUNCATED_AT}{offset}{rest}"
            out = TruncatedFeedError(self.paths[i], record, offset, f"{reason} ({where})", unit=error.unit)
        else:
            out = FeedError(self.paths[i], record, f"{error.reason} ({where})", unit=error.unit)
        return _joined(out, self.feed, error)

    def _merged(self, error):
        """``error`` of a merged feed naming the file and line of its record (an error a file's
        reader raised names them already)."""
        found = self.origin(error.record) if error.path == self.feed else None
        if found is None:
            error.feed = self.feed      # a file's error, one of the feed's files: it names the file
            return error
        out = FeedError(found[0], found[1], f"{error.reason} ({error.unit} {error.record} of the merged feed)",
                        unit="line")
        return _joined(out, self.feed, error)


def _joined(out: FeedError, feed: str, error: FeedError) -> FeedError:
    """``out`` (naming a file of ``feed``) with the feed's numbers of ``error``: its record's
    (the rows' ``seq``) and, of a feed whose records are its lines in another order, the line's."""
    out.feed, out.feed_record = feed, error.feed_record
    if hasattr(error, "feed_line"):
        out.feed_line = error.feed_line
    return out
