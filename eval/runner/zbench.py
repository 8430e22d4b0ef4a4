"""zbench.py: the stock Rust Zenoh (eclipse-zenoh for Python, 1.x) side of picoeval's
experiment 2. One role per process; every endpoint is tcp/127.0.0.1, scouting off.

  zbench.py router  LISTEN_EP [CERT KEY]   CERT/KEY: the tls/ listen certificate and key
  zbench.py pub     CONNECT_EP KEY    frames "<u32 LE len><bytes>" on stdin, one "ok <ns>" line per put
  zbench.py sub     CONNECT_EP KEY    one "r <header_stamp_ns> <recv_ns>" line per sample

Publisher: reliable, congestion control BLOCK, priority data (the paper's "reliable/blocking").
The header stamp is read from the CDR payload (encapsulation header, then
builtin_interfaces/Time: int32 sec, uint32 nanosec, little endian).
All processes exit on EOF of stdin (sub, router) or of the frame stream (pub).
"""
import json
import struct
import sys
import threading
import time

import zenoh


def config(mode, connect=(), listen=()):
    conf = zenoh.Config()
    conf.insert_json5("mode", '"%s"' % mode)
    conf.insert_json5("connect/endpoints", "[%s]" % ",".join('"%s"' % e for e in connect))
    conf.insert_json5("listen/endpoints", "[%s]" % ",".join('"%s"' % e for e in listen))
    conf.insert_json5("scouting/multicast/enabled", "false")
    conf.insert_json5("scouting/gossip/enabled", "false")
    return conf


out_lock = threading.Lock()


def say(line):
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def main():
    role, ep = sys.argv[1], sys.argv[2]
    if role == "router":
        conf = config("router", listen=[ep])
        if len(sys.argv) >= 5:
            conf.insert_json5("transport/link/tls/listen_certificate", json.dumps(sys.argv[3]))
            conf.insert_json5("transport/link/tls/listen_private_key", json.dumps(sys.argv[4]))
        s = zenoh.open(conf)
        say("ready")
        sys.stdin.read()
        s.close()
        return
    key = sys.argv[3]
    s = zenoh.open(config("client", connect=[ep]))
    if role == "sub":
        def on_sample(sample):
            now = time.time_ns()
            b = sample.payload.to_bytes()
            if len(b) >= 12:
                sec, nsec = struct.unpack_from("<iI", b, 4)
                say("r %d %d" % (sec * 1000000000 + nsec, now))
        sub = s.declare_subscriber(key, on_sample)
        say("ready")
        sys.stdin.read()
        sub.undeclare()
        s.close()
        return
    if role == "pub":
        pub = s.declare_publisher(key, congestion_control=zenoh.CongestionControl.BLOCK,
                                  reliability=zenoh.Reliability.RELIABLE)
        say("ready")
        while not pub.matching_status.matching:
            time.sleep(0.01)
        say("matched")
        inp = sys.stdin.buffer
        while True:
            h = inp.read(4)
            if len(h) < 4:
                break
            (n,) = struct.unpack("<I", h)
            b = inp.read(n)
            t0 = time.monotonic_ns()
            pub.put(b)
            say("ok %d" % (time.monotonic_ns() - t0))
        pub.undeclare()
        s.close()
        return
    raise SystemExit("unknown role " + role)


if __name__ == "__main__":
    main()
