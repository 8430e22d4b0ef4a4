#!/usr/bin/env python3
"""zbench.py: the real Rust Zenoh (eclipse-zenoh 1.x) side of picobridge's zbench runner.

Standard library + zenoh only. One role per process; every report is one JSON line on stdout.
The process exits when stdin reaches EOF (the runner closes it) or its role finishes.

    zbench.py router --listen EP [--max-sessions N]
                                          {"ev":"ready"} then route until stdin EOF;
                                          --max-sessions raises transport/unicast/max_sessions
                                          (zenohd's default 1000 refuses a larger fleet)
    zbench.py pub    --connect EP --key K --size N
                                          flood K with N-byte payloads (congestion control
                                          BLOCK) once a subscriber matches, until stdin EOF
    zbench.py sub    --connect EP --key K --warmup S --duration S
                                          count samples: after the first sample, wait warmup,
                                          then count for duration; {"ev":"done","rate":msgs/s}
    zbench.py pong   --connect EP         echo bench/ping to bench/pong (express)
    zbench.py ping   --connect EP --size N --count N --warmup N
                                          round trips through bench/ping -> bench/pong;
                                          {"ev":"done","rtt_us":[...]} (sorted)
"""

import argparse
import json
import sys
import threading
import time

import zenoh


def emit(ev, **fields):
    sys.stdout.write(json.dumps({"ev": ev, **fields}, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def config(args, mode):
    conf = zenoh.Config()
    conf.insert_json5("mode", json.dumps(mode))
    conf.insert_json5("connect/endpoints", json.dumps(args.connect or []))
    conf.insert_json5("listen/endpoints", json.dumps(args.listen or []))
    conf.insert_json5("scouting/multicast/enabled", "false")
    conf.insert_json5("scouting/gossip/enabled", "false")
    # Zenoh 1.x moves payloads >= 3 KB through shared memory between local Rust processes
    # (the router forwards a reference), which the Go router does not speak: off everywhere,
    # so both routers carry the same bytes over TCP.
    conf.insert_json5("transport/shared_memory/enabled", "false")
    if getattr(args, "max_sessions", None):
        conf.insert_json5("transport/unicast/max_sessions", json.dumps(args.max_sessions))
    # tls/ runs (zbench --tls): the router presents the certificate, clients trust the CA.
    if getattr(args, "tls_ca", None):
        conf.insert_json5("transport/link/tls/root_ca_certificate", json.dumps(args.tls_ca))
    if mode == "router" and getattr(args, "tls_cert", None):
        conf.insert_json5("transport/link/tls/listen_certificate", json.dumps(args.tls_cert))
        conf.insert_json5("transport/link/tls/listen_private_key", json.dumps(args.tls_key))
    return conf


def stdin_eof():
    stop = threading.Event()

    def read():
        for _ in sys.stdin:
            pass
        stop.set()

    threading.Thread(target=read, daemon=True).start()
    return stop


def wait_matching(pub, stop, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stop.is_set():
        if pub.matching_status.matching:
            return True
        time.sleep(0.01)
    return False


def role_router(s, args, stop):
    emit("ready")
    stop.wait()


def role_pub(s, args, stop):
    pub = s.declare_publisher(args.key, congestion_control=zenoh.CongestionControl.BLOCK)
    emit("ready")
    if not wait_matching(pub, stop):
        emit("error", msg="no matching subscriber")
        return 1
    emit("matched")
    payload = b"x" * args.size
    n = 0
    while not stop.is_set():
        for _ in range(256):
            pub.put(payload)
        n += 256
    emit("done", count=n)
    return 0


def role_sub(s, args, stop):
    lock = threading.Lock()
    count = [0]
    first = threading.Event()

    def on_sample(_sample):
        with lock:
            count[0] += 1
        if not first.is_set():
            first.set()

    sub = s.declare_subscriber(args.key, on_sample)
    emit("ready")
    if not first.wait(20.0):
        emit("error", msg="no sample within 20s")
        return 1
    time.sleep(args.warmup)
    with lock:
        c0, t0 = count[0], time.monotonic()
    emit("window")
    time.sleep(args.duration)
    with lock:
        c1, t1 = count[0], time.monotonic()
    emit("done", count=c1 - c0, seconds=t1 - t0, rate=(c1 - c0) / (t1 - t0))
    sub.undeclare()
    return 0


def role_pong(s, args, stop):
    pub = s.declare_publisher("bench/pong", express=True, congestion_control=zenoh.CongestionControl.BLOCK)
    sub = s.declare_subscriber("bench/ping", lambda sample: pub.put(sample.payload))
    emit("ready")
    stop.wait()
    sub.undeclare()
    return 0


def role_ping(s, args, stop):
    got = threading.Event()
    sub = s.declare_subscriber("bench/pong", lambda _s: got.set())
    pub = s.declare_publisher("bench/ping", express=True, congestion_control=zenoh.CongestionControl.BLOCK)
    emit("ready")
    if not wait_matching(pub, stop):
        emit("error", msg="no pong")
        return 1
    payload = b"p" * args.size
    rtts = []
    for i in range(args.warmup + args.count):
        got.clear()
        t0 = time.perf_counter_ns()
        pub.put(payload)
        if not got.wait(5.0):
            emit("error", msg="pong lost after %d round trips" % i)
            return 1
        dt = time.perf_counter_ns() - t0
        if i >= args.warmup:
            rtts.append(dt / 1000.0)
    rtts.sort()
    emit("done", rtt_us=rtts)
    sub.undeclare()
    return 0


ROLES = {"router": role_router, "pub": role_pub, "sub": role_sub, "pong": role_pong, "ping": role_ping}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=sorted(ROLES))
    ap.add_argument("--connect", action="append")
    ap.add_argument("--listen", action="append")
    ap.add_argument("--key", default="bench/thr")
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--max-sessions", type=int, default=0)
    ap.add_argument("--tls-ca", metavar="PEM", help="trust this CA on tls/ links")
    ap.add_argument("--tls-cert", metavar="PEM", help="router: tls/ listen certificate")
    ap.add_argument("--tls-key", metavar="PEM", help="router: tls/ listen private key")
    args = ap.parse_args()
    stop = stdin_eof()
    mode = "router" if args.role == "router" else "client"
    if args.role == "ping":
        args.warmup = int(args.warmup)
    try:
        s = zenoh.open(config(args, mode))
    except Exception as e:  # noqa: BLE001
        emit("error", msg="open: %s" % e)
        return 1
    try:
        rc = ROLES[args.role](s, args, stop) or 0
    except Exception as e:  # noqa: BLE001
        emit("error", msg=str(e))
        rc = 1
    s.close()
    return rc


if __name__ == "__main__":
    sys.exit(main())
