#!/usr/bin/env python3
"""zpeer: one real Rust Zenoh (eclipse-zenoh 1.x) endpoint, driven by flags, reporting JSON.

Used by picobridge's interop tests (internal/interop). Standard library + zenoh only.

    zpeer.py [common flags] ACTION [action args] [common flags]

Common flags (accepted before or after the action):
    --mode client|peer|router   session mode (default client; the router action implies router)
    --connect EP                endpoint to connect to (repeatable), e.g. tcp/127.0.0.1:7447
    --listen EP                 endpoint to listen on (repeatable)
    --stdin                     read commands from stdin (exit, undeclare); EOF on stdin = exit
    --linger S                  keep the session open S seconds after the action finished
    --log LEVEL                 zenoh's Rust log level on stderr (default: off)

Scouting (multicast and gossip) is always off; with no --listen nothing listens.

Every event is one JSON object on one stdout line, flushed at once:
    {"ev":"ready", ...}                 session open and the action's entity declared
    {"ev":"matched"}                    a publisher/querier saw a matching subscriber/queryable
    {"ev":"matching","key":K,"matching":B}  matching action: the status changed
    {"ev":"sent","count":N,...}         a publisher finished sending
    {"ev":"sample","key":K,"kind":"put|delete","payload_len":L,"seq":S,"attachment":A,...}
    {"ev":"query","key":K,"parameters":P,"payload_len":L}
    {"ev":"reply","ok":true,"key":K,"payload_len":L,"seq":S,"payload":...}
    {"ev":"liveliness","key":K,"kind":"put|delete"}
    {"ev":"undeclared"}                 after the stdin command "undeclare"
    {"ev":"done","count":N,...}         the action finished (sub/get/... carry their checks)
    {"ev":"error","msg":M}              then exit status 1
    {"ev":"closed"}                     the session was closed; the process exits next

Payloads made by pub/put carry a sequence number: b"zpq1" + uint64 little-endian seq, then
filler bytes up to --size. Receivers report it as "seq" (null for foreign payloads).
"""

import argparse
import json
import os
import struct
import sys
import threading
import time

import zenoh

MAGIC = b"zpq1"
HDR = len(MAGIC) + 8

_out_lock = threading.Lock()


def emit(ev, **fields):
    fields = {"ev": ev, **fields}
    line = json.dumps(fields, separators=(",", ":"))
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def make_payload(seq, size):
    size = max(size, HDR)
    return MAGIC + struct.pack("<Q", seq) + b"x" * (size - HDR)


def parse_seq(b):
    if len(b) >= HDR and b[: len(MAGIC)] == MAGIC:
        return struct.unpack_from("<Q", b, len(MAGIC))[0]
    return None


def text_or_none(b, limit=256):
    if b is None:
        return None
    if len(b) > limit:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return None


def zbytes(zb):
    return zb.to_bytes() if zb is not None else None


PRIORITIES = {
    "real_time": zenoh.Priority.REAL_TIME,
    "interactive_high": zenoh.Priority.INTERACTIVE_HIGH,
    "interactive_low": zenoh.Priority.INTERACTIVE_LOW,
    "data_high": zenoh.Priority.DATA_HIGH,
    "data": zenoh.Priority.DATA,
    "data_low": zenoh.Priority.DATA_LOW,
    "background": zenoh.Priority.BACKGROUND,
}
# Numeric priorities as on the wire: 1 = real_time ... 7 = background.
for _i, _n in enumerate(
    ["real_time", "interactive_high", "interactive_low", "data_high", "data", "data_low", "background"], 1
):
    PRIORITIES[str(_i)] = PRIORITIES[_n]

TARGETS = {
    "best_matching": zenoh.QueryTarget.BEST_MATCHING,
    "all": zenoh.QueryTarget.ALL,
    "all_complete": zenoh.QueryTarget.ALL_COMPLETE,
}

CONSOLIDATION = {
    "auto": zenoh.ConsolidationMode.AUTO,
    "none": zenoh.ConsolidationMode.NONE,
    "monotonic": zenoh.ConsolidationMode.MONOTONIC,
    "latest": zenoh.ConsolidationMode.LATEST,
}

