/*
 * zephyrfd: an LD_PRELOAD shim that gives a POSIX process Zephyr's per-socket
 * serialization, so that real zenoh-pico built for POSIX shows the TX ceiling
 * of a zenoh-pico device on Zephyr (docs/devsim.md, "devsim against real
 * zenoh-pico"; issue 24 item 4).
 *
 * What Zephyr does (anchors.md §2.2, §2.6): zsock serializes the operations on
 * one socket with a per-fd k_mutex. zenoh-pico's read task sits in a blocking
 * recv with SO_RCVTIMEO = the socket timeout (tcp_zephyr.c), so another
 * thread's send on that socket waits until the recv returns: at once when data
 * arrives, else at the timeout. k_mutex_unlock hands the mutex straight to the
 * longest-waiting thread of the highest priority, so a waiting sender goes
 * before the read task's next recv.
 *
 * What this shim does, for every TCP socket of the process (socket(AF_INET or
 * AF_INET6, SOCK_STREAM) and accept/accept4 results; other fds pass straight
 * through):
 *   - recv, recvfrom, recvmsg, read, send, sendto, sendmsg and write take a
 *     per-fd FIFO ticket lock for the whole call (a blocked recv included);
 *     unlocking serves the next ticket, which is the hand-off of k_mutex (all
 *     threads at one priority);
 *   - the thread whose recv just returned (the read task) gets the ticket
 *     after the current waiters, held for it for ZEPHYRFD_GRACE_MS (default
 *     5 ms): on a Zephyr core the read task runs on into its next recv before
 *     a thread that was not already waiting can send, while Linux may leave it
 *     off the CPU for milliseconds as a tight-loop sender keeps sending
 *     (measured without it: 5 700 sends/s at a 100 ms window, in bursts of
 *     hundreds while the read thread waited for a CPU; with it: 10.3/s). A
 *     reader that stays away longer (it blocks on a mutex the sender holds,
 *     or runs a long callback) loses the turn (stats: resv_lapsed);
 *   - a recv on a socket with a receive timeout waits for data with poll(2)
 *     for that timeout, then reads with MSG_DONTWAIT; no data: -1, EAGAIN, as
 *     the kernel's SO_RCVTIMEO would. Linux rounds SO_RCVTIMEO up to scheduler
 *     ticks (measured on the test host: 5 ms gave 8.7-16 ms, median 12 ms),
 *     poll's timer is exact to ~0.1 ms;
 *   - the timeout is the one the program set with setsockopt(SO_RCVTIMEO)
 *     (passed on to the kernel too): zenoh-pico's POSIX TCP link sets it to
 *     the locator's `tout` parameter, default Z_CONFIG_SOCKET_TIMEOUT
 *     (src/link/unicast/tcp.c, _z_open_tcp in src/system/unix/network.c,
 *     1.9.0), so `tcp/127.0.0.1:7447#tout=5` gives a 5 ms window.
 *     ZEPHYRFD_WINDOW_MS=N (N >= 1) overrides it for every socket, for
 *     programs that set none (the kernel keeps what the program set).
 *
 * ZEPHYRFD_STATS=1 prints one line per socket that was used at exit on
 * stderr: `zephyrfd {"fd":N,"recvs":..,"recv_timeouts":..,"sends":..,
 * "sends_waited":..,"send_wait_ms":..,"resv_made":..,"resv_lapsed":..}`.
 *
 * Inspection (for tests): zephyrfd_waiters(fd) is the number of threads
 * waiting for fd's lock, zephyrfd_trace(fd, buf, n) writes the order in which
 * the lock was granted ('r' receive, 's' send; the last 63 grants).
 *
 * Not covered: readv/writev, sockets beyond ZEPHYRFD_MAX_FD, UDP, and the
 * priorities of Zephyr threads (every thread here has the same).
 *
 * Build: cc -shared -fPIC -O2 -o libzephyrfd.so zephyrfd.c -lpthread -ldl
 * Use:   LD_PRELOAD=/path/libzephyrfd.so ./program
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define ZEPHYRFD_MAX_FD 4096
#define TRACE_LEN 64

struct fdslot {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned long next, serving; /* FIFO tickets: the holder has serving */
    int tracked;                 /* a TCP socket: serialize (atomic) */
    int timeout_ms;              /* receive timeout; < 0: none */
    unsigned waiters;
    char trace[TRACE_LEN];
    unsigned tn;
    unsigned long resv;          /* the ticket held for the read task */
    int resv_on;
    pthread_t resv_owner;
    struct timespec resv_deadline; /* CLOCK_MONOTONIC */
    unsigned long recvs, recv_timeouts, sends, sends_waited, resv_made, resv_lapsed;
    double send_wait_ms;
};

