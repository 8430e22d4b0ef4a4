#!/usr/bin/env python3
"""Regenerates rust_golden.json: answers of the Rust zenoh-keyexpr crate, through the
eclipse-zenoh Python bindings (pip install eclipse-zenoh==1.10.2), on seeded random inputs.
TestRustGolden (golden_test.go) checks the Go package against it.

    python3 gen_rust_golden.py > rust_golden.json
"""
import json
import random
import sys
from importlib.metadata import version

import zenoh

K = zenoh.KeyExpr
rng = random.Random(20261129)

# Expression chunks: literals, wildcards, sub-chunk wildcards, verbatim chunks, non-canonical.
CHUNKS = ["a", "b", "ab", "ba", "*", "**", "a$*", "$*a", "$*b$*", "a$*b", "$*", "$*$*",
          "@a", "@b", "a$*$*", "b$*a$*b", "@a$*"]
# Characters for raw strings, to exercise validation.
CHARS = ["a", "b", "/", "/", "*", "*", "$", "@", "#", "?", "é"]


def expr(max_chunks):
    return "/".join(rng.choice(CHUNKS) for _ in range(rng.randint(1, max_chunks)))


def raw(max_len):
    return "".join(rng.choice(CHARS) for _ in range(rng.randint(0, max_len)))


def strict(s):
    try:
        K(s)
        return True
    except Exception:
        return False


def canon(s):
    """Returns (canonical form or None, whether Rust panicked)."""
    try:
        return str(K.autocanonize(s)), False
    except Exception:
        return None, False
    except BaseException as e:  # pyo3 PanicException: a bug in zenoh-keyexpr's canonizer
        if "Panic" not in type(e).__name__:
            raise
        return None, True


inputs = sorted({expr(5) for _ in range(1500)} | {raw(8) for _ in range(1500)})
canons = []
for s in inputs:
    c, panicked = canon(s)
    canons.append([s, strict(s), c, panicked])

pool = sorted({c for c, _ in (canon(expr(rng.randint(1, 4))) for _ in range(600)) if c is not None})
pairs = []
for _ in range(5000):
    a, b = rng.choice(pool), rng.choice(pool)
    ka, kb = K(a), K(b)
    pairs.append([a, b, ka.intersects(kb), ka.includes(kb)])

# One entry per line: canon entries are [input, valid (strict), autocanonized or null,
# canonizer panicked]; pairs are [a, b, a.intersects(b), a.includes(b)].
out = sys.stdout
out.write('{"generator": %s,\n"canon": [\n' % json.dumps("eclipse-zenoh " + version("eclipse-zenoh")))
out.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in canons))
out.write('],\n"pairs": [\n')
out.write(",\n".join(json.dumps(p, ensure_ascii=False) for p in pairs))
out.write("]}\n")