CONGESTION = {"block": zenoh.CongestionControl.BLOCK, "drop": zenoh.CongestionControl.DROP}


def sample_kind(k):
    return "delete" if k == zenoh.SampleKind.DELETE else "put"


# ---------------------------------------------------------------------------------------------
# Control: stdin commands and the stop event.


class Control:
    def __init__(self, use_stdin):
        self.stop = threading.Event()
        self.undeclare_cb = None
        if use_stdin:
            threading.Thread(target=self._read_stdin, daemon=True).start()

    def _read_stdin(self):
        for line in sys.stdin:
            cmd = line.strip()
            if cmd in ("exit", "quit", "close"):
                break
            if cmd == "undeclare":
                cb, self.undeclare_cb = self.undeclare_cb, None
                if cb is not None:
                    try:
                        cb()
                    except Exception as e:  # noqa: BLE001
                        emit("error", msg="undeclare: %s" % e)
                        continue
                emit("undeclared")
            elif cmd:
                emit("error", msg="unknown command %r" % cmd)
        self.stop.set()

    def wait(self, timeout=None):
        return self.stop.wait(timeout)


# ---------------------------------------------------------------------------------------------
# Config


def make_config(args, mode):
    conf = zenoh.Config()
    conf.insert_json5("mode", json.dumps(mode))
    conf.insert_json5("connect/endpoints", json.dumps(args.connect or []))
    conf.insert_json5("listen/endpoints", json.dumps(args.listen or []))
    conf.insert_json5("scouting/multicast/enabled", "false")
    conf.insert_json5("scouting/gossip/enabled", "false")
    for kv in getattr(args, "cfg", None) or []:
        key, sep, value = kv.partition("=")
        if not sep:
            raise ValueError("--cfg %r: want KEY=JSON5" % kv)
        conf.insert_json5(key, value)
    return conf


