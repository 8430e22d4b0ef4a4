/*
 * rxtx: a zenoh-pico client that measures what a device sees (docs/devsim.md,
 * "devsim against real zenoh-pico"). Linked against a zenoh-pico build
 * (ZENOH_PICO_DIR), usually run under the zephyrfd shim.
 *
 *   rxtx -e ENDPOINT [-s KEY] [-p KEY] [-r HZ] [-z SIZE] [-x] [-d SEC] [-w SEC]
 *        [-n NAME] [-l]
 *
 *   -e  router locator, e.g. tcp/127.0.0.1:7447#tout=5 (tout = the socket
 *       timeout in ms, zenoh-pico's SO_RCVTIMEO; default Z_CONFIG_SOCKET_TIMEOUT)
 *   -s  subscribe to KEY and record each sample's receive latency
 *   -p  publish on KEY: at -r HZ, or in a tight loop when -r is 0 (default)
 *   -z  payload size, bytes (default 64, 24 to 65536)
 *   -x  express publisher (default off; the build's batching is never started)
 *   -w  warm-up after the declarations, seconds (default 1): the write filter
 *       opens, the sender of the inbound stream starts
 *   -d  measured phase, seconds (default 10)
 *   -n  answer picobridge's probes as device NAME (firmware/responder's
 *       picobridge_probe.c, which also announces the build's knobs), so a
 *       picobridge gateway classifies this device as it would a board
 *   -l  print one line per stamped sample of the measured phase, from the
 *       callback, before the closing JSON: "r STAMP_NS RECV_NS" (both
 *       CLOCK_REALTIME ns; eval/runner's zenoh-pico device series reads it)
 *
 * Payload format, both directions: little-endian CDR of a std_msgs/Header,
 * as picobridge's gateway and devsim write it: bytes 0-3 encapsulation
 * 00 01 00 00 (CDR_LE), 4-7 stamp.sec (int32 LE), 8-11 stamp.nanosec (uint32
 * LE), then the frame_id string "rxtx" (uint32 LE length 5, "rxtx\0"),
 * zero-padded to the size. The stamp is the publish time on the host's
 * CLOCK_REALTIME (a big-endian encapsulation, 00 00, is read too).
 * Latency = CLOCK_REALTIME in the subscriber callback (zenoh-pico's read
 * task) - stamp; only samples whose callback runs in the measured phase count.
 *
 * stdout: "ready" once the session is open and the entities are declared,
 * then one JSON line at the end:
 *   {"rxtx":1,"shim":B,"seconds":S,
 *    "rx":{"samples":N,"stamped":M,"p50_ms":..,"p95_ms":..,"p99_ms":..,"max_ms":..},
 *    "tx":{"puts":N,"errors":E,"msg_per_s":X}}
 * shim: the zephyrfd shim is loaded. Percentiles are nearest-rank over the
 * stamped samples (0 when none). Exit status 1 when the session cannot be
 * opened or an entity declared, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zenoh-pico.h"
#include "picobridge_probe.h"

#define MAX_SAMPLES (1 << 20)

static double lat_ms[MAX_SAMPLES];
static atomic_int phase;    /* 0 warm-up, 1 measured, 2 done */
static atomic_long samples; /* callbacks in the measured phase */
static atomic_long stamped; /* of which with a stamp (entries of lat_ms) */
static int log_samples;     /* -l */

static int64_t realtime_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static double mono_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint32_t rd32(const uint8_t *b, int le) {
    return le ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24
              : (uint32_t)b[3] | (uint32_t)b[2] << 8 | (uint32_t)b[1] << 16 | (uint32_t)b[0] << 24;
}

static void wr32(uint8_t *b, uint32_t v) {
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
    b[2] = (uint8_t)(v >> 16);
    b[3] = (uint8_t)(v >> 24);
}

/* stamp_payload writes the CDR header with the current time into b. */
static void stamp_payload(uint8_t *b, size_t size) {
    memset(b, 0, size);
    b[1] = 0x01;
    int64_t now = realtime_ns();
    wr32(b + 4, (uint32_t)(now / 1000000000LL));
    wr32(b + 8, (uint32_t)(now % 1000000000LL));
    wr32(b + 12, 5);
    memcpy(b + 16, "rxtx", 5);
}

