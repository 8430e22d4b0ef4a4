/*
 * picobridge probe responder for zenoh-pico (device side of docs/probe.md).
 *
 * The gateway sends a 32-byte ping on  @picobridge/probe/<device>/ping
 * and the device answers at once on    @picobridge/probe/<device>/pong
 * with the same 32 bytes, kind set to 2 (pong) and its own receive and send
 * times (ns, any monotonic device clock) in dev_recv and dev_send. The
 * subscription to the ping key is how the device announces its name.
 *
 * Only zenoh-pico's public API is used (z_declare_subscriber,
 * z_declare_publisher, z_publisher_put, z_clock_now). Tested with zenoh-pico
 * 1.9.0.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef PICOBRIDGE_PROBE_H
#define PICOBRIDGE_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zenoh-pico.h>

#if Z_FEATURE_SUBSCRIPTION != 1 || Z_FEATURE_PUBLICATION != 1
#error "picobridge_probe needs zenoh-pico built with Z_FEATURE_SUBSCRIPTION and Z_FEATURE_PUBLICATION"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Wire layout (little-endian), identical to bridge/probe.go. */
#define PICOBRIDGE_PROBE_SIZE 32
#define PICOBRIDGE_PROBE_VERSION 1
#define PICOBRIDGE_PROBE_KIND_PING 1
#define PICOBRIDGE_PROBE_KIND_PONG 2
#define PICOBRIDGE_PROBE_OFF_VERSION 0
#define PICOBRIDGE_PROBE_OFF_KIND 1
#define PICOBRIDGE_PROBE_OFF_FLAGS 2
#define PICOBRIDGE_PROBE_OFF_SEQ 4
#define PICOBRIDGE_PROBE_OFF_GW_SEND 8
#define PICOBRIDGE_PROBE_OFF_DEV_RECV 16
#define PICOBRIDGE_PROBE_OFF_DEV_SEND 24

/* Knob announcement (docs/probe.md "Knob announcement", knobs.Announcement
 * in Go): 32 bytes, little-endian, published once per session on
 * PICOBRIDGE_PROBE_PREFIX "<device>/knobs". */
#define PICOBRIDGE_PROBE_KIND_KNOBS 3
#define PICOBRIDGE_PROBE_KNOBS_SIZE 32
#define PICOBRIDGE_PROBE_KNOBS_FRAGMENTATION 0x1u
#define PICOBRIDGE_PROBE_KNOBS_TX_BATCH 0x2u
#define PICOBRIDGE_PROBE_KNOBS_SPLIT_LOCK 0x4u
#define PICOBRIDGE_PROBE_KNOBS_NANO_ROS 0x8u

/* Keys: PICOBRIDGE_PROBE_PREFIX "<device>" "/ping" | "/pong" | "/knobs". */
#define PICOBRIDGE_PROBE_PREFIX "@picobridge/probe/"
/* Longest device name; names are [A-Za-z0-9_.-]{1,64}. */
#define PICOBRIDGE_PROBE_NAME_MAX 64
/* Buffer size for a probe key, terminating NUL included. */
#define PICOBRIDGE_PROBE_KEY_MAX (sizeof(PICOBRIDGE_PROBE_PREFIX) - 1 + PICOBRIDGE_PROBE_NAME_MAX + sizeof("/knobs"))

/* A monotonic device clock in nanoseconds. It is called from the session's
 * read task (or from zp_spin_once on single-threaded builds). */
typedef uint64_t (*picobridge_probe_clock_ns_t)(void *ctx);

typedef struct {
    /* Device clock; NULL uses zenoh-pico's z_clock_now() (microsecond
     * resolution, reported in ns). */
    picobridge_probe_clock_ns_t clock_ns;
    void *clock_ctx;
} picobridge_probe_options_t;

/* A device's compile-time transport knobs, as announced. The zenoh-pico
 * fields always; the nano-ros ones (tx_batch, tx_split_lock, tx_flush_ms,
 * subscriber_ring_depth, subscriber_buffer_size) when nano_ros is set. */
typedef struct {
    uint16_t batch_unicast_size;  /* Z_BATCH_UNICAST_SIZE, bytes */
    uint32_t frag_max_size;       /* Z_FRAG_MAX_SIZE, bytes */
    bool fragmentation;           /* Z_FEATURE_FRAGMENTATION */
    uint32_t lease_ms;            /* Z_TRANSPORT_LEASE */
    uint8_t lease_expire_factor;  /* Z_TRANSPORT_LEASE_EXPIRE_FACTOR */
    uint32_t socket_timeout_ms;   /* Z_CONFIG_SOCKET_TIMEOUT */
    bool nano_ros;
    bool tx_batch;
    bool tx_split_lock;
    uint16_t tx_flush_ms;
    uint16_t subscriber_ring_depth;
    uint32_t subscriber_buffer_size;
} picobridge_probe_knobs_t;