def wait_matching(entity, ctl, timeout):
    """Polls matching_status until true; emits matched. Returns False on timeout/stop."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not ctl.stop.is_set():
        if entity.matching_status.matching:
            emit("matched")
            return True
        time.sleep(0.01)
    return False


# ---------------------------------------------------------------------------------------------
# Actions. Each returns an exit status.


def act_router(session, args, ctl):
    emit("ready", zid=str(session.zid()), mode="router", listen=args.listen or [])
    ctl.wait()
    return 0


def act_pub(session, args, ctl):
    pub = session.declare_publisher(
        args.key,
        express=args.express,
        congestion_control=CONGESTION[args.congestion],
        priority=PRIORITIES[args.priority],
    )
    ctl.undeclare_cb = pub.undeclare
    emit("ready", zid=str(session.zid()), key=args.key)
    if args.wait_matching and not wait_matching(pub, ctl, args.timeout):
        emit("error", msg="no matching subscriber within %gs" % args.timeout)
        return 1
    attachment = args.attachment.encode() if args.attachment is not None else None
    period = 1.0 / args.rate if args.rate > 0 else 0.0
    t0 = time.monotonic()
    next_t = t0
    sent = 0
    for seq in range(args.start, args.start + args.count):
        if ctl.stop.is_set():
            break
        if period:
            now = time.monotonic()
            if next_t > now:
                time.sleep(next_t - now)
            next_t += period
        if args.delete_every and (seq - args.start + 1) % args.delete_every == 0:
            pub.delete(attachment=attachment)
        else:
            pub.put(make_payload(seq, args.size), attachment=attachment)
        sent += 1
    elapsed = time.monotonic() - t0
    emit("sent", count=sent, elapsed_s=round(elapsed, 4), rate_hz=round(sent / elapsed, 1) if elapsed else None)
    emit("done", count=sent)
    return 0


def act_matching(session, args, ctl):
    """Declares a publisher (or querier) and reports each change of its matching status."""
    if args.querier:
        ent = session.declare_querier(args.key)
    else:
        ent = session.declare_publisher(args.key)
    ctl.undeclare_cb = ent.undeclare
    n = [0]

    def on_status(st):
        n[0] += 1
        emit("matching", key=args.key, matching=bool(st.matching))

    listener = ent.declare_matching_listener(on_status)
    emit("ready", zid=str(session.zid()), key=args.key)
    ctl.wait()
    listener.undeclare()
    emit("done", count=n[0])
    return 0


def act_put(session, args, ctl):
    attachment = args.attachment.encode() if args.attachment is not None else None
    emit("ready", zid=str(session.zid()), key=args.key)
    if args.payload is not None:
        payload = args.payload.encode()
    else:
        payload = make_payload(args.start, args.size)
    session.put(
        args.key,
        payload,
        attachment=attachment,
        express=args.express,
        congestion_control=CONGESTION[args.congestion],
        priority=PRIORITIES[args.priority],
    )
    emit("done", count=1)
    return 0


def act_delete(session, args, ctl):
    attachment = args.attachment.encode() if args.attachment is not None else None
    emit("ready", zid=str(session.zid()), key=args.key)
    session.delete(args.key, attachment=attachment)
    emit("done", count=1)
    return 0


class SubStats:
    """Counts samples and checks their seq order; safe to call from zenoh's callback thread."""

    def __init__(self, expect, quiet):
        self.lock = threading.Lock()
        self.expect = expect
        self.quiet = quiet
        self.count = 0
        self.puts = 0
        self.deletes = 0
        self.with_seq = 0
        self.last_seq = None
        self.first_seq = None
        self.out_of_order = 0
        self.first_anomaly = None
        self.seen = set()
        self.dups = 0
        self.bytes = 0
        self.t_first = None
        self.t_last = None
        self.full = threading.Event()

    def on_sample(self, s):
        payload = s.payload.to_bytes()
        seq = parse_seq(payload)
        kind = sample_kind(s.kind)
        now = time.monotonic()
        with self.lock:
            self.count += 1
            self.bytes += len(payload)
            if kind == "put":
                self.puts += 1
            else:
                self.deletes += 1
            if self.t_first is None:
                self.t_first = now
            self.t_last = now
            if seq is not None:
                self.with_seq += 1
                if self.first_seq is None:
                    self.first_seq = seq
                if seq in self.seen:
                    self.dups += 1
                self.seen.add(seq)
                if self.last_seq is not None and seq != self.last_seq + 1:
                    self.out_of_order += 1
                    if self.first_anomaly is None:
                        self.first_anomaly = {"after": self.last_seq, "got": seq}
                self.last_seq = seq
            n = self.count
        if not self.quiet:
            ev = {
                "key": str(s.key_expr),
                "kind": kind,
                "payload_len": len(payload),
                "seq": seq,
                "attachment": text_or_none(zbytes(s.attachment)),
                "express": s.express,
                "priority": str(s.priority).rsplit(".", 1)[-1].lower(),
                "timestamp": s.timestamp is not None,
            }
            if seq is None:
                ev["payload"] = text_or_none(payload)
            emit("sample", **ev)
        if self.expect and n >= self.expect:
            self.full.set()

    def summary(self):
        with self.lock:
            span = (self.t_last - self.t_first) if self.t_first is not None else 0.0
            return dict(
                count=self.count,
                expected=self.expect,
                complete=bool(self.expect) and self.count >= self.expect,
                puts=self.puts,
                deletes=self.deletes,
                with_seq=self.with_seq,
                unique=len(self.seen),
                dups=self.dups,
                out_of_order=self.out_of_order,
                in_order=self.out_of_order == 0,
                first_seq=self.first_seq,
                last_seq=self.last_seq,
                first_anomaly=self.first_anomaly,
                bytes=self.bytes,
                span_s=round(span, 4),
                rate_hz=round((self.count - 1) / span, 1) if span > 0 else None,
            )