static struct fdslot table[ZEPHYRFD_MAX_FD];
static int window_ms = -1; /* ZEPHYRFD_WINDOW_MS; < 0: unset */
static int stats_on;
static int grace_ms = 5; /* ZEPHYRFD_GRACE_MS */

static int (*real_socket)(int, int, int);
static int (*real_accept)(int, struct sockaddr *, socklen_t *);
static int (*real_accept4)(int, struct sockaddr *, socklen_t *, int);
static int (*real_close)(int);
static int (*real_setsockopt)(int, int, int, const void *, socklen_t);
static ssize_t (*real_recv)(int, void *, size_t, int);
static ssize_t (*real_recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
static ssize_t (*real_recvmsg)(int, struct msghdr *, int);
static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_send)(int, const void *, size_t, int);
static ssize_t (*real_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static ssize_t (*real_write)(int, const void *, size_t);

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *sym(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (p == NULL) {
        fprintf(stderr, "zephyrfd: dlsym(%s) failed\n", name);
        abort();
    }
    return p;
}

/* SYM stores the next definition of name in the function pointer v (memcpy:
 * ISO C has no conversion from void * to a function pointer). */
#define SYM(v, name)                  \
    do {                              \
        void *p_ = sym(name);         \
        memcpy(&(v), &p_, sizeof p_); \
    } while (0)

static void init(void) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (int i = 0; i < ZEPHYRFD_MAX_FD; i++) {
        pthread_mutex_init(&table[i].mu, NULL);
        pthread_cond_init(&table[i].cv, &ca);
        table[i].timeout_ms = -1;
    }
    SYM(real_socket, "socket");
    SYM(real_accept, "accept");
    SYM(real_accept4, "accept4");
    SYM(real_close, "close");
    SYM(real_setsockopt, "setsockopt");
    SYM(real_recv, "recv");
    SYM(real_recvfrom, "recvfrom");
    SYM(real_recvmsg, "recvmsg");
    SYM(real_read, "read");
    SYM(real_send, "send");
    SYM(real_sendto, "sendto");
    SYM(real_sendmsg, "sendmsg");
    SYM(real_write, "write");
    const char *w = getenv("ZEPHYRFD_WINDOW_MS");
    if (w != NULL && atoi(w) > 0) {
        window_ms = atoi(w);
    }
    const char *g = getenv("ZEPHYRFD_GRACE_MS");
    if (g != NULL && *g != '\0') {
        grace_ms = atoi(g) > 0 ? atoi(g) : 0;
    }
    const char *s = getenv("ZEPHYRFD_STATS");
    stats_on = s != NULL && *s != '\0' && strcmp(s, "0") != 0;
}

static void ensure(void) { pthread_once(&once, init); }

__attribute__((constructor)) static void ctor(void) { ensure(); }

__attribute__((destructor)) static void dtor(void) {
    if (!stats_on) {
        return;
    }
    for (int i = 0; i < ZEPHYRFD_MAX_FD; i++) {
        struct fdslot *s = &table[i];
        if (s->recvs + s->sends == 0) {
            continue;
        }
        fprintf(stderr,
                "zephyrfd {\"fd\":%d,\"recvs\":%lu,\"recv_timeouts\":%lu,\"sends\":%lu,\"sends_waited\":%lu,"
                "\"send_wait_ms\":%.3f,\"resv_made\":%lu,\"resv_lapsed\":%lu}\n",
                i, s->recvs, s->recv_timeouts, s->sends, s->sends_waited, s->send_wait_ms, s->resv_made,
                s->resv_lapsed);
    }
}

/* slot returns fd's slot when fd is a tracked socket, else NULL. */
static struct fdslot *slot(int fd) {
    ensure();
    if (fd < 0 || fd >= ZEPHYRFD_MAX_FD || !__atomic_load_n(&table[fd].tracked, __ATOMIC_ACQUIRE)) {
        return NULL;
    }
    return &table[fd];
}

static void track(int fd) {
    if (fd < 0 || fd >= ZEPHYRFD_MAX_FD) {
        return;
    }
    struct fdslot *s = &table[fd];
    pthread_mutex_lock(&s->mu);
    s->timeout_ms = window_ms >= 0 ? window_ms : -1;
    s->tn = 0;
    s->trace[0] = '\0';
    s->recvs = s->recv_timeouts = s->sends = s->sends_waited = s->resv_made = s->resv_lapsed = 0;
    s->send_wait_ms = 0;
    __atomic_store_n(&s->tracked, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&s->mu);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* mono_deadline returns CLOCK_MONOTONIC now + ms. */
static struct timespec mono_deadline(int ms) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static int passed(const struct timespec *d) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec > d->tv_sec || (t.tv_sec == d->tv_sec && t.tv_nsec >= d->tv_nsec);
}

