"""The venue's accounts: SoupBinTCP usernames (6 characters at most) and passwords (10),
given on the command line or in a file of ``username:password`` lines (``#`` starts a
comment, blank lines are skipped)."""

from __future__ import annotations

import hmac
from pathlib import Path

from ..errors import ObookError

USERNAME_WIDTH, PASSWORD_WIDTH = 6, 10
ACCOUNTS_MAX_BYTES = 1 << 20      # read no further (a device or a pipe that never ends)


def check_account(username: str, password: str, where: str = "account", give: str = "") -> tuple[str, str]:
    """The account as the login request carries it (stripped), or ``ObookError`` (``give``:
    said after an empty password, how to give one)."""
    user, pw = username.strip(), password.strip()
    if not user:
        raise ObookError(f"{where}: an empty username")
    for text, width, what in ((user, USERNAME_WIDTH, "username"), (pw, PASSWORD_WIDTH, "password")):
        if not text.isascii() or not text.isprintable():
            raise ObookError(f"{where}: the {what} must be printable ASCII")
        if len(text) > width:
            raise ObookError(f"{where}: the {what} {'' if what == 'password' else repr(text) + ' '}"
                             f"is longer than {width} characters")
    if not pw:      # a blank password field would log anyone in who knows the username
        raise ObookError(f"{where}: an empty password for {user!r}{give}")
    return user, pw


def check_login_fields(username: str, password: str, options=("username", "password")) -> None:
    """ObookError naming the option (``options``: what the username and the password were
    given as) of a login field SoupBinTCP cannot carry; the password is not repeated."""
    for text, width, option in ((username, USERNAME_WIDTH, options[0]), (password, PASSWORD_WIDTH, options[1])):
        if not text.isascii() or not text.isprintable() or len(text) > width:
            raise ObookError(f"{option}: {width} printable ASCII characters at most (a SoupBinTCP login's field)")


def read_accounts(path) -> dict[str, str]:
    """username -> password of an accounts file."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(ACCOUNTS_MAX_BYTES + 1)
    except OSError as e:
        raise ObookError(f"{path}: cannot read the accounts: {e.strerror or e}") from e
    if len(raw) > ACCOUNTS_MAX_BYTES:
        raise ObookError(f"{path}: the accounts are larger than {ACCOUNTS_MAX_BYTES} bytes")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as e:
        raise ObookError(f"{path}: the accounts are not ASCII text (byte {e.start})") from e
    accounts: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, pw = line.partition(":")
        if not sep:
            raise ObookError(f"{path}: line {number}: give username:password")
        user, pw = check_account(user, pw, f"{path}: line {number}")
        if user in accounts:
            raise ObookError(f"{path}: line {number}: username {user!r} given twice")
        accounts[user] = pw
    if not accounts:
        raise ObookError(f"{path}: no accounts")
    return accounts


def authorised(accounts: dict[str, str], username: str, password: str) -> bool:
    """Whether the login may go on: no accounts (an open venue) or a matching password
    (compared in constant time)."""
    if not accounts:
        return True
    expected = accounts.get(username)
    return hmac.compare_digest((expected if expected is not None else "\0").encode(), password.encode()) \
        and expected is not None
