/*
 * fdcheck: drives the zephyrfd shim (run under LD_PRELOAD) through one
 * scenario and prints what happened as one line of key=value facts, which
 * zephyrfd_test.go compares exactly. Scenarios (argv[1]):
 *
 *   timeout  loopback TCP, SO_RCVTIMEO 400 ms: thread R recv()s twice with no
 *            data, thread S send()s while R is in its first recv.
 *   data     loopback TCP, no timeout: R recv()s, S send()s while R waits,
 *            then the peer writes 4 bytes.
 *   window   loopback TCP, no SO_RCVTIMEO, ZEPHYRFD_WINDOW_MS set by the
 *            caller: one recv() with no data.
 *   unix     an AF_UNIX socketpair (not serialized): S send()s while R is
 *            blocked in recv() on the same fd.
 *   gap      SO_RCVTIMEO 300 ms: R recv()s, "processes" for 300 ms, recv()s
 *            again; S send()s during the gap (run with ZEPHYRFD_GRACE_MS
 *            longer than the gap: S waits for R's second recv; shorter: S
 *            goes when the grace lapses).
 *
 * Exit status 2 when the shim is not preloaded; SIGALRM after 10 s.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int (*waiters)(int);
static int (*trace)(int, char *, int);

static int cli = -1, srv = -1;
static volatile int s_done;
static ssize_t r1 = -2, r2 = -2, sent = -2;
static int e1, e2;
static int twice;
static volatile int r1_done;
static useconds_t gap_us;

static void *reader(void *arg) {
    (void)arg;
    char buf[16];
    r1 = recv(cli, buf, sizeof buf, 0);
    e1 = errno;
    __atomic_store_n(&r1_done, 1, __ATOMIC_SEQ_CST);
    usleep(gap_us);
    if (twice) {
        r2 = recv(cli, buf, sizeof buf, 0);
        e2 = errno;
    }
    return NULL;
}

static void *sender(void *arg) {
    (void)arg;
    sent = send(cli, "x", 1, MSG_NOSIGNAL);
    __atomic_store_n(&s_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void tcp_pair(void) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &al) < 0) {
        perror("listen");
        _exit(1);
    }
    cli = socket(AF_INET, SOCK_STREAM, 0);
    if (cli < 0 || connect(cli, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("connect");
        _exit(1);
    }
    srv = accept(l, NULL, NULL);
    if (srv < 0) {
        perror("accept");
        _exit(1);
    }
    close(l);
}

/* trace_is, wait_trace, wait_waiters: poll the shim (1 ms steps, at most 5 s). */
static int trace_is(const char *want) {
    char b[64];
    return trace(cli, b, sizeof b) >= 0 && strcmp(b, want) == 0;
}

static void wait_trace(const char *want) {
    for (int i = 0; i < 5000 && !trace_is(want); i++) {
        usleep(1000);
    }
}

static void wait_waiters(int n) {
    for (int i = 0; i < 5000 && waiters(cli) != n; i++) {
        usleep(1000);
    }
}

int main(int argc, char **argv) {
    void *w = dlsym(RTLD_DEFAULT, "zephyrfd_waiters");
    void *t = dlsym(RTLD_DEFAULT, "zephyrfd_trace");
    if (argc != 2 || w == NULL || t == NULL) {
        fprintf(stderr, "usage: LD_PRELOAD=libzephyrfd.so fdcheck timeout|data|window|unix|gap\n");
        return 2;
    }
    memcpy(&waiters, &w, sizeof w);
    memcpy(&trace, &t, sizeof t);
    alarm(10);
    const char *sc = argv[1];
    pthread_t rt, st;
    char tb[64] = "";

    if (strcmp(sc, "unix") == 0) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
            perror("socketpair");
            return 1;
        }
        cli = sv[0];
        pthread_create(&rt, NULL, reader, NULL);
        usleep(20000); /* R blocked in recv (or about to be): either way S must not wait */
        pthread_create(&st, NULL, sender, NULL);
        pthread_join(st, NULL);
        int early = waiters(cli);
        int tl = trace(cli, tb, sizeof tb);
        if (write(sv[1], "abcd", 4) != 4) {
            return 1;
        }
        pthread_join(rt, NULL);
        printf("unix send=%zd waiters=%d trace=%d r1=%zd\n", sent, early, tl, r1);
        return 0;
    }

    tcp_pair();
    if (strcmp(sc, "window") == 0) {
        reader(NULL);
        printf("window r1=%zd eagain=%d\n", r1, e1 == EAGAIN);
        return 0;
    }
    if (strcmp(sc, "gap") == 0) {
        struct timeval tv = {.tv_sec = 0, .tv_usec = 300000};
        setsockopt(cli, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        twice = 1;
        gap_us = 300000;
        pthread_create(&rt, NULL, reader, NULL);
        for (int i = 0; i < 5000 && !__atomic_load_n(&r1_done, __ATOMIC_SEQ_CST); i++) {
            usleep(1000);
        }
        pthread_create(&st, NULL, sender, NULL); /* R is in its gap */
        pthread_join(st, NULL);
        pthread_join(rt, NULL);
        trace(cli, tb, sizeof tb);
        printf("gap trace=%s r1=%zd r2=%zd send=%zd\n", tb, r1, r2, sent);
        return 0;
    }
    if (strcmp(sc, "timeout") == 0) {
        struct timeval tv = {.tv_sec = 0, .tv_usec = 400000};
        setsockopt(cli, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        twice = 1;
    } else if (strcmp(sc, "data") != 0) {
        fprintf(stderr, "fdcheck: unknown scenario %s\n", sc);
        return 2;
    }
    pthread_create(&rt, NULL, reader, NULL);
    wait_trace("r"); /* R holds the lock: it is in its first recv */
    pthread_create(&st, NULL, sender, NULL);
    wait_waiters(1); /* S waits for the lock */
    int early = __atomic_load_n(&s_done, __ATOMIC_SEQ_CST);
    if (strcmp(sc, "data") == 0 && write(srv, "abcd", 4) != 4) {
        return 1;
    }
    pthread_join(st, NULL);
    pthread_join(rt, NULL);
    char got[4];
    ssize_t peer = recv(srv, got, sizeof got, 0);
    trace(cli, tb, sizeof tb);
    if (twice) {
        printf("%s trace=%s r1=%zd eagain=%d r2=%zd send=%zd early=%d peer=%zd\n", sc, tb, r1, e1 == EAGAIN, r2,
               sent, early, peer);
    } else {
        printf("%s trace=%s r1=%zd send=%zd early=%d peer=%zd\n", sc, tb, r1, sent, early, peer);
    }
    return 0;
}
