#!/usr/bin/env python3
"""tracestat: counts from a Go execution trace (Go 1.22+ format) per message.

Reads `go tool trace -d=parsed TRACE` (run for you) and prints:
  - GC: cycles, stop-the-world time, mark phase share of the wall time, mark assists;
  - syscalls: goroutine Running->Syscall transitions by syscall function (read, write...);
  - goroutine hand-offs: Waiting->Runnable (unblocks) by what the goroutine waited on
    (network = netpoller, select/chan/sync = another goroutine) and by its function,
    goroutines created;
  - scheduler latency: Runnable->Running after each unblock, p50/p99/max, per wait reason;
  - the longest Runnable->Running waits with the goroutine's function (tails).
With --msgs N (messages the router forwarded during the trace) every count is also
given per message. Usage: scripts/tracestat.py [--msgs N] [--top K] FILE.trace
Source of the event names: Go's internal/trace (go tool trace -d=parsed). docs/perf.md.
"""
import argparse
import collections
import re
import subprocess
import sys

EV = re.compile(r'^M=(-?\d+) P=(-?\d+) G=(-?\d+) (\w+) Time=(\d+) (.*)$')
TR = re.compile(r'GoID=(\d+) (\w+)->(\w+) Reason="([^"]*)"')
NAME = re.compile(r'Name="([^"]*)"')
PROC = re.compile(r'ProcID=(\d+) (\w+)->(\w+)')


def q(xs, p):
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(p * len(xs) + 0.999999) - 1))]


def frames(lines, i):
    """The frames of the Stack= / TransitionStack= block starting at lines[i]."""
    out = []
    i += 1
    while i < len(lines) and lines[i].startswith('\t'):
        f = lines[i].strip()
        if not f.startswith('/'):
            out.append(f.split(' @ ')[0])
        i += 1
    return out, i


def short(fn):
    fn = fn.replace('github.com/picobridge/picobridge/', '')
    return fn