def act_sub(session, args, ctl):
    stats = SubStats(args.count, args.quiet)
    sub = session.declare_subscriber(args.key, stats.on_sample)
    ctl.undeclare_cb = sub.undeclare
    emit("ready", zid=str(session.zid()), key=args.key)
    deadline = time.monotonic() + args.timeout if args.timeout > 0 else None
    while not ctl.stop.is_set():
        if stats.full.wait(0.05):
            break
        if deadline is not None and time.monotonic() >= deadline:
            break
    summary = stats.summary()
    emit("done", **summary)
    return 0 if (summary["complete"] or not args.count) else 3


def act_queryable(session, args, ctl):
    served = [0]
    lock = threading.Lock()
    full = threading.Event()

    def on_query(q):
        payload = zbytes(q.payload)
        key = str(q.key_expr)
        emit(
            "query",
            key=key,
            selector=str(q.selector),
            parameters=str(q.parameters),
            payload_len=len(payload) if payload is not None else None,
            payload=text_or_none(payload),
            attachment=text_or_none(zbytes(q.attachment)),
        )
        reply_key = args.reply_key or (args.key if "*" not in args.key else key)
        attachment = args.attachment.encode() if args.attachment is not None else None
        for i in range(args.reply_count):
            if args.reply_err:
                q.reply_err(("error %d" % i).encode())
            elif args.reply_size:
                q.reply(reply_key, make_payload(i, args.reply_size), attachment=attachment)
            else:
                q.reply(reply_key, (args.reply_payload or "reply %d" % i).encode(), attachment=attachment)
        q.drop()  # RESPONSE_FINAL now rather than at garbage collection
        with lock:
            served[0] += 1
            if args.count and served[0] >= args.count:
                full.set()

    qbl = session.declare_queryable(args.key, on_query, complete=args.complete)
    ctl.undeclare_cb = qbl.undeclare
    emit("ready", zid=str(session.zid()), key=args.key)
    while not ctl.stop.is_set():
        if full.wait(0.05):
            break
    with lock:
        emit("done", count=served[0])
    return 0


def emit_reply(r, limit=256):
    if r.ok is not None:
        s = r.ok
        payload = s.payload.to_bytes()
        seq = parse_seq(payload)
        ev = dict(
            ok=True,
            key=str(s.key_expr),
            kind=sample_kind(s.kind),
            payload_len=len(payload),
            seq=seq,
            attachment=text_or_none(zbytes(s.attachment)),
        )
        if seq is None:
            ev["payload"] = text_or_none(payload, limit)
    else:
        e = r.err
        payload = e.payload.to_bytes()
        ev = dict(ok=False, payload_len=len(payload), payload=text_or_none(payload))
    rid = r.replier_id
    ev["replier"] = str(rid.zid) if rid is not None else None
    emit("reply", **ev)


def act_get(session, args, ctl):
    cons = CONSOLIDATION[args.consolidation]
    kw = dict(target=TARGETS[args.target], consolidation=cons, timeout=args.timeout)
    if args.payload is not None:
        kw["payload"] = args.payload.encode()
    if args.wait_matching:
        key = args.selector.split("?", 1)[0]
        querier = session.declare_querier(key, target=TARGETS[args.target], consolidation=cons, timeout=args.timeout)
        emit("ready", zid=str(session.zid()), key=key)
        if not wait_matching(querier, ctl, args.timeout):
            emit("error", msg="no matching queryable within %gs" % args.timeout)
            return 1
        params = args.selector.split("?", 1)[1] if "?" in args.selector else None
        gkw = {}
        if params is not None:
            gkw["parameters"] = params
        if args.payload is not None:
            gkw["payload"] = args.payload.encode()
        replies = querier.get(**gkw)
    else:
        emit("ready", zid=str(session.zid()), key=args.selector)
        replies = session.get(args.selector, **kw)
    t0 = time.monotonic()
    n = 0
    for r in replies:  # ends at RESPONSE_FINAL or the timeout
        n += 1
        emit_reply(r, args.payload_limit)
    emit("done", count=n, elapsed_s=round(time.monotonic() - t0, 4))
    return 0


def act_token(session, args, ctl):
    tok = session.liveliness().declare_token(args.key)
    ctl.undeclare_cb = tok.undeclare
    emit("ready", zid=str(session.zid()), key=args.key)
    ctl.wait()
    return 0


