//go:build cgo && cyclonedds

// rawcdr.c: the opaque raw-CDR sertype/serdata for Cyclone DDS 0.10.2 and the
// take/write/discovery helpers used by the Go binding (cyclone.go).
//
// Memory: a pb_serdata owns one malloc'd buffer holding the serialized sample
// including its 4-byte encapsulation header, padded with zeros to a multiple
// of 4. Cyclone counts references; ops->free runs when the last one goes.
// Nothing here keeps Go memory: pb_write copies the caller's bytes.
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdint.h>
#include <unistd.h>
#include "dds/dds.h"
#include "dds/ddsrt/heap.h"
#include "dds/ddsrt/atomics.h"
#include "dds/ddsi/ddsi_sertype.h"
#include "dds/ddsi/ddsi_serdata.h"
#include "dds/ddsi/q_radmin.h"
#include "rawcdr.h"

struct pb_serdata {
  struct ddsi_serdata c;
  uint32_t size;       // bytes incl. encapsulation header
  unsigned char *data; // alignup4(size) bytes, padding zeroed
  uint64_t seq;        // writer sequence number (RTPS writerSN) if received from the network, else 0
};

// raw sample as seen by dds_write_ts / from_sample.
struct pb_raw { const void *data; uint32_t size; };

static ddsrt_atomic_uint32_t live_serdata = DDSRT_ATOMIC_UINT32_INIT (0);

int64_t pb_live_serdata (void) { return (int64_t) ddsrt_atomic_ld32 (&live_serdata); }

static const unsigned char empty_cdr_le[4] = { 0x00, 0x01, 0x00, 0x00 };

static struct pb_serdata *sd_new (const struct ddsi_sertype *type, enum ddsi_serdata_kind kind, uint32_t size)
{
  struct pb_serdata *d = ddsrt_malloc (sizeof (*d));
  size_t cap = ((size_t) size + 3u) & ~(size_t) 3u;
  ddsi_serdata_init (&d->c, type, kind);
  d->c.hash = type->serdata_basehash; // keyless: all samples are the same instance
  d->size = size;
  d->seq = 0;
  d->data = ddsrt_malloc (cap > 0 ? cap : 4);
  if (cap > size)
    memset (d->data + size, 0, cap - size);
  ddsrt_atomic_inc32 (&live_serdata);
  return d;
}

static struct ddsi_serdata *sd_new_key (const struct ddsi_sertype *type)
{
  struct pb_serdata *d = sd_new (type, SDK_KEY, 4);
  memcpy (d->data, empty_cdr_le, 4);
  return &d->c;
}

static bool sd_eqkey (const struct ddsi_serdata *a, const struct ddsi_serdata *b)
{
  (void) a; (void) b;
  return true;
}

static uint32_t sd_get_size (const struct ddsi_serdata *dcmn)
{
  const struct pb_serdata *d = (const struct pb_serdata *) dcmn;
  return d->size;
}

