/*
 * z_probe_responder: answers picobridge probes for one device name.
 *
 *   z_probe_responder -e tcp/192.168.1.10:7447 -m client -n robot1-imu
 *
 * Flags (zenoh-pico example style; -e and -l can repeat):
 *   -e ENDPOINT  connect endpoint
 *   -m MODE      client (default) or peer
 *   -l ENDPOINT  listen endpoint
 *   -n NAME      device name, [A-Za-z0-9_.-]{1,64} (default "pico")
 *   -c COUNT     exit once COUNT valid pings were answered (default 0: run until
 *                SIGINT or SIGTERM)
 *
 * Prints one "ready" line once both declarations are done and one "stats"
 * line when it leaves (exit status 0).
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "picobridge_probe.h"

#if Z_FEATURE_SUBSCRIPTION == 1 && Z_FEATURE_PUBLICATION == 1

static volatile sig_atomic_t stop = 0;

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

static int parse_args(int argc, char **argv, z_owned_config_t *config, const char **name, unsigned long *count) {
    int opt;
    while ((opt = getopt(argc, argv, "e:m:l:n:c:")) != -1) {
        switch (opt) {
            case 'e':
                zp_config_insert(z_config_loan_mut(config), Z_CONFIG_CONNECT_KEY, optarg);
                break;
            case 'm':
                zp_config_insert(z_config_loan_mut(config), Z_CONFIG_MODE_KEY, optarg);
                break;
            case 'l':
                zp_config_insert(z_config_loan_mut(config), Z_CONFIG_LISTEN_KEY, optarg);
                break;
            case 'n':
                *name = optarg;
                break;
            case 'c':
                *count = strtoul(optarg, NULL, 10);
                break;
            default:
                fprintf(stderr, "usage: %s [-e ENDPOINT]... [-m client|peer] [-l ENDPOINT]... [-n NAME] [-c COUNT]\n",
                        argv[0]);
                return 1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *name = "pico";
    unsigned long count = 0;

    z_owned_config_t config;
    z_config_default(&config);
    if (parse_args(argc, argv, &config, &name, &count) != 0) {
        z_config_drop(z_config_move(&config));
        return 1;
    }
    if (!picobridge_probe_name_valid(name)) {
        fprintf(stderr, "invalid device name '%s': want [A-Za-z0-9_.-]{1,64}\n", name);
        z_config_drop(z_config_move(&config));
        return 1;
    }

    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    z_owned_session_t s;
    if (z_open(&s, z_config_move(&config), NULL) < 0) {
        fprintf(stderr, "Unable to open session!\n");
        return 2;
    }

    static picobridge_probe_t probe; /* must not move while declared */
    z_result_t ret = picobridge_probe_init(&probe, z_session_loan(&s), name, NULL);
    if (ret != _Z_RES_OK) {
        fprintf(stderr, "Unable to declare the probe responder for '%s': %d\n", name, (int)ret);
        z_session_drop(z_session_move(&s));
        return 2;
    }
    char ping[PICOBRIDGE_PROBE_KEY_MAX], pong[PICOBRIDGE_PROBE_KEY_MAX];
    (void)picobridge_probe_key(ping, sizeof(ping), name, PICOBRIDGE_PROBE_KIND_PING);
    (void)picobridge_probe_key(pong, sizeof(pong), name, PICOBRIDGE_PROBE_KIND_PONG);
    printf("picobridge probe responder ready: name=%s ping=%s pong=%s\n", name, ping, pong);
    fflush(stdout);

    picobridge_probe_stats_t st;
    while (!stop) {
#if Z_FEATURE_MULTI_THREAD == 1
        z_sleep_ms(10);
#else
        if (!zp_spin_once(z_session_loan(&s))) {
            z_sleep_ms(1);
        }
#endif
        picobridge_probe_get_stats(&probe, &st);
        if (count != 0 && st.pongs + st.errors >= count) { /* the last pong has left */
            break;
        }
    }

    picobridge_probe_drop(&probe);
    picobridge_probe_get_stats(&probe, &st);
    printf("picobridge probe responder stats: pings=%lu pongs=%lu ignored=%lu errors=%lu last_seq=%lu\n",
           (unsigned long)st.pings, (unsigned long)st.pongs, (unsigned long)st.ignored, (unsigned long)st.errors,
           (unsigned long)st.last_seq);
    fflush(stdout);
    z_session_drop(z_session_move(&s));
    return 0;
}

#else
int main(void) {
    printf("ERROR: zenoh-pico was built without Z_FEATURE_SUBSCRIPTION or Z_FEATURE_PUBLICATION.\n");
    return 2;
}
#endif