/* lock takes s's ticket lock for an operation of kind op ('r' or 's'). The
 * calling thread uses its reservation when it holds one (see unlock). A
 * reservation whose turn has come but whose owner has not come back by its
 * deadline is skipped (counted in resv_lapsed). */
static void lock(struct fdslot *s, char op) {
    double t0 = 0;
    pthread_mutex_lock(&s->mu);
    unsigned long t;
    if (s->resv_on && pthread_equal(s->resv_owner, pthread_self())) {
        t = s->resv;
        s->resv_on = 0;
    } else {
        t = s->next++;
    }
    int waited = s->serving != t;
    if (waited) {
        if (op == 's') {
            t0 = now_ms();
        }
        s->waiters++;
        while (s->serving != t) {
            if (s->resv_on && s->serving == s->resv) {
                if (passed(&s->resv_deadline)) {
                    s->resv_on = 0;
                    s->resv_lapsed++;
                    s->serving++;
                    pthread_cond_broadcast(&s->cv);
                    continue;
                }
                pthread_cond_timedwait(&s->cv, &s->mu, &s->resv_deadline);
            } else {
                pthread_cond_wait(&s->cv, &s->mu);
            }
        }
        s->waiters--;
    }
    if (s->tn < TRACE_LEN - 1) {
        s->trace[s->tn++] = op;
    } else {
        memmove(s->trace, s->trace + 1, TRACE_LEN - 2);
        s->trace[TRACE_LEN - 2] = op;
    }
    s->trace[s->tn] = '\0';
    if (op == 's') {
        s->sends++;
        if (waited) {
            s->sends_waited++;
            s->send_wait_ms += now_ms() - t0;
        }
    } else {
        s->recvs++;
    }
    pthread_mutex_unlock(&s->mu);
}

/* unlock serves the next ticket: the longest waiter gets the lock. After a
 * receive, the receiving thread (the read task) also gets the ticket after
 * the current waiters, held for it for grace_ms: on a Zephyr core the read
 * task runs on after its recv returns and is back in recv before a thread
 * that was not yet waiting can send, whereas a Linux scheduler may leave it
 * off the CPU for milliseconds while the sender loops. */
