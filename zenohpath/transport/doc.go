// Package transport is picobridge's Zenoh 1.x (protocol 0x09) unicast
// transport: TCP and UDP links, the INIT/OPEN handshake in both roles,
// sequence numbers, TX batching with express bypass, fragmentation and
// bounded reassembly, keep-alive, lease and close. Section numbers (§)
// refer to shared/design/zenoh-wire.md. It imports zenohpath/wire and
// knows nothing about routing.
//
// # Roles
//
// Listen accepts sessions (the router role: InitAck/OpenAck); Dial opens
// one (the client or peer role: InitSyn/OpenSyn). After OPEN both kinds
// of Session behave the same.
//
// # Threading
//
// Each Session owns a read goroutine and, only while it has something to
// write, a write goroutine: Send, the keep-alive timer (a time.AfterFunc)
// or Close starts it, and it exits shortly after the queues drained, handing
// its batch buffer back to a pool. A Listener owns its accept (or UDP demux) goroutine and one
// goroutine per link in handshake, which becomes that session's read
// goroutine. Every goroutine exits before Listener.Close returns, and
// before Session.Done is closed.
//
// The Handler is called only from the session's read goroutine, one call
// at a time: HandleNetwork for each network message in arrival order,
// then HandleClose exactly once. A Handler may call Send and Close on any
// session (including its own) from inside these calls; Send never waits
// on the read goroutine, so this cannot deadlock. While HandleNetwork
// runs, nothing more is read from that link, so handlers should be quick.
//
// Send, SendEncoded, SetTxRate, TxBacklog, Close, Stats and the accessors
// are safe for concurrent use. Session.closeMu and the TX queue lock are
// leaves (never held together, never held while writing to the link).
//
// # Ownership
//
// The message passed to HandleNetwork and every []byte inside it (payload,
// attachment, raw extensions) alias a receive buffer and a parser that
// are pooled across all sessions (an idle session holds neither; see
// docs/transport.md, "Memory per session: RX"); they are valid only during
// the call, and hold another session's bytes afterwards. Copy what you
// keep (strings such as key suffixes are already copies). Send encodes the
// message before returning; the caller may reuse it right away.
//
// # Sending
//
// Send (and SendEncoded, which queues an already encoded message without
// copying it) puts the message on one of 8 priority queues
// (SendOptions.Priority, 0 Control … 7 Background), each bounded by
// Config.TxQueueBytes and Config.TxQueue. When it does not fit, DROP waits
// at most Config.WaitBeforeDrop and drops (ErrQueueFull), BLOCK at most
// Config.BlockTimeout (ErrBlockTimeout); a message over
// Config.MaxMessageSize is refused (ErrTooLarge). The writer serves the
// highest non-empty priority one batch at a time and cuts a message that
// does not fit in a batch into FRAGMENTs at dequeue, re-checking higher
// priorities between two fragments; a message on the other channel
// (reliable / best effort) may go between them, one on the same channel
// waits for the train to end (receivers require consecutive SNs per
// channel, §4.7). It puts one transport message per batch, never anything
// after a FRAME (§3.2: zenoh-pico reads a FRAME to the end of its batch),
// keeps batch content ≤ negotiated size − 2 on TCP (§3.1) and never sends
// the Frame QoS extension (QoS is not negotiated, §4.6): priorities are a
// local decision. Non-express messages of one channel share a FRAME;
// express messages leave at once in their own batch. SetTxRate paces the
// writer with a token bucket and cuts batches to about 1 ms of the rate; on
// TCP, TCP_NOTSENT_LOWAT (Config.TCPNotSentLowat) keeps the kernel's unsent
// bytes small so that this scheduler, not the socket buffer, decides the
// order. On an idle TCP session Send writes a one-batch message itself
// with one non-blocking write (the rest, if the kernel takes only part, goes
// to the writer). See docs/transport.md for the rules, sources and memory
// bounds.
//
// # Receiving
//
// Each channel (reliable, best effort) has an SN window (§5): an SN must
// be strictly after the last accepted one and at most half the SN space
// ahead; other FRAMEs are dropped and counted ("sn_window"). Fragments are
// reassembled per channel by wire.Reassembler, bounded by
// Config.MaxMessageSize; a gap, an
// oversize train or a missing First marker drops the whole message
// (counted). zenoh-pico sends fragments of reliable messages with R=0 and
// reliable SNs (§4.7); R=0 fragments are therefore checked only for SN
// continuity, not against the best-effort window.
//
// # Lease and close
//
// The write goroutine sends a KEEP_ALIVE (alone in its batch) after
// min(Config.Lease, peer lease)/Config.KeepAliveDivisor without TX. If
// nothing arrives for the peer's announced lease the session closes with
// ReasonExpired (sending CLOSE(EXPIRED)). A TCP EOF ends the session
// (ReasonEOF: zenoh-pico closes without CLOSE, §12.7); a received CLOSE
// ends it with ReasonRemoteClose; input that does not decode closes only
// that session with ReasonDecodeError and CLOSE(INVALID) (invariant 4).
// Session.Close(reason) flushes the queue, sends CLOSE(reason.Wire()) and
// closes the link without waiting; Done is closed once everything ended.
// Every session records one CloseReason, the first one, in the
// *CloseError given to HandleClose.
//
// # Handshake rules (accepting side, §4.2, §12.1)
//
// The InitAck carries S whenever the InitSyn had it (or the result differs
// from the defaults), with the per-field minimum of the resolutions and
// min(their batch, ours); Patch = min(theirs, ours); no QoS, Shm, Auth,
// MultiLink, LowLatency or Compression echo. The cookie is stateless:
// peer ZID, role and negotiated values with a nonce, authenticated by an
// HMAC keyed per Listener, verified on OpenSyn (a bad cookie gets
// CLOSE(INVALID)). A version other than 0x09 gets CLOSE(INVALID).
//
// # Locks
//
// Listener.mu is never held while calling into a Session, closing a link
// (a UDP peer link's close takes Listener.mu to leave the demux table), or
// blocking on I/O or a channel send; Session.closeMu guards only the close
// state and is a leaf. The demux goroutine hands datagrams to a bounded
// per-peer queue without blocking: a full queue drops (udp_queue_full).
//
// # Drops and metrics
//
// Every drop has a reason (queue_full, block_timeout, too_large,
// sn_window, fragment_gap, fragment_oversize, fragment_no_first,
// fragment_drop_marker, udp_queue_full, closed): it is counted in
// Session.Stats and the metrics, and the first one of each reason in a
// session is logged (invariant 2). See NewMetrics; a nil Config.Metrics
// records nothing.
package transport
