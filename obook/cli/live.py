"""``obook send``, ``obook listen``, ``obook venue``: the live path on loopback or a LAN
(MoldUDP64 lines, re-requests, tick to trade over OUCH 5.0 / SoupBinTCP)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from ..checks import MAX_SECONDS, MAX_SPIN_US

A_HELP = "Line A, host:port (IPv4; a multicast group is joined)."
B_HELP = "Line B, host:port (IPv4)."
REQ_HELP = "The re-request server, host:port (UDP, IPv4)."


class Sink(str, Enum):
    text = "text"
    parquet = "parquet"
    arrow = "arrow"
    duckdb = "duckdb"


class Loop(str, Enum):
    compiled = "compiled"
    python = "python"


class OnGap(str, Enum):
    raise_ = "raise"
    skip = "skip"


def send(
    day: Path = typer.Argument(..., help="The day to send: an ITCH 5.0 BinaryFILE (plain, .gz or .zst)."),
    line_a: str = typer.Option("127.0.0.1:31001", "--line-a", help=A_HELP),
    line_b: str = typer.Option("127.0.0.1:31002", "--line-b", help=B_HELP),
    request: Optional[str] = typer.Option("127.0.0.1:31003", "--request", help=REQ_HELP + " Empty: none."),
    speed: float = typer.Option(0.0, "--speed", min=0, help="1: as recorded, N: N times faster, 0: as fast as possible."),
    rate: float = typer.Option(0.0, "--rate", min=0, help="With --speed 0: at most this many packets a second, each filled to 1400 bytes (0: no limit)."),
    message_rate: float = typer.Option(0.0, "--message-rate", min=0,
                                       help="With --speed 0: messages this many a second, evenly, each packet sent when its last "
                                            "message falls due, holding those due within --burst-us of its first (as a feed sends them)."),
    burst_us: float = typer.Option(50.0, "--burst-us", min=0,
                                   help="With --speed or --message-rate: a packet holds only the messages within this many µs of its first."),
    delay_b: float = typer.Option(0.0, "--delay-b", min=0, help="Line B sends each packet this many seconds after A."),
    drop_a: float = typer.Option(0.0, "--drop-a", min=0, max=1, help="Probability that line A loses a packet."),
    drop_b: float = typer.Option(0.0, "--drop-b", min=0, max=1, help="Probability that line B loses a packet."),
    reorder: float = typer.Option(0.0, "--reorder", min=0, max=1, help="Probability that a line sends a packet after the next one."),
    seed: int = typer.Option(0, "--seed", "-s", help="Seed of the drops and reordering."),
    session: str = typer.Option("OBOOK", "--session", help="MoldUDP64 session name (1 to 10 printable ASCII characters, no space first or last)."),
    heartbeat: float = typer.Option(0.5, "--heartbeat", min=0.01, max=MAX_SECONDS, help="Seconds of silence before a heartbeat."),
    interface: str = typer.Option("127.0.0.1", "--interface", help="Local IPv4 address of the interface that multicast lines use."),
    linger: float = typer.Option(5.0, "--linger", min=0, help="After the end of session, serve re-requests until none came for this many seconds."),
    cpu: Optional[int] = typer.Option(None, "--cpu", min=0, help="Pin the sending loop to this core."),
    spare_cpu: Optional[int] = typer.Option(None, "--spare-cpu", min=0, help="Paced sending: a second sending loop on this core; each packet goes out from the first loop to reach its time, so it is late only when both cores are away (a virtual machine's host takes a core for microseconds at a time). Both loops spin before each packet, so this takes a second core."),
    spin_us: float = typer.Option(1000.0, "--spin-us", min=0, max=MAX_SPIN_US, help="Paced sending: sleep until this many microseconds before each packet's time, then busy-wait."),
) -> None:
    """Send DAY as MoldUDP64 packets on lines A and B (a simulated exchange), then the end of
    session; answer MoldUDP64 re-requests. Prints the counts on stderr when done (or, stopped,
    what went out before), and paced (--speed, --rate, --message-rate) how late the packets went."""
    from ..feeds.mold.packets import check_session
    from ..live.hotpath import check_cpu
    from ..live.net import distinct_addresses, parse_address
    from ..live.send import Sender, SendOptions, read_messages
    from .bbo import one_feed_file

    check_session(session, "--session")
    check_cpu(cpu)
    check_cpu(spare_cpu, "--spare-cpu")
    places = {o: parse_address(t, o, False, ipv6=False) for o, t in
              (("--line-a", line_a), ("--line-b", line_b), ("--request", request)) if t}
    distinct_addresses(places)
    opts = SendOptions(places["--line-a"], places["--line-b"], places.get("--request"), session, speed, rate,
                       delay_b, drop_a, drop_b, reorder, seed, heartbeat, linger, interface=interface, cpu=cpu,
                       spin_us=spin_us, message_rate=message_rate, burst_us=burst_us, spare_cpu=spare_cpu)
    sender = Sender(read_messages(one_feed_file(day, "send")), opts)
    try:
        stats = sender.run()
    except (KeyboardInterrupt, SystemExit):     # stopped: what went out before
        typer.echo("sent before the stop: " + ", ".join(f"{k} {v}" for k, v in sender.stats.items()), err=True)
        raise
    typer.echo("sent: " + ", ".join(f"{k} {v}" for k, v in stats.items()), err=True)
    s = sender.lateness.summary()
    if s["count"] and (speed or rate or message_rate):     # unpaced, every packet is due at the start
        typer.echo(f"send lateness (ns): p50 {s['p50']:.0f}, p99 {s['p99']:.0f}, p99.9 {s['p99.9']:.0f}, "
                   f"max {s['max']:.0f}", err=True)


def listen(
    line_a: str = typer.Option("127.0.0.1:31001", "--line-a", help=A_HELP),
    line_b: str = typer.Option("127.0.0.1:31002", "--line-b", help=B_HELP),
    request: Optional[str] = typer.Option("127.0.0.1:31003", "--request", help=REQ_HELP + " Empty: none (gaps are given up)."),
    interface: str = typer.Option("127.0.0.1", "--interface", help="Local IPv4 address of the interface that multicast lines use."),
    session: Optional[str] = typer.Option(None, "--session", help="The MoldUDP64 session to follow; packets of others are counted and dropped (default: the first session whose packets form a stream)."),
    to: Sink = typer.Option(Sink.text, "--to", help="text: BBO lines on stdout; parquet: rolling files in --output (a directory); "
                                                    "arrow: a new Arrow IPC stream file (several tables: one a table, NAME-TABLE.arrow); "
                                                    "duckdb: append to tables of a database."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Directory, file or database of --to."),
    tables: str = typer.Option("bbo", "--tables", "-t", help="Comma-separated: bbo, trades, orders, depth; or none (the loop alone, no tables)."),
    interval: float = typer.Option(60.0, "--interval", min=0.001, help="Seconds per Parquet file (--to parquet)."),
    on_gap: OnGap = typer.Option(OnGap.raise_, "--on-gap", help="A range lost on both lines after the re-requests: raise (error, exit 1) or skip (count it, go on tolerant)."),
    timeout: float = typer.Option(0.2, "--request-timeout", min=0.001, max=MAX_SECONDS, help="Seconds to wait for a re-request's answer."),
    retries: int = typer.Option(3, "--retries", min=0, max=1_000_000, help="Re-requests of a gap after the first."),
    gap_wait: float = typer.Option(0.05, "--gap-wait", min=0, max=MAX_SECONDS, help="Seconds a gap may wait for the other line before it is re-requested."),
    idle_timeout: Optional[float] = typer.Option(None, "--idle-timeout", max=MAX_SECONDS, help="Stop with an error after this many seconds (above 0) without a packet of the session followed (packets of others do not count; default: wait until the end of session or Ctrl-C)."),
    latency: bool = typer.Option(False, "--latency", help="Print per-stage latency (p50, p99, p99.9, max) on stderr at the end."),
    latency_output: Optional[Path] = typer.Option(None, "--latency-output", help="Write the latency table to this Parquet file."),
    strategy: Optional[str] = typer.Option(None, "--strategy", help="FILE.py:NAME or module:NAME: a callable(top) -> list of obook.live.ouch.Order or None, called on every BBO change of --tickers (a class is instantiated without arguments), or a numba_strategy (run inside the compiled loop)."),
    tickers: Optional[str] = typer.Option(None, "--tickers", "-k", help="The strategy's instruments (comma-separated; default all)."),
    venue: Optional[str] = typer.Option(None, "--venue", help="Send the strategy's orders (OUCH 5.0 over SoupBinTCP) to this host:port (IPv6: [::1]:32001). A venue that closes the session is a warning: the listener goes on, the orders after it are counted, not sent."),
    venue_username: str = typer.Option("obook", "--venue-username", help="The username of the venue's login (6 printable ASCII characters at most)."),
    venue_password: str = typer.Option("", "--venue-password", envvar="OBOOK_VENUE_PASSWORD",
                                       help="The password of the venue's login (10 printable ASCII characters at most; default: the environment's OBOOK_VENUE_PASSWORD)."),
    max_qty: int = typer.Option(10_000, "--max-qty", min=0, max=2**32 - 1, help="Risk: largest order (shares)."),
    max_rate: int = typer.Option(1_000, "--max-orders-per-second", min=0, max=10_000_000,
                                 help="Risk: orders per second of feed time (the loop keeps this many stamps)."),
    band_bps: int = typer.Option(500, "--band-bps", min=0, max=1_000_000_000, help="Risk: price band around the best price (basis points)."),
    spin: bool = typer.Option(False, "--spin", help="Busy-poll the sockets (a core at 100%) instead of sleeping in poll()."),
    spin_us: float = typer.Option(0.0, "--spin-us", min=0, max=MAX_SPIN_US, help="Busy-poll the sockets this many microseconds after each datagram before sleeping in poll()."),
    cpu: Optional[int] = typer.Option(None, "--cpu", min=0, help="Pin the listening loop to this core."),
    realtime: int = typer.Option(0, "--realtime", min=0, max=99, help="Run the listening loop under SCHED_FIFO at this priority "
                                 "(1-99; needs CAP_SYS_NICE; with --spin it rests 100 µs each ms so the kernel never stops it)."),
    rcvbuf: int = typer.Option(8 << 20, "--rcvbuf", min=4096, max=2**31 - 1, help="Receive buffer asked for each line's socket (bytes; the granted size is reported)."),
    loop: Loop = typer.Option(Loop.compiled, "--loop", help="compiled (the default) or python (the slower path around the kernels; it takes none of --spin, --spin-us, --cpu, --rcvbuf, --realtime)."),
) -> None:
    """Join lines A and B, arbitrate, re-request what both lost, replay the result through
    the books and write the live tables until the end of session or Ctrl-C (files are
    closed complete). The path from the sockets to the order is one compiled loop; a
    numba strategy (``numba_strategy``) runs inside it, a Python one is the slow path.
    ``--tables none`` runs the loop alone (no tables)."""
    from ..live.cli_run import run_listen

    if idle_timeout is not None and not idle_timeout > 0:
        from ..errors import ObookError

        raise ObookError(f"--idle-timeout {idle_timeout}: give a number of seconds above 0")
    if latency_output is not None and (latency_output.exists() and not latency_output.is_file()
                                       or not latency_output.parent.is_dir()):
        from ..errors import ObookError

        # (a device or a pipe: a failed write would remove it, as pyarrow removes what it could not write)
        raise ObookError(f"--latency-output {latency_output}: " + ("is a folder; give a Parquet file" if latency_output.is_dir()
                                                                 else "is not a regular file; give a Parquet file"
                                                                 if latency_output.exists()
                                                                 else f"no folder {latency_output.parent}"))
    if session is not None:
        from ..feeds.mold.packets import check_session

        check_session(session, "--session")     # a name no packet can carry is an error now, not a silent wait

    run_listen(locals())


def venue(
    listen_on: str = typer.Option("127.0.0.1:32001", "--listen", help="host:port (an IPv6 address in brackets: [::1]:32001) to accept SoupBinTCP sessions on."),
    log: Optional[Path] = typer.Option(None, "--log", help="Log every order message (recv_ns,session,hex) to this file."),
    sessions: Optional[int] = typer.Option(None, "--sessions", min=1, help="Exit after this many logged-in sessions ended (logged out, disconnected or closed; default: run until Ctrl-C)."),
    username: Optional[str] = typer.Option(None, "--username", help="The account's username (6 characters at most); "
                                                                 "logins with other credentials are rejected."),
    password: str = typer.Option("", "--password", envvar="OBOOK_VENUE_PASSWORD",
                                 help="The account's password (10 characters at most; default: the environment's OBOOK_VENUE_PASSWORD)."),
    accounts: Optional[Path] = typer.Option(None, "--accounts", help="A file of username:password lines, one account a line."),
    login_timeout: float = typer.Option(10.0, "--login-timeout", min=0.001, help="Close a connection that sent no login within this many seconds."),
    idle_timeout: float = typer.Option(15.0, "--idle-timeout", min=0.001, max=MAX_SECONDS,
                                       help="Close a logged-in session that sent nothing (no order, no heartbeat) for this many "
                                            "seconds (SoupBinTCP's 15 s; the answers sent before still go)."),
    max_connections: int = typer.Option(1000, "--max-connections", min=1, help="Close connections beyond this many as they are accepted."),
    cpu: Optional[int] = typer.Option(None, "--cpu", min=0, help="Pin the venue to this core."),
    spin_us: float = typer.Option(0.0, "--spin-us", min=0, max=MAX_SPIN_US, help="Busy-poll the sessions this many microseconds after each packet "
                                                                "before sleeping (orders that follow are stamped and answered without a wake-up)."),
    realtime: int = typer.Option(0, "--realtime", min=0, max=99, help="Run the venue under SCHED_FIFO at this priority (1-99; "
                                 "needs CAP_SYS_NICE): on a shared machine it wakes for an order at once, as a venue "
                                 "on its own machine would."),
) -> None:
    """A simulated venue: accepts SoupBinTCP logins and OUCH 5.0 Enter/Replace/Cancel orders,
    answers each (Accepted/Replaced/Canceled, or Rejected with its reason: a field out of range,
    a UserRefNum not above the session's last, an order not live; stamped on arrival) and logs
    them. A message that is no OUCH order closes its session. Without
    --username or --accounts any login is accepted, on a loopback address only."""
    from ..live.hotpath import pin, realtime as set_realtime
    from ..live.net import hostport, parse_address
    from ..live.venue import venue_from_options

    pin(cpu)
    set_realtime(realtime)
    v = venue_from_options(parse_address(listen_on, "--listen"), log, sessions, username, password, accounts,
                           login_timeout, max_connections, spin_us, idle_timeout)
    typer.echo(f"venue on {hostport(*v.address)}", err=True)
    try:
        v.serve()
    finally:
        counts = {"rejected": v.rejected, "closed": v.closed}
        tail = "".join(f"; {what}: " + ", ".join(f"{why} {n}" for why, n in sorted(c.items()))
                       for what, c in counts.items() if c)
        typer.echo(f"venue: {v.orders} orders, sha256 {v.digest()}{tail}", err=True)
        sys.stderr.flush()
