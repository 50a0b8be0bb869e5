"""The compiled live loop's named state: indices into its int64 state array ``S``, its
histograms, return codes and buffer sizes (shared by the kernels and obook.live.hotpath)."""

_NAMES = """
NEXT HIGH END SESSION_SET SESSION_HI SESSION_LO
W_REC W_BYTE H_REC H_BYTE T_REC T_BYTE TABLES T_LAPPED
PEND PEND_FULL GAP_AT GAP_SINCE GAP_TRIES GAP_LAST REQUESTS N_GAPS
GAP_WAIT REQ_TIMEOUT RETRIES MAX_REQUEST ON_GAP_SKIP HAVE_REQUEST
LAST_PACKET LAST_VENUE HEARTBEAT STRICT PY_STRATEGY HAS_STRATEGY HAS_VENUE N_STATE
MAX_QTY MAX_NOTIONAL MAX_RATE BAND_BPS RW_HEAD RW_COUNT
ORDERS ANSWERS LOG_BYTES VENUE_ENDED VBUF_N
CLOCK_OFFSET SPIN STOP NEED_ROOM RESUME_I GIVEUP_FIRST GIVEUP_COUNT BOOK_ERROR ERROR_SEQ
CALLS BBO_ROWS PY_N BASE_NS BASE_CYC MULT SLICE_NS KSTAMPS LOOPS POLLS TRUNCATED
REFUSED_RATE REFUSED_SIZE REFUSED_NOTIONAL REFUSED_PRICE REFUSED_BAND SEND_ERRORS
SUBSCRIBE_ALL T_KERNEL_LAST SEND_BLOCKED GAP_HIGH VENUE_READ LOG_FULL
CANDIDATES CHOICE_N PROBE_LAST PROBES SPIN_NS REST_EVERY REST_NS REST_LAST RESTS REST_OWED CAL_NS CAL_CYC
OUT_N OUT_SENDS OUT_LONE OUT_HOLD
Q_HELD Q_ORDER Q_MIN WINDOW
MALFORMED BAD_TYPE BAD_LEN ERROR_EVENT
VENUE_BAD SEND_ERRNO
REJECTED REJECT_REF REJECT_REASON
""".split()
for _i, _n in enumerate(_NAMES):
    globals()["S_" + _n] = _i
S_WIDTH = len(_NAMES)
#: the risk gate's refusal counters, in the order of the reasons' names
REFUSED = ("rate", "size", "notional", "no price", "band")

# histograms (rows of the counts array), in the path's order
HISTS = ("recv", "decode", "handover", "book", "strategy", "risk", "gateway", "venue",
         "recv-to-book", "tick-to-trade")
H_RECV, H_DECODE, H_HANDOVER, H_BOOK, H_STRATEGY, H_RISK, H_GATEWAY, H_VENUE, H_R2B, H_T2T = range(10)

# run's return codes
RUN_SLICE = 0        # its time slice is over (nothing to do for the caller)
RUN_END = 1          # end of session, every message through the book
RUN_NEED_ROOM = 2    # the books need a larger array (S_NEED_ROOM: which); call again after growing
RUN_BOOK_ERROR = 3   # strict: a message the books refuse (S_BOOK_ERROR, S_ERROR_SEQ, S_ERROR_EVENT)
RUN_GIVE_UP = 4      # a range lost on both lines, re-requests unanswered (S_GIVEUP_*)
RUN_PY_ROWS = 5      # BBO rows for the Python strategy (py_rows[:S_PY_N])
RUN_STOPPED = 6      # S_STOP was set
RUN_VENUE_LOST = 7   # the venue connection failed (S_VENUE_BAD: a packet that cannot be framed came;
                     # else an order's send() failed, S_SEND_ERRNO: its errno, 0 when none was set)
RUN_MALFORMED = 8    # strict: a message shorter than its type (S_BAD_TYPE, S_BAD_LEN, S_ERROR_SEQ); tolerant:
                     # skipped and counted in S_MALFORMED