/* Fills k from the build: zenoh-pico's config.h, and the nano-ros fields
 * when NROS_ZENOH_TX_BATCH is defined (with NROS_ZENOH_TX_FLUSH_MS,
 * NROS_ZENOH_TX_SPLIT_LOCK, NROS_ZENOH_SUBSCRIBER_RING_DEPTH and
 * NROS_ZENOH_SUBSCRIBER_BUFFER_SIZE, each defaulting to nano-ros's builtin
 * when not defined). */
void picobridge_probe_knobs_from_build(picobridge_probe_knobs_t *k);

/* Writes the 32-byte announcement of k into out. */
void picobridge_probe_knobs_encode(const picobridge_probe_knobs_t *k, uint8_t out[PICOBRIDGE_PROBE_KNOBS_SIZE]);

/* Counters since picobridge_probe_init. */
typedef struct {
    uint32_t pings;    /* valid pings received */
    uint32_t pongs;    /* pongs handed to z_publisher_put successfully */
    uint32_t ignored;  /* samples on the ping key that were not a valid ping */
    uint32_t errors;   /* allocation or publication failures (no pong sent) */
    uint32_t last_seq; /* seq of the last valid ping */
} picobridge_probe_stats_t;

/* One responder. Treat the fields as private. It must stay at the same
 * address between picobridge_probe_init and picobridge_probe_drop (the
 * subscriber callback points at it): make it static or heap allocated. */
typedef struct {
    z_owned_subscriber_t sub;
    z_owned_publisher_t pub;
    picobridge_probe_clock_ns_t clock_ns;
    void *clock_ctx;
    z_clock_t epoch;
    uint64_t base_us;
    /* Written only by the callback (one at a time); 32-bit words, read with
     * picobridge_probe_get_stats. */
    volatile uint32_t pings, pongs, ignored, errors, last_seq;
    bool declared;
    volatile bool callbacks_done; /* set by the closure's drop */
    char name[PICOBRIDGE_PROBE_NAME_MAX + 1];
} picobridge_probe_t;

/* Fills opts with the defaults (pico clock). */
void picobridge_probe_options_default(picobridge_probe_options_t *opts);

/* Declares the publisher on the pong key (best effort where the build
 * allows it, express, priority RealTime, congestion control drop) and then
 * the subscriber on the ping key; from then on every ping is answered from
 * the subscriber callback. Then it announces the build's knobs
 * (picobridge_probe_knobs_from_build) once with z_put on the knobs key; a
 * failed announcement counts in errors and does not fail init. device must match [A-Za-z0-9_.-]{1,64}; it is
 * copied. opts may be NULL. Returns 0 or a negative zenoh-pico error
 * (_Z_ERR_INVALID for a bad name); on error nothing stays declared. p must
 * not be declared already (drop it first). */
z_result_t picobridge_probe_init(picobridge_probe_t *p, const z_loaned_session_t *session, const char *device,
                                 const picobridge_probe_options_t *opts);

/* Undeclares the subscriber (the gateway stops probing this name), waits
 * (at most 1 s) until no callback of it is running any more, then
 * undeclares the publisher. Call it before closing the session. Safe on a
 * responder whose init failed, and twice. */
void picobridge_probe_drop(picobridge_probe_t *p);

/* Copies the counters. */
void picobridge_probe_get_stats(const picobridge_probe_t *p, picobridge_probe_stats_t *out);

/* The device clock the responder uses, ns. With the default (pico) clock it
 * updates state in p: call it only where the callback cannot run at the
 * same time, or supply your own clock. */
uint64_t picobridge_probe_now_ns(picobridge_probe_t *p);

/* Pure responder, the C twin of bridge.Respond: if ping (len bytes) is a
 * valid ping, writes its pong with dev_recv and dev_send into pong and
 * returns 0; otherwise returns -1 and leaves pong untouched. */
int picobridge_probe_respond(const uint8_t *ping, size_t len, uint64_t dev_recv, uint64_t dev_send,
                             uint8_t pong[PICOBRIDGE_PROBE_SIZE]);

/* Whether name is a valid device name, [A-Za-z0-9_.-]{1,64}. */
bool picobridge_probe_name_valid(const char *name);

/* Writes PICOBRIDGE_PROBE_PREFIX device "/ping" (kind PING), "/pong" (kind
 * PONG) or "/knobs" (kind KNOBS) into buf; returns its length, or -1 if the name or kind is invalid
 * or cap is too small. */
int picobridge_probe_key(char *buf, size_t cap, const char *device, int kind);

#ifdef __cplusplus
}
#endif

#endif /* PICOBRIDGE_PROBE_H */
