//go:build cgo && cyclonedds

// rawcdr.h: an opaque, keyless Cyclone DDS 0.10.2 sertype whose samples are
// the serialized CDR bytes themselves (4-byte encapsulation header included),
// plus the few helpers the Go binding calls. See docs/dds.md and
// ../shared/design/dds-cyclone.md (beside the checkout) §2 for the ownership rules.
#ifndef PICOBRIDGE_RAWCDR_H
#define PICOBRIDGE_RAWCDR_H

#include <stdint.h>
#include <stddef.h>
#include "dds/dds.h"

// pb_item is one taken sample handed to Go. data points into the serdata,
// which the item holds one reference to until pb_release_items.
typedef struct pb_item {
  struct ddsi_serdata *sd;
  const void *data;
  uint32_t size;
  int32_t valid;
  int64_t source_ts;   // ns since epoch, writer clock
  int64_t recv_ts;     // ns since epoch, taken at take time
  uint64_t pub_handle; // publication instance handle
  uint64_t seq;        // writer sequence number; 0 = unknown (in-process delivery)
} pb_item;

typedef struct pb_qos_out {
  int32_t has_reliability, reliability; int64_t max_blocking;
  int32_t has_durability, durability;
  int32_t has_history, history, depth;
  int32_t has_limits, max_samples, max_instances, max_per_instance;
  void *userdata; size_t userdata_len; // dds_free'd by pb_endpoints_return
} pb_qos_out;

// pb_endpoint is one builtin-topic sample; the strings point into the loaned
// sample and stay valid until pb_endpoints_return.
typedef struct pb_endpoint {
  void *loan;
  int32_t valid, alive;
  uint8_t key[16], participant_key[16];
  uint64_t participant_handle;
  const char *topic, *type_name;
  pb_qos_out qos;
} pb_endpoint;

typedef struct pb_qos_in {
  int32_t reliability; int64_t max_blocking;
  int32_t history, depth;
  int32_t durability;
  int32_t max_samples;
  int32_t ignore_local;
  const void *userdata; size_t userdata_len;
} pb_qos_in;

dds_entity_t pb_create_topic(dds_entity_t pp, const char *topic, const char *type_name);
dds_qos_t *pb_make_qos(const pb_qos_in *in, int for_writer);
dds_return_t pb_write(dds_entity_t wr, const void *data, uint32_t size, int64_t ts);
int pb_take(dds_entity_t rd, pb_item *items, int max);
void pb_release_items(pb_item *items, int n);
int pb_endpoints_take(dds_entity_t rd, pb_endpoint *eps, int max, dds_instance_handle_t own);
void pb_endpoints_return(dds_entity_t rd, pb_endpoint *eps, int n);
dds_entity_t pb_create_reader_listener(dds_entity_t pp, dds_entity_t tp, const dds_qos_t *q, uintptr_t handle);
dds_entity_t pb_create_reader_notify(dds_entity_t pp, dds_entity_t tp, const dds_qos_t *q, int fd);
int32_t pb_matched_publications(dds_entity_t rd);
int32_t pb_matched_subscriptions(dds_entity_t wr);
int64_t pb_live_serdata(void);
dds_entity_t pb_create_builtin_reader(dds_entity_t pp, int subscriptions);
int pb_matched_writer_guid(dds_entity_t rd, dds_instance_handle_t ih, uint8_t *out);

dds_return_t pb_reader_loss(dds_entity_t rd, uint64_t *lost, uint64_t *rejected);


#endif