// rdata_writer_sn reads writerSN from the DATA / DATA_FRAG submessage an
// rdata belongs to: submessage header (id, flags, length: 4), extraFlags (2),
// octetsToInlineQos (2), readerId (4), writerId (4), then the sequence number
// as {int32 high, uint32 low} in the byte order of flags bit 0 (1 = little).
static uint64_t rdata_writer_sn (const struct nn_rdata *rd)
{
  const unsigned char *sm = NN_RMSG_PAYLOADOFF (rd->rmsg, NN_RDATA_SUBMSG_OFF (rd));
  const unsigned char *p = sm + 16;
  uint32_t hi, lo;
  if (sm[1] & 1)
  {
    hi = (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
    lo = (uint32_t) p[4] | (uint32_t) p[5] << 8 | (uint32_t) p[6] << 16 | (uint32_t) p[7] << 24;
  }
  else
  {
    hi = (uint32_t) p[3] | (uint32_t) p[2] << 8 | (uint32_t) p[1] << 16 | (uint32_t) p[0] << 24;
    lo = (uint32_t) p[7] | (uint32_t) p[6] << 8 | (uint32_t) p[5] << 16 | (uint32_t) p[4] << 24;
  }
  if (hi & 0x80000000u)
    return 0; // negative: not a valid sequence number
  return ((uint64_t) hi << 32) | lo;
}

static struct ddsi_serdata *sd_from_ser (const struct ddsi_sertype *type, enum ddsi_serdata_kind kind, const struct nn_rdata *fragchain, size_t size)
{
  if (size > UINT32_MAX)
    return NULL;
  struct pb_serdata *d = sd_new (type, kind, (uint32_t) size);
  if (fragchain != NULL && kind == SDK_DATA)
    d->seq = rdata_writer_sn (fragchain);
  uint32_t off = 0;
  // Fragments arrive ordered by offset and may overlap; copy each new byte once.
  for (; fragchain != NULL; fragchain = fragchain->nextfrag)
  {
    if (fragchain->maxp1 <= off)
      continue;
    if (fragchain->min > off || fragchain->maxp1 > size)
      break; // a gap or a length lie: reject below
    const unsigned char *payload = NN_RMSG_PAYLOADOFF (fragchain->rmsg, NN_RDATA_PAYLOAD_OFF (fragchain));
    memcpy (d->data + off, payload + (off - fragchain->min), fragchain->maxp1 - off);
    off = fragchain->maxp1;
  }
  if (off != size)
  {
    d->c.ops->free (&d->c);
    return NULL;
  }
  return &d->c;
}

static struct ddsi_serdata *sd_from_ser_iov (const struct ddsi_sertype *type, enum ddsi_serdata_kind kind, ddsrt_msg_iovlen_t niov, const ddsrt_iovec_t *iov, size_t size)
{
  if (size > UINT32_MAX)
    return NULL;
  struct pb_serdata *d = sd_new (type, kind, (uint32_t) size);
  size_t off = 0;
  for (ddsrt_msg_iovlen_t i = 0; i < niov && off < size; i++)
  {
    size_t n = iov[i].iov_len;
    if (n > size - off)
      n = size - off;
    memcpy (d->data + off, iov[i].iov_base, n);
    off += n;
  }
  if (off != size)
  {
    d->c.ops->free (&d->c);
    return NULL;
  }
  return &d->c;
}

static struct ddsi_serdata *sd_from_keyhash (const struct ddsi_sertype *type, const struct ddsi_keyhash *keyhash)
{
  (void) keyhash;
  return sd_new_key (type); // keyless: every key hash names the one instance
}

static struct ddsi_serdata *sd_from_sample (const struct ddsi_sertype *type, enum ddsi_serdata_kind kind, const void *sample)
{
  if (kind != SDK_DATA)
    return sd_new_key (type);
  const struct pb_raw *raw = sample;
  struct pb_serdata *d = sd_new (type, kind, raw->size);
  if (raw->size > 0)
    memcpy (d->data, raw->data, raw->size);
  return &d->c;
}

static void sd_to_ser (const struct ddsi_serdata *dcmn, size_t off, size_t sz, void *buf)
{
  const struct pb_serdata *d = (const struct pb_serdata *) dcmn;
  memcpy (buf, d->data + off, sz);
}

static struct ddsi_serdata *sd_to_ser_ref (const struct ddsi_serdata *dcmn, size_t off, size_t sz, ddsrt_iovec_t *ref)
{
  const struct pb_serdata *d = (const struct pb_serdata *) dcmn;
  ref->iov_base = d->data + off;
  ref->iov_len = (ddsrt_iov_len_t) sz;
  return ddsi_serdata_ref (dcmn);
}

static void sd_to_ser_unref (struct ddsi_serdata *dcmn, const ddsrt_iovec_t *ref)
{
  (void) ref;
  ddsi_serdata_unref (dcmn);
}

static bool sd_to_sample (const struct ddsi_serdata *dcmn, void *sample, void **bufptr, void *buflim)
{
  // Typed read/take of a raw topic is not supported: use dds_takecdr.
  (void) dcmn; (void) sample; (void) bufptr; (void) buflim;
  return false;
}

static struct ddsi_serdata *sd_to_untyped (const struct ddsi_serdata *dcmn)
{
  // Key-only copy kept in the instance map: just an empty CDR header, so the
  // map never pins a large sample.
  struct ddsi_serdata *k = sd_new_key (dcmn->type);
  k->type = NULL;
  return k;
}

static bool sd_untyped_to_sample (const struct ddsi_sertype *type, const struct ddsi_serdata *d, void *sample, void **bufptr, void *buflim)
{
  (void) type; (void) d; (void) bufptr; (void) buflim;
  if (sample != NULL)
  {
    struct pb_raw *raw = sample;
    raw->data = NULL;
    raw->size = 0;
  }
  return true;
}

static void sd_free (struct ddsi_serdata *dcmn)
{
  struct pb_serdata *d = (struct pb_serdata *) dcmn;
  ddsrt_free (d->data);
  ddsrt_free (d);
  ddsrt_atomic_dec32 (&live_serdata);
}

static size_t sd_print (const struct ddsi_sertype *type, const struct ddsi_serdata *dcmn, char *buf, size_t size)
{
  (void) type;
  const struct pb_serdata *d = (const struct pb_serdata *) dcmn;
  int n = snprintf (buf, size, "raw-cdr(%u bytes)", d->size);
  return n < 0 ? 0 : (size_t) n;
}

static void sd_get_keyhash (const struct ddsi_serdata *d, struct ddsi_keyhash *buf, bool force_md5)
{
  (void) d; (void) force_md5;
  memset (buf, 0, sizeof (*buf));
}

static const struct ddsi_serdata_ops pb_serdata_ops = {
  .eqkey = sd_eqkey,
  .get_size = sd_get_size,
  .from_ser = sd_from_ser,
  .from_ser_iov = sd_from_ser_iov,
  .from_keyhash = sd_from_keyhash,
  .from_sample = sd_from_sample,
  .to_ser = sd_to_ser,
  .to_ser_ref = sd_to_ser_ref,
  .to_ser_unref = sd_to_ser_unref,
  .to_sample = sd_to_sample,
  .to_untyped = sd_to_untyped,
  .untyped_to_sample = sd_untyped_to_sample,
  .free = sd_free,
  .print = sd_print,
  .get_keyhash = sd_get_keyhash,
#ifdef DDS_HAS_SHM
  .get_sample_size = NULL, // shared memory is never enabled by our config
  .from_iox_buffer = NULL,
#endif
};

static void st_free (struct ddsi_sertype *tp)
{
  ddsi_sertype_fini (tp);
  ddsrt_free (tp);
}

static void st_zero_samples (const struct ddsi_sertype *tp, void *samples, size_t count)
{
  (void) tp;
  memset (samples, 0, count * sizeof (struct pb_raw));
}

static void st_realloc_samples (void **ptrs, const struct ddsi_sertype *tp, void *old, size_t oldcount, size_t count)
{
  (void) tp;
  struct pb_raw *s = ddsrt_realloc (old, count * sizeof (struct pb_raw));
  if (count > oldcount)
    memset (s + oldcount, 0, (count - oldcount) * sizeof (struct pb_raw));
  for (size_t i = 0; i < count; i++)
    ptrs[i] = &s[i];
}

static void st_free_samples (const struct ddsi_sertype *tp, void **ptrs, size_t count, dds_free_op_t op)
{
  (void) tp; (void) count;
  // pb_raw never owns its bytes, so only the array itself can need freeing.
  if ((op & DDS_FREE_ALL_BIT) && count > 0)
    ddsrt_free (ptrs[0]);
}

static bool st_equal (const struct ddsi_sertype *a, const struct ddsi_sertype *b)
{
  (void) a; (void) b;
  return true; // name, flags and ops already compared by Cyclone
}

static uint32_t st_hash (const struct ddsi_sertype *tp)
{
  (void) tp;
  return 0;
}

static size_t st_get_serialized_size (const struct ddsi_sertype *tp, const void *sample)
{
  (void) tp;
  return ((const struct pb_raw *) sample)->size;
}

static bool st_serialize_into (const struct ddsi_sertype *tp, const void *sample, void *dst, size_t dst_size)
{
  (void) tp;
  const struct pb_raw *raw = sample;
  if (dst_size < raw->size)
    return false;
  memcpy (dst, raw->data, raw->size);
  return true;
}

static const struct ddsi_sertype_ops pb_sertype_ops = {
  .version = ddsi_sertype_v0,
  .arg = NULL,
  .free = st_free,
  .zero_samples = st_zero_samples,
  .realloc_samples = st_realloc_samples,
  .free_samples = st_free_samples,
  .equal = st_equal,
  .hash = st_hash,
  .type_id = NULL,   // no XTypes information: peers match on the type name
  .type_map = NULL,
  .type_info = NULL,
  .derive_sertype = NULL,
  .get_serialized_size = st_get_serialized_size,
  .serialize_into = st_serialize_into,
};

dds_entity_t pb_create_topic (dds_entity_t pp, const char *topic, const char *type_name)
{
  struct ddsi_sertype *st = ddsrt_malloc (sizeof (*st));
  ddsi_sertype_init_flags (st, type_name, &pb_sertype_ops, &pb_serdata_ops, DDSI_SERTYPE_FLAG_TOPICKIND_NO_KEY);
  // Takes ownership of st (may replace it by an equal interned sertype and free ours).
  dds_entity_t tp = dds_create_topic_sertype (pp, topic, &st, NULL, NULL, NULL);
  if (tp < 0)
    st_free (st);
  return tp;
}

dds_qos_t *pb_make_qos (const pb_qos_in *in, int for_writer)
{
  dds_qos_t *q = dds_create_qos ();
  dds_qset_reliability (q, in->reliability ? DDS_RELIABILITY_RELIABLE : DDS_RELIABILITY_BEST_EFFORT, in->max_blocking);
  dds_qset_history (q, in->history ? DDS_HISTORY_KEEP_ALL : DDS_HISTORY_KEEP_LAST, in->depth);
  dds_qset_durability (q, in->durability ? DDS_DURABILITY_TRANSIENT_LOCAL : DDS_DURABILITY_VOLATILE);
  dds_qset_resource_limits (q, in->max_samples, DDS_LENGTH_UNLIMITED, in->max_samples);
  if (for_writer && in->durability)
  {
    // Cyclone serves late joiners from the durability service history.
    dds_qset_durability_service (q, 0, in->history ? DDS_HISTORY_KEEP_ALL : DDS_HISTORY_KEEP_LAST, in->depth,
                                 in->max_samples, DDS_LENGTH_UNLIMITED, in->max_samples);
  }
  if (in->userdata_len > 0)
    dds_qset_userdata (q, in->userdata, in->userdata_len);
  if (in->ignore_local)
    dds_qset_ignorelocal (q, DDS_IGNORELOCAL_PARTICIPANT);
  dds_data_representation_id_t xcdr1 = DDS_DATA_REPRESENTATION_XCDR1;
  dds_qset_data_representation (q, 1, &xcdr1);
  return q;
}

dds_return_t pb_write (dds_entity_t wr, const void *data, uint32_t size, int64_t ts)
{
  struct pb_raw raw = { data, size };
  return dds_write_ts (wr, &raw, ts);
}

int pb_take (dds_entity_t rd, pb_item *items, int max)
{
  struct ddsi_serdata *sds[64];
  dds_sample_info_t infos[64];
  if (max > 64)
    max = 64;
  int n = dds_takecdr (rd, sds, (uint32_t) max, infos, DDS_ANY_STATE);
  if (n <= 0)
    return n;
  dds_time_t now = dds_time ();
  for (int i = 0; i < n; i++)
  {
    const struct pb_serdata *d = (const struct pb_serdata *) sds[i];
    items[i].sd = sds[i];
    items[i].valid = infos[i].valid_data;
    items[i].data = infos[i].valid_data ? d->data : NULL;
    items[i].size = infos[i].valid_data ? d->size : 0;
    items[i].source_ts = infos[i].source_timestamp;
    items[i].recv_ts = now;
    items[i].pub_handle = infos[i].publication_handle;
    items[i].seq = infos[i].valid_data ? d->seq : 0;
  }
  return n;
}

void pb_release_items (pb_item *items, int n)
{
  for (int i = 0; i < n; i++)
  {
    ddsi_serdata_unref (items[i].sd);
    items[i].sd = NULL;
    items[i].data = NULL;
  }
}

static void qos_out (const dds_qos_t *q, pb_qos_out *o)
{
  memset (o, 0, sizeof (*o));
  if (q == NULL)
    return;
  dds_reliability_kind_t rk; dds_duration_t mbt;
  if ((o->has_reliability = dds_qget_reliability (q, &rk, &mbt)))
  {
    o->reliability = rk == DDS_RELIABILITY_RELIABLE;
    o->max_blocking = mbt;
  }
  dds_durability_kind_t dk;
  if ((o->has_durability = dds_qget_durability (q, &dk)))
    o->durability = (int32_t) dk;
  dds_history_kind_t hk; int32_t depth;
  if ((o->has_history = dds_qget_history (q, &hk, &depth)))
  {
    o->history = hk == DDS_HISTORY_KEEP_ALL;
    o->depth = depth;
  }
  int32_t ms, mi, mpi;
  if ((o->has_limits = dds_qget_resource_limits (q, &ms, &mi, &mpi)))
  {
    o->max_samples = ms; o->max_instances = mi; o->max_per_instance = mpi;
  }
  void *ud = NULL; size_t udsz = 0;
  if (dds_qget_userdata (q, &ud, &udsz) && ud != NULL)
  {
    o->userdata = ud;
    o->userdata_len = udsz;
  }
  else if (ud != NULL)
    dds_free (ud);
}

int pb_endpoints_take (dds_entity_t rd, pb_endpoint *eps, int max, dds_instance_handle_t own)
{
  void *samples[64];
  dds_sample_info_t infos[64];
  if (max > 64)
    max = 64;
  memset (samples, 0, sizeof (samples));
  int n = dds_take (rd, samples, infos, (size_t) max, (uint32_t) max);
  if (n <= 0)
    return n;
  for (int i = 0; i < n; i++)
  {
    const dds_builtintopic_endpoint_t *ep = samples[i];
    pb_endpoint *o = &eps[i];
    memset (o, 0, sizeof (*o));
    o->loan = samples[i];
    o->valid = infos[i].valid_data && ep->participant_instance_handle != own;
    o->alive = infos[i].instance_state == DDS_IST_ALIVE;
    memcpy (o->key, ep->key.v, 16);
    memcpy (o->participant_key, ep->participant_key.v, 16);
    o->participant_handle = ep->participant_instance_handle;
    if (infos[i].valid_data)
    {
      o->topic = ep->topic_name;
      o->type_name = ep->type_name;
      qos_out (ep->qos, &o->qos);
    }
    else
    {
      // invalid sample: only the key is meaningful (the endpoint went away)
      o->valid = ep->participant_instance_handle != own;
      o->alive = 0;
    }
  }
  return n;
}

void pb_endpoints_return (dds_entity_t rd, pb_endpoint *eps, int n)
{
  void *samples[64];
  for (int i = 0; i < n && i < 64; i++)
  {
    samples[i] = eps[i].loan;
    if (eps[i].qos.userdata != NULL)
      dds_free (eps[i].qos.userdata);
    memset (&eps[i], 0, sizeof (eps[i]));
  }
  if (n > 0)
    dds_return_loan (rd, samples, n);
}

// Go side (callbacks.go).
extern void pbGoDataAvailable (dds_entity_t rd, uintptr_t handle);

static void pb_on_data_available (dds_entity_t rd, void *arg)
{
  pbGoDataAvailable (rd, (uintptr_t) arg);
}

dds_entity_t pb_create_reader_listener (dds_entity_t pp, dds_entity_t tp, const dds_qos_t *q, uintptr_t handle)
{
  dds_listener_t *l = dds_create_listener ((void *) handle);
  dds_lset_data_available (l, pb_on_data_available);
  dds_entity_t rd = dds_create_reader (pp, tp, q, l);
  dds_delete_listener (l); // the reader keeps a copy
  return rd;
}

// pb_on_data_notify is the data-available listener of a reader made by
// pb_create_reader_notify: it adds one to the reader's eventfd, which the Go
// side waits on in the netpoller (cyclone.go waitLoop). It never blocks: the
// eventfd is non-blocking and its 64-bit counter does not fill.
static void pb_on_data_notify (dds_entity_t rd, void *arg)
{
  (void) rd;
  uint64_t one = 1;
  ssize_t r = write ((int) (intptr_t) arg, &one, sizeof one);
  (void) r;
}

dds_entity_t pb_create_reader_notify (dds_entity_t pp, dds_entity_t tp, const dds_qos_t *q, int fd)
{
  dds_listener_t *l = dds_create_listener ((void *) (intptr_t) fd);
  dds_lset_data_available (l, pb_on_data_notify);
  dds_entity_t rd = dds_create_reader (pp, tp, q, l);
  dds_delete_listener (l); // the reader keeps a copy
  return rd;
}

int32_t pb_matched_publications (dds_entity_t rd)
{
  dds_subscription_matched_status_t st;
  dds_return_t rc = dds_get_subscription_matched_status (rd, &st);
  return rc < 0 ? rc : (int32_t) st.current_count;
}

int32_t pb_matched_subscriptions (dds_entity_t wr)
{
  dds_publication_matched_status_t st;
  dds_return_t rc = dds_get_publication_matched_status (wr, &st);
  return rc < 0 ? rc : (int32_t) st.current_count;
}

dds_entity_t pb_create_builtin_reader (dds_entity_t pp, int subscriptions)
{
  dds_qos_t *q = dds_create_qos ();
  dds_qset_history (q, DDS_HISTORY_KEEP_ALL, 0);
  dds_entity_t rd = dds_create_reader (pp, subscriptions ? DDS_BUILTIN_TOPIC_DCPSSUBSCRIPTION : DDS_BUILTIN_TOPIC_DCPSPUBLICATION, q, NULL);
  dds_delete_qos (q);
  return rd;
}

int pb_matched_writer_guid (dds_entity_t rd, dds_instance_handle_t ih, uint8_t *out)
{
  dds_builtintopic_endpoint_t *ep = dds_get_matched_publication_data (rd, ih);
  if (ep == NULL)
    return DDS_RETCODE_BAD_PARAMETER;
  memcpy (out, ep->key.v, 16);
  dds_builtintopic_free_endpoint (ep);
  return 0;
}

// pb_reader_loss reads the reader's SAMPLE_LOST and SAMPLE_REJECTED
// cumulative total_count (reading resets only the *_change fields).
dds_return_t pb_reader_loss(dds_entity_t rd, uint64_t *lost, uint64_t *rejected) {
  dds_sample_lost_status_t ls;
  dds_sample_rejected_status_t rs;
  dds_return_t rc = dds_get_sample_lost_status (rd, &ls);
  if (rc < 0)
    return rc;
  rc = dds_get_sample_rejected_status (rd, &rs);
  if (rc < 0)
    return rc;
  *lost = ls.total_count;
  *rejected = rs.total_count;
  return 0;
}