def act_liveliness_sub(session, args, ctl):
    n = [0]
    lock = threading.Lock()
    full = threading.Event()

    def on_sample(s):
        emit("liveliness", key=str(s.key_expr), kind=sample_kind(s.kind))
        with lock:
            n[0] += 1
            if args.count and n[0] >= args.count:
                full.set()

    sub = session.liveliness().declare_subscriber(args.key, on_sample, history=args.history)
    ctl.undeclare_cb = sub.undeclare
    emit("ready", zid=str(session.zid()), key=args.key)
    deadline = time.monotonic() + args.timeout if args.timeout > 0 else None
    while not ctl.stop.is_set():
        if full.wait(0.05):
            break
        if deadline is not None and time.monotonic() >= deadline:
            break
    with lock:
        emit("done", count=n[0])
    return 0


def act_liveliness_get(session, args, ctl):
    emit("ready", zid=str(session.zid()), key=args.key)
    t0 = time.monotonic()
    n = 0
    for r in session.liveliness().get(args.key, timeout=args.timeout):
        n += 1
        if r.ok is not None:
            emit("liveliness", key=str(r.ok.key_expr), kind=sample_kind(r.ok.kind))
        else:
            emit("error", msg="liveliness get error reply: %r" % text_or_none(r.err.payload.to_bytes()))
    emit("done", count=n, elapsed_s=round(time.monotonic() - t0, 4))
    return 0


# ---------------------------------------------------------------------------------------------
# Command line


def build_parser():
    # Common flags live on the top parser and (with SUPPRESS defaults, so they do not clobber
    # values given before the action) on every action parser.
    def common(p, top):
        d = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
        p.add_argument("--mode", choices=["client", "peer", "router"], default=d(None))
        p.add_argument("--connect", action="append", default=d([]), metavar="EP")
        p.add_argument("--listen", action="append", default=d([]), metavar="EP")
        p.add_argument("--stdin", action="store_true", default=d(False))
        p.add_argument("--linger", type=float, default=d(0.0), metavar="S")
        p.add_argument("--log", default=d(None), metavar="LEVEL")
        p.add_argument("--cfg", action="append", default=d([]), metavar="KEY=JSON5",
                       help="extra config, e.g. transport/link/tls/root_ca_certificate=\"ca.pem\"")

    top = argparse.ArgumentParser(prog="zpeer.py", description=__doc__.split("\n\n")[0])
    common(top, True)
    sp = top.add_subparsers(dest="action", required=True)

    def action(name, help_):
        p = sp.add_parser(name, help=help_)
        common(p, False)
        return p

    def qos(p):
        p.add_argument("--express", action="store_true")
        p.add_argument("--priority", choices=sorted(PRIORITIES), default="data")
        p.add_argument("--congestion", choices=sorted(CONGESTION), default="block")
        p.add_argument("--attachment", metavar="TEXT")

    p = action("router", "run as a router on the --listen endpoints until killed")

    p = action("pub", "declare a publisher and put --count sequenced samples")
    p.add_argument("key")
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--size", type=int, default=HDR, metavar="B")
    p.add_argument("--rate", type=float, default=0, metavar="HZ", help="0 = as fast as possible")
    p.add_argument("--start", type=int, default=0, help="first sequence number")
    p.add_argument("--delete-every", type=int, default=0, metavar="N", help="every Nth sample is a delete")
    p.add_argument("--wait-matching", action="store_true", help="wait for a matching subscriber first")
    p.add_argument("--timeout", type=float, default=10, metavar="S", help="for --wait-matching")
    qos(p)

    p = action("matching", "declare a publisher (or --querier) and report matching status changes")
    p.add_argument("key")
    p.add_argument("--querier", action="store_true")

    p = action("put", "one session-level put")
    p.add_argument("key")
    p.add_argument("--payload", metavar="TEXT")
    p.add_argument("--size", type=int, default=HDR, metavar="B")
    p.add_argument("--start", type=int, default=0)
    qos(p)

    p = action("delete", "one session-level delete")
    p.add_argument("key")
    p.add_argument("--attachment", metavar="TEXT")

    p = action("sub", "subscribe; report samples and a done summary with order checks")
    p.add_argument("key")
    p.add_argument("--count", type=int, default=0, help="stop after N samples (0 = until killed)")
    p.add_argument("--timeout", type=float, default=0, metavar="S", help="give up after S seconds")
    p.add_argument("--quiet", action="store_true", help="no per-sample events, summary only")

    p = action("queryable", "declare a queryable answering each query with --reply-count replies")
    p.add_argument("key")
    p.add_argument("--reply-count", type=int, default=1, metavar="K")
    p.add_argument("--reply-key", metavar="KEY")
    p.add_argument("--reply-payload", metavar="TEXT")
    p.add_argument("--reply-size", type=int, default=0, metavar="B", help="sequenced payloads of B bytes")
    p.add_argument("--reply-err", action="store_true")
    p.add_argument("--attachment", metavar="TEXT")
    p.add_argument("--complete", action="store_true")
    p.add_argument("--count", type=int, default=0, help="exit after N queries (0 = until killed)")

    p = action("get", "one query; reports every reply and done")
    p.add_argument("selector")
    p.add_argument("--timeout", type=float, default=10, metavar="S")
    p.add_argument("--target", choices=sorted(TARGETS), default="best_matching")
    p.add_argument(
        "--consolidation",
        choices=sorted(CONSOLIDATION),
        default="none",
        help="default none: zenoh's auto keeps only the latest reply per key",
    )
    p.add_argument("--payload", metavar="TEXT")
    p.add_argument("--wait-matching", action="store_true", help="use a querier; wait for a queryable first")
    p.add_argument("--payload-limit", type=int, default=256, metavar="B",
                   help="report reply payloads up to B bytes as text (JSON of admin space entries)")

    p = action("token", "declare a liveliness token until killed (or stdin undeclare)")
    p.add_argument("key")

    p = action("liveliness-sub", "liveliness subscriber")
    p.add_argument("key")
    p.add_argument("--history", action="store_true")
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--timeout", type=float, default=0, metavar="S")

    p = action("liveliness-get", "one liveliness query")
    p.add_argument("key")
    p.add_argument("--timeout", type=float, default=10, metavar="S")

    return top


