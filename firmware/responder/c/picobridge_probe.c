/*
 * picobridge probe responder for zenoh-pico. See picobridge_probe.h and
 * docs/responder.md.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#include "picobridge_probe.h"

#include <string.h>

#define PICOBRIDGE_PROBE_PING_SUFFIX "/ping"
#define PICOBRIDGE_PROBE_PONG_SUFFIX "/pong"

/* The pico clock is rebased into base_us once elapsed_us passes this, so a
 * 32-bit unsigned long (71 minutes of microseconds) never wraps. */
#define PICOBRIDGE_PROBE_REBASE_US 1000000000UL

/* Longest wait in picobridge_probe_drop for a running callback, ms. */
#define PICOBRIDGE_PROBE_DROP_WAIT_MS 1000

static void put_le64(uint8_t *b, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(v >> (8 * i));
    }
}

int picobridge_probe_respond(const uint8_t *ping, size_t len, uint64_t dev_recv, uint64_t dev_send,
                             uint8_t pong[PICOBRIDGE_PROBE_SIZE]) {
    if (ping == NULL || pong == NULL || len != PICOBRIDGE_PROBE_SIZE ||
        ping[PICOBRIDGE_PROBE_OFF_VERSION] != PICOBRIDGE_PROBE_VERSION ||
        ping[PICOBRIDGE_PROBE_OFF_KIND] != PICOBRIDGE_PROBE_KIND_PING) {
        return -1;
    }
    if (pong != ping) {
        memmove(pong, ping, PICOBRIDGE_PROBE_SIZE);
    }
    pong[PICOBRIDGE_PROBE_OFF_KIND] = PICOBRIDGE_PROBE_KIND_PONG;
    put_le64(pong + PICOBRIDGE_PROBE_OFF_DEV_RECV, dev_recv);
    put_le64(pong + PICOBRIDGE_PROBE_OFF_DEV_SEND, dev_send);
    return 0;
}

bool picobridge_probe_name_valid(const char *name) {
    if (name == NULL) {
        return false;
    }
    size_t n = 0;
    for (; name[n] != '\0'; n++) {
        char c = name[n];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '.' || c == '-';
        if (!ok || n >= PICOBRIDGE_PROBE_NAME_MAX) {
            return false;
        }
    }
    return n > 0;
}

int picobridge_probe_key(char *buf, size_t cap, const char *device, int kind) {
    const char *suffix;
    if (kind == PICOBRIDGE_PROBE_KIND_PING) {
        suffix = PICOBRIDGE_PROBE_PING_SUFFIX;
    } else if (kind == PICOBRIDGE_PROBE_KIND_PONG) {
        suffix = PICOBRIDGE_PROBE_PONG_SUFFIX;
    } else {
        return -1;
    }
    if (buf == NULL || !picobridge_probe_name_valid(device)) {
        return -1;
    }
    size_t lp = sizeof(PICOBRIDGE_PROBE_PREFIX) - 1, ld = strlen(device), ls = strlen(suffix);
    if (lp + ld + ls + 1 > cap) {
        return -1;
    }
    memcpy(buf, PICOBRIDGE_PROBE_PREFIX, lp);
    memcpy(buf + lp, device, ld);
    memcpy(buf + lp + ld, suffix, ls + 1);
    return (int)(lp + ld + ls);
}

uint64_t picobridge_probe_now_ns(picobridge_probe_t *p) {
    if (p->clock_ns != NULL) {
        return p->clock_ns(p->clock_ctx);
    }
    z_clock_t now = z_clock_now();
    unsigned long us = zp_clock_elapsed_us_since(&now, &p->epoch);
    if (us >= PICOBRIDGE_PROBE_REBASE_US) {
        /* Exact rebase: the new epoch is the instant just measured. */
        p->base_us += us;
        p->epoch = now;
        us = 0;
    }
    return (p->base_us + (uint64_t)us) * 1000u;
}