def chain_report(chains, incomplete, top, t0):
    """Per forwarded message: t1 netpoller marks the reader runnable, t2 it runs, t3 it
    hands the message to a writer goroutine (unblock or creation), t4 the writer runs,
    t5 write(2) starts. Inline writes (the reader writes itself) have no t3/t4."""
    print(f'router residence per message (--chain), µs: {len(chains)} messages, {incomplete} not matched')
    parts = [('netpoll→reader runs', 't1', 't2'), ('reader: read+parse+route', 't2', 't3'),
             ('hand-off: writer runnable→runs', 't3', 't4'), ('writer: to write(2)', 't4', 't5'),
             ('total (netpoll→write)', 't1', 't5')]
    hand = [c for c in chains if not c.get('inline')]
    print(f'  inline writes {len(chains) - len(hand)}, hand-offs {len(hand)} '
          f'(to a new goroutine {sum(1 for c in hand if c.get("new"))})')
    for name, x, y in parts:
        xs = [(c[y] - c[x]) / 1e3 for c in (hand if x in ('t3', 't4') or y in ('t3', 't4') else chains) if x in c and y in c]
        if xs:
            print(f'  {name:<32} p50={q(xs, .5):8.1f} p90={q(xs, .9):8.1f} p99={q(xs, .99):8.1f} max={max(xs):8.1f}')
    for label, sel in (('hand-off to a woken writer', False), ('hand-off to a new writer', True)):
        xs = [(c['t4'] - c['t3']) / 1e3 for c in hand if bool(c.get('new')) == sel and 't4' in c]
        tot = [(c['t5'] - c['t1']) / 1e3 for c in hand if bool(c.get('new')) == sel]
        if xs:
            print(f'  {label:<32} n={len(xs)} runnable→runs p50={q(xs, .5):.1f} p99={q(xs, .99):.1f}; '
                  f'total p50={q(tot, .5):.1f} p99={q(tot, .99):.1f}')
    slow = [c for c in chains if c['t5'] - c['t1'] > 500e3]
    dom = collections.Counter()
    for c in slow:
        segs = [(c[y] - c[x], name) for name, x, y in parts[:4] if x in c and y in c]
        dom[max(segs)[1]] += 1
    print(f'  over 500 µs: {len(slow)} messages; longest part: ' + ', '.join(f'{k} {v}' for k, v in dom.most_common()))
    worst = sorted(chains, key=lambda c: c['t5'] - c['t1'], reverse=True)[:top]
    print(f'  slowest {top}:')
    for c in worst:
        seg = ' '.join(f'{y}-{x}={(c[y] - c[x]) / 1e3:.0f}' for x, y in (('t1', 't2'), ('t2', 't3'), ('t3', 't4'), ('t4', 't5'))
                       if x in c and y in c)
        print(f'    {(c["t5"] - c["t1"]) / 1e3:8.1f} µs at +{(c["t1"] - t0) / 1e6:8.3f} ms: {seg}'
              + (' (new writer goroutine)' if c.get('new') else ''))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('trace')
    ap.add_argument('--msgs', type=float, default=0, help='messages forwarded during the trace')
    ap.add_argument('--top', type=int, default=8)
    ap.add_argument('--chain', action='store_true',
                    help='ping-pong traces (one message in flight): split each message\'s time in the router, '
                         'from the netpoller waking its reader to the write(2) that forwards it')
    a = ap.parse_args()
    txt = subprocess.run(['go', 'tool', 'trace', '-d=parsed', a.trace], capture_output=True, text=True, check=True).stdout
    lines = txt.split('\n')
    t0 = t1 = None
    ranges = {}  # (name, scope) -> begin time
    gc = collections.Counter()
    gcdur = collections.defaultdict(list)
    sys_by = collections.Counter()
    unb_reason = collections.Counter()
    unb_fn = collections.Counter()
    created = collections.Counter()
    waitreason = {}  # goid -> reason of its last Running->Waiting
    gofn = {}  # goid -> function (bottom non-runtime frame of its last stack)
    runnable_at = {}  # goid -> (time, reason)
    lat = collections.defaultdict(list)
    slow = []
    i = 0
    pending = None  # (kind, goid, from, to, reason, time) waiting for its stacks
    chains, chain, incomplete = [], None, 0  # --chain: dicts of t1..t5 (see chain_report)
    while i < len(lines):
        ln = lines[i]
        m = EV.match(ln)
        if not m:
            if ln.startswith('Stack=') or ln.startswith('TransitionStack='):
                fr, i = frames(lines, i)
                if pending and fr:
                    kind, goid, frm, to, reason, tm = pending
                    user = [f for f in fr if not f.startswith('runtime.') and not f.startswith('internal/')]
                    if user:
                        loops = [f for f in user if f.endswith('Loop') or f.endswith('Fire')]
                        gofn[goid] = short((loops or user)[-1])
                    if to == 'Syscall' and ln.startswith('TransitionStack='):
                        top = next((f for f in fr if f.startswith('syscall.') and f[8:9].islower()), fr[0])
                        sys_by[top] += 1
                        if chain is not None and chain.get('sys_at') == tm:
                            if top == 'syscall.write':
                                chain['t5'] = tm
                                chain['inline'] = goid == chain['reader']
                                chains.append(chain)
                                chain = None
                            else:
                                del chain['sys_at']
                continue
            i += 1
            continue
        _, _, g, kind, tm, rest = m.groups()
        tm = int(tm)
        t0 = tm if t0 is None else t0
        t1 = tm
        pending = None
        if kind == 'StateTransition':
            t = TR.search(rest)
            if t:
                goid, frm, to, reason = int(t.group(1)), t.group(2), t.group(3), t.group(4)
                pending = (kind, goid, frm, to, reason, tm)
                if a.chain:
                    g = int(g)
                    if frm == 'Waiting' and to == 'Runnable' and waitreason.get(goid) == 'network':
                        if chain is not None:
                            incomplete += 1
                        chain = {'reader': goid, 't1': tm}
                    elif chain is not None:
                        if frm == 'Runnable' and to == 'Running' and goid == chain['reader'] and 't2' not in chain:
                            chain['t2'] = tm
                        elif (to == 'Runnable' and frm in ('Waiting', 'NotExist') and g == chain['reader']
                              and 't2' in chain and 't3' not in chain and goid != chain['reader']):
                            chain['t3'], chain['writer'], chain['new'] = tm, goid, frm == 'NotExist'
                        elif frm == 'Runnable' and to == 'Running' and goid == chain.get('writer') and 't4' not in chain:
                            chain['t4'] = tm
                        elif to == 'Syscall' and (goid == chain.get('writer') and 't4' in chain or
                                                  goid == chain['reader'] and 't3' not in chain and 't2' in chain):
                            chain['sys_at'] = tm  # checked for write(2) when its stack is read
                if to == 'Waiting':
                    waitreason[goid] = reason or '?'
                elif frm == 'Waiting' and to == 'Runnable':
                    r = waitreason.get(goid, '?')
                    unb_reason[r] += 1
                    unb_fn[(r, gofn.get(goid, '?'))] += 1
                    runnable_at[goid] = (tm, r)
                elif frm == 'NotExist' and to == 'Runnable':
                    created['created'] += 1
                    runnable_at[goid] = (tm, 'new goroutine')
                elif frm == 'Runnable' and to == 'Running' and goid in runnable_at:
                    at, r = runnable_at.pop(goid)
                    d = (tm - at) / 1e3
                    lat[r].append(d)
                    slow.append((d, r, goid, tm))
        elif kind in ('RangeBegin', 'RangeEnd'):
            n = NAME.search(rest)
            name = n.group(1) if n else '?'
            scope = rest.split('Scope=')[-1].split(' ')[0]
            if kind == 'RangeBegin':
                ranges[(name, scope)] = tm
                gc[name] += 1
            elif (name, scope) in ranges:
                gcdur[name].append((tm - ranges.pop((name, scope))) / 1e3)
        i += 1
    wall = (t1 - t0) / 1e9 if t0 is not None else 0
    per = (lambda n: f' = {n / a.msgs:.3g}/msg' if a.msgs else '')
    print(f'trace {a.trace}: {wall:.3f} s' + (f', {a.msgs:.0f} messages' if a.msgs else ''))
    cyc = gc['GC concurrent mark phase']
    stw = [d for k, v in gcdur.items() if k.startswith('stop-the-world (GC') for d in v]
    mark = sum(gcdur['GC concurrent mark phase'])
    print(f'GC: {cyc} cycles ({cyc / wall if wall else 0:.1f}/s){per(cyc)}; STW total {sum(stw):.0f} µs, max {max(stw, default=0):.0f} µs; '
          f'mark phase {mark / 1e3:.1f} ms = {100 * mark / 1e6 / wall if wall else 0:.1f} % of wall; mark assists {gc["GC mark assist"]}, '
          f'longest {max(gcdur["GC mark assist"], default=0):.0f} µs')
    tot = sum(sys_by.values())
    print(f'syscalls (goroutine Running->Syscall): {tot}{per(tot)}')
    for k, v in sys_by.most_common(a.top):
        print(f'  {k}: {v}{per(v)}')
    tot = sum(unb_reason.values())
    print(f'unblocks (Waiting->Runnable): {tot}{per(tot)}; goroutines created {created["created"]}{per(created["created"])}')
    for k, v in unb_reason.most_common():
        print(f'  waited on {k}: {v}{per(v)}')
    print('unblocks by waited-on / goroutine function:')
    for (r, fn), v in unb_fn.most_common(a.top):
        print(f'  {r:<14} {fn}: {v}{per(v)}')
    print('scheduler latency after unblock/creation (Runnable->Running), µs:')
    for r, xs in sorted(lat.items(), key=lambda kv: -len(kv[1])):
        print(f'  {r:<14} n={len(xs):<7} p50={q(xs, .5):.1f} p99={q(xs, .99):.1f} max={max(xs):.1f}')
    if a.chain:
        chain_report(chains, incomplete, a.top, t0)
    print(f'longest {a.top} Runnable->Running waits:')
    for d, r, goid, tm in sorted(slow, reverse=True)[:a.top]:
        print(f'  {d:9.1f} µs  at +{(tm - t0) / 1e6:8.3f} ms  G{goid} {gofn.get(goid, "?")} (waited on {r})')


if __name__ == '__main__':
    sys.exit(main())