ACTIONS = {
    "router": act_router,
    "pub": act_pub,
    "matching": act_matching,
    "put": act_put,
    "delete": act_delete,
    "sub": act_sub,
    "queryable": act_queryable,
    "get": act_get,
    "token": act_token,
    "liveliness-sub": act_liveliness_sub,
    "liveliness-get": act_liveliness_get,
}


def main(argv):
    args = build_parser().parse_args(argv)
    mode = args.mode or ("router" if args.action == "router" else "client")
    if args.action == "router" and mode != "router":
        emit("error", msg="the router action needs --mode router")
        return 2
    if mode == "router" and not args.listen:
        emit("error", msg="a router needs --listen")
        return 2
    for ep in list(args.connect) + list(args.listen):
        if "127.0.0.1" not in ep and "[::1]" not in ep and "localhost" not in ep:
            emit("error", msg="endpoint %s is not loopback" % ep)
            return 2
    if args.log:
        zenoh.init_log_from_env_or(args.log)
    ctl = Control(args.stdin)
    try:
        session = zenoh.open(make_config(args, mode))
    except Exception as e:  # noqa: BLE001
        emit("error", msg="open: %s" % e)
        return 1
    rc = 1
    try:
        rc = ACTIONS[args.action](session, args, ctl)
        if args.linger > 0:
            ctl.wait(args.linger)
    except KeyboardInterrupt:
        rc = 0
    except Exception as e:  # noqa: BLE001
        emit("error", msg="%s: %s" % (type(e).__name__, e))
        rc = 1
    finally:
        session.close()
        emit("closed")
    return rc


if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
    except BrokenPipeError:
        code = 1
    sys.stdout.flush()
    # zenoh's runtime threads can outlive main; exit without waiting for them.
    os._exit(code)