# the C functions the loop calls (addresses in its ``fns`` argument); F_ERRNO: the C
# library's ``__errno_location`` (the calling thread's errno is at the address it returns)
F_RECVMMSG, F_SEND, F_POLL, F_CLOCK, F_STRATEGY, F_RECV, F_PPOLL, F_ERRNO = range(8)
N_FNS = 8
#: the errnos of a non-blocking call that failed for now (retried); any other is the connection's
#: (Linux's numbers, on every architecture the live path runs on: EAGAIN = EWOULDBLOCK, EINTR)
RETRY_ERRNOS = (11, 11, 4)
MSG_DONTWAIT = 0x40
MSG_TRUNC = 0x20
MSG_NOSIGNAL = 0x4000

# lines
LINE_A, LINE_B, LINE_REQUEST = 0, 1, 2
N_LINES = 3

# sizes
VLEN = 64            # datagrams a recvmmsg call takes
DGRAM = 2048         # bytes a datagram may have (longer ones are truncated: bad packets)
CTL = 64             # control bytes a datagram (the kernel's receive stamp)
PEND_BITS = 16       # messages held ahead of a gap
PEND_SLOT = 128      # bytes a held message may have (2-byte length included)
#: ranges of numbers kept per line (``live_arb``'s ``line_gap``): a line's own gaps (the numbers
#: its jumps skipped, not received on it since); the re-request row: the numbers no line
#: delivered (given up, or answered by the server). When full, the lowest range goes.
GAP_SLOTS = 64
PY_WIDTH = 9         # py_rows: seq, time, locate, bid px, qty, ask px, qty, kernel stamp, book stamp
REF_BITS = 16        # orders' stamps kept by UserRefNum
OUTBOX = 1 << 14     # bytes of orders gathered for one send (sent sooner when nearly full)
ORDER_MAX = 64       # bytes an order's SoupBinTCP packet may take
#: S_OUT_HOLD: how orders leave (see live_loop._order): a batch's first at once and the rest
#: together (the default), all of a batch together, or each at once in a send of its own
OUT_FIRST_AT_ONCE, OUT_BATCH, OUT_EACH = 0, 1, 2
GAPS_MAX = 4096      # gaps given up (on_gap skip) kept: first, count, stamp before, stamp after

# choosing the session (none given): as obook.feeds.mold.sessions (CONFIRM, MAX_SESSIONS, MAX_HELD)
CHOICE_SESSIONS = 8  # sessions held at once before one is chosen
CHOICE_HELD = 16     # packets held per session
# a candidate's row: session high and low parts, packets held, the number its heartbeats
# name (the probe asks for what lies below it), probed, its last packet's arrival (the
# least recent makes room for a new session), packets not held per line
C_HI, C_LO, C_HELD, C_PROBE_SEQ, C_PROBED, C_LAST, C_DROPPED = 0, 1, 2, 3, 4, 5, 6
C_WIDTH = C_DROPPED + N_LINES
# a held packet's row: line, length, kernel stamp, sequence number, count, arrival order
HP_LINE, HP_LEN, HP_TS, HP_SEQ, HP_COUNT, HP_ORDER = range(6)
HP_WIDTH = 6

# packets numbered implausibly far ahead, once the session is chosen (as
# obook.feeds.mold.sessions' Quarantine: WINDOW, JUMP_CONFIRM, MAX_QUARANTINE); they are held
# in the rows the session choice used (S_Q_HELD of them) until JUMP_CONFIRM of them chain or
# the numbers seen reach them. S_WINDOW: the window (0: QUARANTINE_WINDOW).
QUARANTINE_WINDOW = 1 << 18
QUARANTINE_HELD = 64
JUMP_CONFIRM = 3
assert QUARANTINE_HELD <= CHOICE_SESSIONS * CHOICE_HELD     # the quarantine uses the choice's rows