static void unlock(struct fdslot *s, char op) {
    pthread_mutex_lock(&s->mu);
    s->serving++;
    if (op == 'r' && grace_ms > 0 && !s->resv_on) {
        s->resv = s->next++;
        s->resv_on = 1;
        s->resv_owner = pthread_self();
        s->resv_deadline = mono_deadline(grace_ms);
        s->resv_made++;
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* wait_readable applies the receive timeout: 1 when the caller may read, 0
 * (errno EAGAIN) at the timeout, -1 on a poll error. */
static int wait_readable(struct fdslot *s, int fd, int flags) {
    int tmo = s->timeout_ms;
    if (tmo <= 0 || (flags & MSG_DONTWAIT)) {
        return 1;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r;
    do {
        r = poll(&p, 1, tmo);
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
        pthread_mutex_lock(&s->mu);
        s->recv_timeouts++;
        pthread_mutex_unlock(&s->mu);
        errno = EAGAIN;
    }
    return r;
}

/* timed reports whether the receive timeout is the shim's (then the read
 * itself must not block again). */
static int timed(struct fdslot *s, int flags) { return s->timeout_ms > 0 && !(flags & MSG_DONTWAIT); }

int socket(int domain, int type, int protocol) {
    ensure();
    int fd = real_socket(domain, type, protocol);
    if (fd >= 0 && (domain == AF_INET || domain == AF_INET6) && (type & 0xf) == SOCK_STREAM) {
        track(fd);
    }
    return fd;
}

int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    ensure();
    int c = real_accept(fd, addr, len);
    if (c >= 0 && slot(fd) != NULL) {
        track(c);
    }
    return c;
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    ensure();
    int c = real_accept4(fd, addr, len, flags);
    if (c >= 0 && slot(fd) != NULL) {
        track(c);
    }
    return c;
}

int close(int fd) {
    struct fdslot *s = slot(fd);
    if (s != NULL) {
        pthread_mutex_lock(&s->mu);
        s->resv_deadline = mono_deadline(0); /* nobody comes back for it */
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        __atomic_store_n(&s->tracked, 0, __ATOMIC_RELEASE);
    }
    return real_close(fd);
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len) {
    struct fdslot *s = slot(fd);
    if (s != NULL && level == SOL_SOCKET && name == SO_RCVTIMEO && len >= sizeof(struct timeval) &&
        window_ms < 0) {
        const struct timeval *tv = val;
        long ms = (long)tv->tv_sec * 1000 + (long)(tv->tv_usec + 999) / 1000;
        pthread_mutex_lock(&s->mu);
        s->timeout_ms = ms > 0 ? (int)ms : -1;
        pthread_mutex_unlock(&s->mu);
    }
    return real_setsockopt(fd, level, name, val, len);
}

ssize_t recv(int fd, void *buf, size_t n, int flags) {
    struct fdslot *s = slot(fd);
    if (s == NULL) {
        return real_recv(fd, buf, n, flags);
    }
    lock(s, 'r');
    ssize_t r = -1;
    if (wait_readable(s, fd, flags) > 0) {
        r = real_recv(fd, buf, n, timed(s, flags) ? flags | MSG_DONTWAIT : flags);
    }
    int e = errno;
    unlock(s, 'r');
    errno = e;
    return r;
}

ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *alen) {
    struct fdslot *s = slot(fd);
    if (s == NULL) {
        return real_recvfrom(fd, buf, n, flags, addr, alen);
    }
    lock(s, 'r');
    ssize_t r = -1;
    if (wait_readable(s, fd, flags) > 0) {
        r = real_recvfrom(fd, buf, n, timed(s, flags) ? flags | MSG_DONTWAIT : flags, addr, alen);
    }
    int e = errno;
    unlock(s, 'r');
    errno = e;
    return r;
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
    struct fdslot *s = slot(fd);
    if (s == NULL) {
        return real_recvmsg(fd, msg, flags);
    }
    lock(s, 'r');
    ssize_t r = -1;
    if (wait_readable(s, fd, flags) > 0) {
        r = real_recvmsg(fd, msg, timed(s, flags) ? flags | MSG_DONTWAIT : flags);
    }
    int e = errno;
    unlock(s, 'r');
    errno = e;
    return r;
}

ssize_t read(int fd, void *buf, size_t n) {
    struct fdslot *s = slot(fd);
    if (s == NULL) {
        return real_read(fd, buf, n);
    }
    lock(s, 'r');
    ssize_t r = -1;
    if (wait_readable(s, fd, 0) > 0) {
        r = timed(s, 0) ? real_recv(fd, buf, n, MSG_DONTWAIT) : real_read(fd, buf, n);
    }
    int e = errno;
    unlock(s, 'r');
    errno = e;
    return r;
}

ssize_t send(int fd, const void *buf, size_t n, int flags) {
    struct fdslot *s = slot(fd);
    if (s == NULL) {
        return real_send(fd, buf, n, flags);
    }
    lock(s, 's');
    ssize_t r = real_send(fd, buf, n, flags);
    int e = errno;
    unlock(s, 's');
    errno = e;
    return r;
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t alen) {
    struct fdslot *s = slot(fd);
    if (s == NULL) {
        return real_sendto(fd, buf, n, flags, addr, alen);
    }
    lock(s, 's');
    ssize_t r = real_sendto(fd, buf, n, flags, addr, alen);
    int e = errno;
    unlock(s, 's');
    errno = e;
    return r;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
    struct fdslot *s = slot(fd);
    if (s == NULL) {
        return real_sendmsg(fd, msg, flags);
    }
    lock(s, 's');
    ssize_t r = real_sendmsg(fd, msg, flags);
    int e = errno;
    unlock(s, 's');
    errno = e;
    return r;
}

ssize_t write(int fd, const void *buf, size_t n) {
    struct fdslot *s = slot(fd);
    if (s == NULL) {
        return real_write(fd, buf, n);
    }
    lock(s, 's');
    ssize_t r = real_write(fd, buf, n);
    int e = errno;
    unlock(s, 's');
    errno = e;
    return r;
}

/* zephyrfd_waiters returns the number of threads waiting for fd's lock (0
 * for an fd the shim does not serialize). */
int zephyrfd_waiters(int fd) {
    struct fdslot *s = slot(fd);
    if (s == NULL) {
        return 0;
    }
    pthread_mutex_lock(&s->mu);
    int n = (int)s->waiters;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* zephyrfd_trace copies the grant order of fd's lock ('r', 's') into buf
 * (NUL-terminated, at most n-1 characters) and returns its length; -1 for
 * an fd the shim does not serialize. */
int zephyrfd_trace(int fd, char *buf, int n) {
    struct fdslot *s = slot(fd);
    if (s == NULL || n <= 0) {
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    int l = (int)strlen(s->trace);
    if (l > n - 1) {
        l = n - 1;
    }
    memcpy(buf, s->trace + strlen(s->trace) - (size_t)l, (size_t)l);
    buf[l] = '\0';
    pthread_mutex_unlock(&s->mu);
    return l;
}