static void on_ping(z_loaned_sample_t *sample, void *arg) {
    picobridge_probe_t *p = (picobridge_probe_t *)arg;
    uint64_t dev_recv = picobridge_probe_now_ns(p);

    const z_loaned_bytes_t *payload = z_sample_payload(sample);
    uint8_t buf[PICOBRIDGE_PROBE_SIZE];
    if (z_bytes_len(payload) != PICOBRIDGE_PROBE_SIZE) {
        p->ignored++;
        return;
    }
    z_bytes_reader_t reader = z_bytes_get_reader(payload);
    if (z_bytes_reader_read(&reader, buf, sizeof(buf)) != sizeof(buf) ||
        buf[PICOBRIDGE_PROBE_OFF_VERSION] != PICOBRIDGE_PROBE_VERSION ||
        buf[PICOBRIDGE_PROBE_OFF_KIND] != PICOBRIDGE_PROBE_KIND_PING) {
        p->ignored++;
        return;
    }
    p->pings++;
    const uint8_t *seq = buf + PICOBRIDGE_PROBE_OFF_SEQ;
    p->last_seq = (uint32_t)seq[0] | (uint32_t)seq[1] << 8 | (uint32_t)seq[2] << 16 | (uint32_t)seq[3] << 24;

    (void)picobridge_probe_respond(buf, sizeof(buf), dev_recv, picobridge_probe_now_ns(p), buf);
    z_owned_bytes_t out;
    if (z_bytes_copy_from_buf(&out, buf, sizeof(buf)) != _Z_RES_OK) {
        p->errors++;
        return;
    }
    if (z_publisher_put(z_publisher_loan(&p->pub), z_bytes_move(&out), NULL) != _Z_RES_OK) {
        p->errors++;
        return;
    }
    p->pongs++;
}

/* Closure drop: zenoh-pico calls it once the subscription is gone and no
 * callback runs any more (in-flight ones hold a reference until they
 * return). */
static void on_closure_drop(void *arg) {
    picobridge_probe_t *p = (picobridge_probe_t *)arg;
    p->callbacks_done = true;
}

void picobridge_probe_options_default(picobridge_probe_options_t *opts) {
    opts->clock_ns = NULL;
    opts->clock_ctx = NULL;
}

z_result_t picobridge_probe_init(picobridge_probe_t *p, const z_loaned_session_t *session, const char *device,
                                 const picobridge_probe_options_t *opts) {
    memset(p, 0, sizeof(*p));
    z_internal_publisher_null(&p->pub);
    z_internal_subscriber_null(&p->sub);
    if (session == NULL || !picobridge_probe_name_valid(device)) {
        return _Z_ERR_INVALID;
    }
    strcpy(p->name, device);
    if (opts != NULL) {
        p->clock_ns = opts->clock_ns;
        p->clock_ctx = opts->clock_ctx;
    }
    p->epoch = z_clock_now();

    char key[PICOBRIDGE_PROBE_KEY_MAX];
    z_view_keyexpr_t ke;

    /* Publisher first, so the first ping can be answered. */
    (void)picobridge_probe_key(key, sizeof(key), device, PICOBRIDGE_PROBE_KIND_PONG);
    z_result_t ret = z_view_keyexpr_from_str(&ke, key);
    if (ret != _Z_RES_OK) {
        return ret;
    }
    z_publisher_options_t popts;
    z_publisher_options_default(&popts);
    popts.congestion_control = Z_CONGESTION_CONTROL_DROP;
    popts.priority = Z_PRIORITY_REAL_TIME;
    popts.is_express = true;
#ifdef Z_FEATURE_UNSTABLE_API
    popts.reliability = Z_RELIABILITY_BEST_EFFORT;
#endif
    ret = z_declare_publisher(session, &p->pub, z_view_keyexpr_loan(&ke), &popts);
    if (ret != _Z_RES_OK) {
        return ret;
    }

    (void)picobridge_probe_key(key, sizeof(key), device, PICOBRIDGE_PROBE_KIND_PING);
    ret = z_view_keyexpr_from_str(&ke, key);
    if (ret == _Z_RES_OK) {
        z_owned_closure_sample_t cb;
        ret = z_closure_sample(&cb, on_ping, on_closure_drop, p);
        if (ret == _Z_RES_OK) {
            ret = z_declare_subscriber(session, &p->sub, z_view_keyexpr_loan(&ke), z_closure_sample_move(&cb), NULL);
        }
    }
    if (ret != _Z_RES_OK) {
        z_publisher_drop(z_publisher_move(&p->pub));
        return ret;
    }
    p->declared = true;
    return _Z_RES_OK;
}

void picobridge_probe_drop(picobridge_probe_t *p) {
    if (p == NULL || !p->declared) {
        return;
    }
    p->declared = false;
    /* Undeclare the subscriber first (the gateway stops probing), then wait
     * for a callback that may still be publishing on another thread to
     * return before the publisher goes. Single-threaded builds never wait. */
    z_subscriber_drop(z_subscriber_move(&p->sub));
    for (int i = 0; !p->callbacks_done && i < PICOBRIDGE_PROBE_DROP_WAIT_MS; i++) {
        z_sleep_ms(1);
    }
    z_publisher_drop(z_publisher_move(&p->pub));
}

void picobridge_probe_get_stats(const picobridge_probe_t *p, picobridge_probe_stats_t *out) {
    out->pings = p->pings;
    out->pongs = p->pongs;
    out->ignored = p->ignored;
    out->errors = p->errors;
    out->last_seq = p->last_seq;
}
