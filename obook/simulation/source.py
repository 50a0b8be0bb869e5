"""The feed a simulation replays: one feed, in one file or cut into several."""

from __future__ import annotations

import os


def feed_source(feed):
    """``feed`` as the replay takes it. A path, a stream or a feed object stays as given; a
    glob pattern, or a list or tuple of paths and patterns, is one feed: the tuple of its
    files in the order given (a pattern's files sorted). A pattern that matches no file, an
    empty list or an item that is no path is ``ObookError``."""
    from ..checks import check_feed_path
    from ..errors import ObookError
    from ..tables.open import expand, is_pattern

    check_feed_path(feed)
    if isinstance(feed, (list, tuple)):
        items = feed
    elif is_pattern(feed):
        items = (feed,)
    else:
        return feed
    files = tuple(f for item in items for f in (expand(item) if is_pattern(item) else [os.fspath(item)]))
    if not files:
        raise ObookError("no feed files given")
    return files


def feed_stamp(feed, format=None, date=None):
    """The :class:`obook.session.Stamp` of the replay of ``feed`` (as :func:`feed_source`
    gives it): ``timestamp`` when ``date`` is given or the feed has its own session date (a
    Nasdaq file name, an epoch format); the schemas of the tables before the run."""
    from ..feeds import resolve_format
    from ..session import session_date, stamp_of

    fmt = resolve_format(format, feed)
    return stamp_of(fmt, session_date(feed, date, fmt))
