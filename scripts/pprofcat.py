#!/usr/bin/env python3
"""pprofcat: the share of a CPU profile in a few cost classes (docs/perf.md).

Runs `go tool pprof -top -cum -nodecount=100000 FILE.cpu` and prints, per class, the
cumulative (cum %) of the functions that define it. Classes overlap where the runtime
nests (a write barrier inside a copy): each is read on its own, they do not add up.
Usage: scripts/pprofcat.py FILE.cpu [FILE.cpu ...]  (one Markdown row per file)
"""
import re
import subprocess
import sys

# class -> (how it is counted, functions); 'cum' sums cum% of the listed roots (no nesting
# among them), 'flat' sums flat% of the listed leaves.
CLASSES = [
    ('syscalls', 'flat', ['internal/runtime/syscall/linux.Syscall6', 'syscall.RawSyscall6', 'runtime/internal/syscall.Syscall6']),
    ('netpoll/epoll', 'cum', ['runtime.netpoll']),
    ('scheduler', 'cum', ['runtime.schedule']),
    ('futex/wakeup', 'cum', ['runtime.futexwakeup', 'runtime.futexsleep']),
    ('malloc', 'cum', ['runtime.mallocgc']),
    ('GC (bg mark + assist)', 'cum', ['runtime.gcBgMarkWorker', 'runtime.gcAssistAlloc']),
    ('memmove/memclr', 'flat', ['runtime.memmove', 'runtime.memclrNoHeapPointers']),
    ('locks', 'cum', ['runtime.lock2', 'runtime.unlock2', 'sync.(*Mutex).Lock', 'sync.(*Mutex).Unlock',
                      'sync.(*RWMutex).RLock', 'sync.(*RWMutex).RUnlock', 'sync.(*RWMutex).Lock', 'sync.(*RWMutex).Unlock']),
    ('timers', 'cum', ['time.(*Timer).Reset', 'time.NewTimer', 'time.(*Timer).Stop', 'runtime.(*timer).modify', 'runtime.(*timers).run']),
    ('nanotime', 'flat', ['runtime.nanotime', 'runtime.nanotime1', 'time.now', 'runtime.walltime']),
    ('chan ops', 'cum', ['runtime.chansend1', 'runtime.selectgo', 'runtime.chanrecv1', 'runtime.chanrecv2', 'runtime.selectnbsend']),
    ('wire parse', 'cum', ['github.com/picobridge/picobridge/zenohpath/wire.(*Parser).WalkBatch']),
    ('routing (Router.route)', 'cum', ['github.com/picobridge/picobridge/zenohpath.(*Router).route']),
    ('writeLoop', 'cum', ['github.com/picobridge/picobridge/zenohpath/transport.(*Session).writeLoop']),
]
LINE = re.compile(r'^\s*([\d.]+\w*)\s+([\d.]+)%\s+([\d.]+)%\s+([\d.]+\w*)\s+([\d.]+)%\s+(.*?)(?: \(inline\))?$')


def shares(path):
    out = subprocess.run(['go', 'tool', 'pprof', '-top', '-cum', '-nodecount=100000', path],
                         capture_output=True, text=True, check=True).stdout
    flat, cum, total = {}, {}, ''
    for ln in out.split('\n'):
        if ln.startswith('Duration:'):
            total = ln.split('Total samples = ')[-1].split(' ')[0]
        m = LINE.match(ln)
        if m:
            flat[m.group(6)] = flat.get(m.group(6), 0) + float(m.group(2))
            cum[m.group(6)] = max(cum.get(m.group(6), 0), float(m.group(5)))
    row = []
    for name, how, fns in CLASSES:
        src = flat if how == 'flat' else cum
        row.append(sum(src.get(f, 0) for f in fns))
    return total, row


def main():
    print('| profile | samples | ' + ' | '.join(c[0] for c in CLASSES) + ' |')
    print('|---|---:|' + '---:|' * len(CLASSES))
    for p in sys.argv[1:]:
        total, row = shares(p)
        name = p.rsplit('/', 1)[-1].removesuffix('.cpu')
        print(f'| {name} | {total} | ' + ' | '.join(f'{v:.0f}' for v in row) + ' |')


if __name__ == '__main__':
    main()
