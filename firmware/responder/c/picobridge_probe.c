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
#define PICOBRIDGE_PROBE_KNOBS_SUFFIX "/knobs"

/* nano-ros builtin defaults (knobs.Registry) for the fields a build does
 * not define. */
#ifndef NROS_ZENOH_TX_FLUSH_MS
#define NROS_ZENOH_TX_FLUSH_MS 50
#endif
#ifndef NROS_ZENOH_TX_SPLIT_LOCK
#define NROS_ZENOH_TX_SPLIT_LOCK 0
#endif
#ifndef NROS_ZENOH_SUBSCRIBER_RING_DEPTH
#define NROS_ZENOH_SUBSCRIBER_RING_DEPTH 4
#endif
#ifndef NROS_ZENOH_SUBSCRIBER_BUFFER_SIZE
#define NROS_ZENOH_SUBSCRIBER_BUFFER_SIZE 1024
#endif

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

static void put_le16(uint8_t *b, uint16_t v) {
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *b, uint32_t v) {
    for (int i = 0; i < 4; i++) {
        b[i] = (uint8_t)(v >> (8 * i));
    }
}

void picobridge_probe_knobs_from_build(picobridge_probe_knobs_t *k) {
    memset(k, 0, sizeof(*k));
    k->batch_unicast_size = (uint16_t)Z_BATCH_UNICAST_SIZE;
    k->frag_max_size = (uint32_t)Z_FRAG_MAX_SIZE;
    k->fragmentation = Z_FEATURE_FRAGMENTATION == 1;
    k->lease_ms = (uint32_t)Z_TRANSPORT_LEASE;
    k->lease_expire_factor = (uint8_t)Z_TRANSPORT_LEASE_EXPIRE_FACTOR;
    k->socket_timeout_ms = (uint32_t)Z_CONFIG_SOCKET_TIMEOUT;
#ifdef NROS_ZENOH_TX_BATCH
    k->nano_ros = true;
    k->tx_batch = NROS_ZENOH_TX_BATCH != 0;
    k->tx_split_lock = NROS_ZENOH_TX_SPLIT_LOCK != 0;
    k->tx_flush_ms = (uint16_t)NROS_ZENOH_TX_FLUSH_MS;
    k->subscriber_ring_depth = (uint16_t)NROS_ZENOH_SUBSCRIBER_RING_DEPTH;
    k->subscriber_buffer_size = (uint32_t)NROS_ZENOH_SUBSCRIBER_BUFFER_SIZE;
#endif
}

void picobridge_probe_knobs_encode(const picobridge_probe_knobs_t *k, uint8_t out[PICOBRIDGE_PROBE_KNOBS_SIZE]) {
    memset(out, 0, PICOBRIDGE_PROBE_KNOBS_SIZE);
    out[0] = PICOBRIDGE_PROBE_VERSION;
    out[1] = PICOBRIDGE_PROBE_KIND_KNOBS;
    uint16_t flags = 0;
    if (k->fragmentation) {
        flags |= PICOBRIDGE_PROBE_KNOBS_FRAGMENTATION;
    }
    if (k->nano_ros) {
        flags |= PICOBRIDGE_PROBE_KNOBS_NANO_ROS;
        if (k->tx_batch) {
            flags |= PICOBRIDGE_PROBE_KNOBS_TX_BATCH;
        }
        if (k->tx_split_lock) {
            flags |= PICOBRIDGE_PROBE_KNOBS_SPLIT_LOCK;
        }
        put_le16(out + 6, k->subscriber_ring_depth);
        put_le16(out + 20, k->tx_flush_ms);
        put_le32(out + 24, k->subscriber_buffer_size);
    }
    put_le16(out + 2, flags);
    put_le16(out + 4, k->batch_unicast_size);
    put_le32(out + 8, k->frag_max_size);
    put_le32(out + 12, k->lease_ms);
    put_le32(out + 16, k->socket_timeout_ms);
    out[22] = k->lease_expire_factor;
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
    } else if (kind == PICOBRIDGE_PROBE_KIND_KNOBS) {
        suffix = PICOBRIDGE_PROBE_KNOBS_SUFFIX;
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

    /* Announce the build's knobs once (docs/probe.md). */
    (void)picobridge_probe_key(key, sizeof(key), device, PICOBRIDGE_PROBE_KIND_KNOBS);
    picobridge_probe_knobs_t knobs;
    uint8_t ann[PICOBRIDGE_PROBE_KNOBS_SIZE];
    picobridge_probe_knobs_from_build(&knobs);
    picobridge_probe_knobs_encode(&knobs, ann);
    z_owned_bytes_t payload;
    if (z_view_keyexpr_from_str(&ke, key) != _Z_RES_OK || z_bytes_copy_from_buf(&payload, ann, sizeof(ann)) != _Z_RES_OK) {
        p->errors++;
    } else if (z_put(session, z_view_keyexpr_loan(&ke), z_bytes_move(&payload), NULL) != _Z_RES_OK) {
        p->errors++;
    }
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
