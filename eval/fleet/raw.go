package fleet

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// rawSession is a Zenoh 1.x client session over TCP as zenoh-pico opens one: INIT (batch
// size of a pico build), OPEN, then FRAMEs; no INTEREST is ever sent. It does only what the
// fleet benchmark needs — declare one subscriber, push samples, keep the lease alive — with
// one goroutine per session reading batches (none for writing), so that ten thousand of
// them fit in one cheap load generator process.
type rawSession struct {
	c     net.Conn
	batch uint16
	mu    sync.Mutex // serializes writes (keep-alive vs frames)
	sn    uint64
	mask  uint64
	buf   []byte
	br    *bufio.Reader // reads after the handshake continue here
}

// dialRaw opens a session to addr (host:port) from local (nil: any), announcing batch.
func dialRaw(local *net.TCPAddr, addr string, batch uint16, lease time.Duration, timeout time.Duration) (*rawSession, error) {
	d := net.Dialer{Timeout: timeout}
	if local != nil {
		d.LocalAddr = local
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &rawSession{c: c, batch: batch, mask: wire.SNMask(wire.DefaultResolution)}
	if err := s.handshake(lease, timeout); err != nil {
		_ = c.Close()
		return nil, err
	}
	return s, nil
}

func (s *rawSession) handshake(lease, timeout time.Duration) error {
	_ = s.c.SetDeadline(time.Now().Add(timeout))
	defer s.c.SetDeadline(time.Time{})
	var id [16]byte
	_, _ = rand.Read(id[:])
	zid, err := wire.NewZID(id[:])
	if err != nil {
		return err
	}
	syn := wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIClient, ZID: zid,
		HasSize: s.batch != wire.DefaultBatchUnicast, Resolution: wire.DefaultResolution, BatchSize: s.batch}
	if err := s.writeBatch(syn.Append(nil)); err != nil {
		return fmt.Errorf("InitSyn: %w", err)
	}
	br := bufio.NewReaderSize(s.c, 4096)
	s.br = br
	b, err := readStreamBatch(br, nil)
	if err != nil {
		return fmt.Errorf("InitAck: %w", err)
	}
	t, _, err := wire.ParseTransport(b)
	if err != nil {
		return fmt.Errorf("InitAck: %w", err)
	}
	ack, ok := t.(*wire.InitAck)
	if !ok {
		return fmt.Errorf("InitAck: got %T", t)
	}
	s.batch = min(s.batch, ack.BatchSize)
	s.sn = mrand.Uint64() & s.mask
	if err := s.writeBatch(wire.OpenSyn{Lease: lease, InitialSN: s.sn, Cookie: append([]byte(nil), ack.Cookie...)}.Append(nil)); err != nil {
		return fmt.Errorf("OpenSyn: %w", err)
	}
	for {
		b, err = readStreamBatch(br, b)
		if err != nil {
			return fmt.Errorf("OpenAck: %w", err)
		}
		t, _, err = wire.ParseTransport(b)
		if err != nil {
			return fmt.Errorf("OpenAck: %w", err)
		}
		if _, ka := t.(*wire.KeepAlive); ka {
			continue
		}
		if _, ok := t.(*wire.OpenAck); !ok {
			return fmt.Errorf("OpenAck: got %T", t)
		}
		return nil
	}
}

// readStreamBatch reads one u16-LE-prefixed batch into buf (reused).
func readStreamBatch(r io.Reader, buf []byte) ([]byte, error) {
	var p [2]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return nil, err
	}
	n := int(binary.LittleEndian.Uint16(p[:]))
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err := io.ReadFull(r, buf)
	return buf, err
}

// writeBatch writes one stream batch (prefix + content).
func (s *rawSession) writeBatch(content []byte) error {
	b := make([]byte, 2, 2+len(content))
	binary.LittleEndian.PutUint16(b, uint16(len(content)))
	_, err := s.c.Write(append(b, content...))
	return err
}

// sendFrame writes one reliable FRAME holding msg in its own batch.
func (s *rawSession) sendFrame(msg wire.NetworkMessage, deadline time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf[:0], 0, 0)
	s.buf = wire.AppendFrame(s.buf, true, s.sn, msg)
	s.sn = (s.sn + 1) & s.mask
	n := len(s.buf) - 2
	if n > int(s.batch)-2 {
		return fmt.Errorf("message of %d bytes does not fit a %d-byte batch", n, s.batch)
	}
	binary.LittleEndian.PutUint16(s.buf, uint16(n))
	_ = s.c.SetWriteDeadline(deadline)
	_, err := s.c.Write(s.buf)
	return err
}

var keepAliveBatch = func() []byte {
	b := wire.KeepAlive{}.Append([]byte{0, 0})
	binary.LittleEndian.PutUint16(b, uint16(len(b)-2))
	return b
}()

// keepAlive writes a KEEP_ALIVE batch (skipped while another write holds the lock: that
// write counts as traffic too).
func (s *rawSession) keepAlive(deadline time.Time) error {
	if !s.mu.TryLock() {
		return nil
	}
	defer s.mu.Unlock()
	_ = s.c.SetWriteDeadline(deadline)
	_, err := s.c.Write(keepAliveBatch)
	return err
}

// declareSubscriber declares subscriber 1 on key (scope 0, full key), as pico does for a
// key without wildcards.
func (s *rawSession) declareSubscriber(key string, deadline time.Time) error {
	return s.sendFrame(&wire.Declare{Body: &wire.DeclareSubscriber{ID: 1, WireExpr: wire.WireExpr{Suffix: key}}}, deadline)
}

// declareToken declares liveliness token 1 on key, as a device's ROS graph token (a
// zenoh-pico rmw declares one per node and entity).
func (s *rawSession) declareToken(key string, deadline time.Time) error {
	return s.sendFrame(&wire.Declare{Body: &wire.DeclareToken{ID: 1, WireExpr: wire.WireExpr{Suffix: key}}}, deadline)
}

// put pushes payload on key (scope 0, full key), reliable, priority Data.
func (s *rawSession) put(key string, payload []byte, deadline time.Time) error {
	return s.sendFrame(&wire.Push{WireExpr: wire.WireExpr{Suffix: key}, Body: &wire.Put{Payload: payload}}, deadline)
}

func (s *rawSession) close() error { return s.c.Close() }