static void on_sample(z_loaned_sample_t *sample, void *arg) {
    (void)arg;
    int64_t now = realtime_ns();
    if (atomic_load(&phase) != 1) {
        return;
    }
    atomic_fetch_add(&samples, 1);
    uint8_t h[12];
    z_bytes_reader_t r = z_bytes_get_reader(z_sample_payload(sample));
    if (z_bytes_reader_read(&r, h, sizeof h) != sizeof h || h[0] != 0 || h[1] > 3) {
        return;
    }
    int le = h[1] & 1;
    int64_t stamp = (int64_t)(int32_t)rd32(h + 4, le) * 1000000000LL + rd32(h + 8, le);
    if (stamp == 0) {
        return;
    }
    long i = atomic_fetch_add(&stamped, 1);
    if (i < MAX_SAMPLES) {
        lat_ms[i] = (double)(now - stamp) / 1e6;
    }
    if (log_samples) {
        printf("r %lld %lld\n", (long long)stamp, (long long)now);
        fflush(stdout);
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* rank returns the nearest-rank p-quantile of the sorted v[0..n). */
static double rank(const double *v, long n, double p) {
    if (n == 0) {
        return 0;
    }
    long i = (long)ceil(p * (double)n) - 1;
    if (i < 0) {
        i = 0;
    }
    return v[i];
}

int main(int argc, char **argv) {
    const char *ep = NULL, *sub_key = NULL, *pub_key = NULL, *name = NULL;
    double hz = 0, dur = 10, warm = 1;
    long size = 64;
    int express = 0, opt;
    while ((opt = getopt(argc, argv, "e:s:p:r:z:xd:w:n:l")) != -1) {
        switch (opt) {
            case 'e': ep = optarg; break;
            case 's': sub_key = optarg; break;
            case 'p': pub_key = optarg; break;
            case 'r': hz = atof(optarg); break;
            case 'z': size = atol(optarg); break;
            case 'x': express = 1; break;
            case 'd': dur = atof(optarg); break;
            case 'w': warm = atof(optarg); break;
            case 'n': name = optarg; break;
            case 'l': log_samples = 1; break;
            default: return 2;
        }
    }
    if (ep == NULL || (sub_key == NULL && pub_key == NULL) || size < 24 || size > 65536 || hz < 0 || dur <= 0 ||
        warm < 0 || (name != NULL && !picobridge_probe_name_valid(name))) {
        fprintf(stderr,
                "usage: rxtx -e ENDPOINT [-s KEY] [-p KEY] [-r HZ] [-z SIZE 24..65536] [-x] [-d SEC] [-w SEC] "
                "[-n NAME [A-Za-z0-9_.-]{1,64}] [-l]\n");
        return 2;
    }

    z_owned_config_t config;
    z_config_default(&config);
    zp_config_insert(z_loan_mut(config), Z_CONFIG_MODE_KEY, "client");
    zp_config_insert(z_loan_mut(config), Z_CONFIG_CONNECT_KEY, ep);
    z_owned_session_t s;
    if (z_open(&s, z_move(config), NULL) < 0) {
        fprintf(stderr, "rxtx: cannot open a session to %s\n", ep);
        return 1;
    }
    z_owned_subscriber_t sub;
    if (sub_key != NULL) {
        z_view_keyexpr_t ke;
        z_owned_closure_sample_t cb;
        z_closure(&cb, on_sample, NULL, NULL);
        if (z_view_keyexpr_from_str(&ke, sub_key) < 0 ||
            z_declare_subscriber(z_loan(s), &sub, z_loan(ke), z_move(cb), NULL) < 0) {
            fprintf(stderr, "rxtx: cannot subscribe to %s\n", sub_key);
            return 1;
        }
    }
    z_owned_publisher_t pub;
    if (pub_key != NULL) {
        z_view_keyexpr_t ke;
        z_publisher_options_t o;
        z_publisher_options_default(&o);
        o.is_express = express;
        o.congestion_control = Z_CONGESTION_CONTROL_BLOCK;
        if (z_view_keyexpr_from_str(&ke, pub_key) < 0 || z_declare_publisher(z_loan(s), &pub, z_loan(ke), &o) < 0) {
            fprintf(stderr, "rxtx: cannot declare a publisher on %s\n", pub_key);
            return 1;
        }
    }
    static picobridge_probe_t probe; /* must not move while declared */
    if (name != NULL && picobridge_probe_init(&probe, z_loan(s), name, NULL) < 0) {
        fprintf(stderr, "rxtx: cannot declare the probe responder of %s\n", name);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);

    usleep((useconds_t)(warm * 1e6));
    long puts = 0, errors = 0;
    uint8_t *buf = malloc((size_t)size);
    if (buf == NULL) {
        return 1;
    }
    atomic_store(&phase, 1);
    double t0 = mono_s(), end = t0 + dur, next = t0;
    while (mono_s() < end) {
        if (pub_key == NULL) {
            usleep(10000);
            continue;
        }
        if (hz > 0) {
            next += 1.0 / hz;
            double wait = next - mono_s();
            if (wait > 0) {
                usleep((useconds_t)(wait * 1e6));
            }
        }
        stamp_payload(buf, (size_t)size);
        z_owned_bytes_t payload;
        z_bytes_copy_from_buf(&payload, buf, (size_t)size);
        if (z_publisher_put(z_loan(pub), z_move(payload), NULL) == Z_OK) {
            puts++;
        } else {
            errors++;
        }
    }
    double secs = mono_s() - t0;
    atomic_store(&phase, 2);

    if (name != NULL) {
        picobridge_probe_drop(&probe);
    }
    if (pub_key != NULL) {
        z_drop(z_move(pub));
    }
    if (sub_key != NULL) {
        z_drop(z_move(sub));
    }
    z_drop(z_move(s));

    long n = atomic_load(&stamped);
    if (n > MAX_SAMPLES) {
        n = MAX_SAMPLES;
    }
    qsort(lat_ms, (size_t)n, sizeof lat_ms[0], cmp_double);
    printf("{\"rxtx\":1,\"shim\":%s,\"seconds\":%.6f,"
           "\"rx\":{\"samples\":%ld,\"stamped\":%ld,\"p50_ms\":%.4f,\"p95_ms\":%.4f,\"p99_ms\":%.4f,\"max_ms\":%.4f},"
           "\"tx\":{\"puts\":%ld,\"errors\":%ld,\"msg_per_s\":%.3f}}\n",
           dlsym(RTLD_DEFAULT, "zephyrfd_waiters") != NULL ? "true" : "false", secs, atomic_load(&samples), n,
           rank(lat_ms, n, 0.50), rank(lat_ms, n, 0.95), rank(lat_ms, n, 0.99), n > 0 ? lat_ms[n - 1] : 0.0, puts,
           errors, (double)puts / secs);
    free(buf);
    return 0;
}
