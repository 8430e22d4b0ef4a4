package rosbag

import (
	"container/heap"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Message is one recorded message. Data is owned by the message (a copy from the database)
// and may be modified, e.g. by ros2.SetHeaderStamp.
type Message struct {
	Topic     *Topic // shared, read-only
	Timestamp int64  // receive time at record, ns since the epoch
	Data      []byte // serialized message (CDR with encapsulation header for "cdr")
}

// Time returns the receive time as a time.Time.
func (m Message) Time() time.Time { return time.Unix(0, m.Timestamp) }

// ReadOptions select messages. The zero value selects everything.
type ReadOptions struct {
	// Topics to read; empty means all. Unknown names give ErrUnknownTopic.
	Topics []string
	// Start and End bound the receive time: Start <= t < End. Zero values mean unbounded.
	Start, End time.Time
}

// Cursor streams messages in receive-time order (ties: file order, then row id). Use it as
//
//	c, err := bag.Messages(ctx, opts)
//	defer c.Close()
//	for c.Next() { m := c.Message(); ... }
//	if err := c.Err(); ...
//
// A Cursor is not safe for concurrent use.
type Cursor struct {
	ctx   context.Context
	heads cursorHeap
	all   []*fileCursor
	cur   Message
	err   error
	done  bool
}

type fileCursor struct {
	idx  int
	f    *bagFile
	rows *sql.Rows
	head Message
	id   int64
}

// Messages starts a time-ordered read of the selected messages. The context bounds the
// queries; cancelling it ends the iteration with the context's error.
func (b *Bag) Messages(ctx context.Context, opt ReadOptions) (*Cursor, error) {
	if b.files == nil {
		return nil, errors.New("rosbag: bag is closed")
	}
	want := map[*Topic]bool{}
	for _, name := range opt.Topics {
		t, ok := b.byName[name]
		if !ok {
			return nil, fmt.Errorf("%w: %q (bag has %s)", ErrUnknownTopic, name, strings.Join(b.topicNames(), ", "))
		}
		want[t] = true
	}
	c := &Cursor{ctx: ctx}
	for i, f := range b.files {
		q := "SELECT id, topic_id, timestamp, data FROM messages"
		var conds []string
		var args []any
		if len(want) > 0 {
			var ids []string
			for id, t := range f.topics {
				if want[t] {
					ids = append(ids, fmt.Sprint(id))
				}
			}
			if len(ids) == 0 {
				continue
			}
			conds = append(conds, "topic_id IN ("+strings.Join(ids, ",")+")")
		}
		if !opt.Start.IsZero() {
			conds = append(conds, "timestamp >= ?")
			args = append(args, opt.Start.UnixNano())
		}
		if !opt.End.IsZero() {
			conds = append(conds, "timestamp < ?")
			args = append(args, opt.End.UnixNano())
		}
		if len(conds) > 0 {
			q += " WHERE " + strings.Join(conds, " AND ")
		}
		q += " ORDER BY timestamp, id"
		rows, err := f.db.QueryContext(ctx, q, args...)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, f.path, err)
		}
		fc := &fileCursor{idx: i, f: f, rows: rows}
		c.all = append(c.all, fc)
		ok, err := fc.advance()
		if err != nil {
			c.Close()
			return nil, err
		}
		if ok {
			c.heads = append(c.heads, fc)
		}
	}
	heap.Init(&c.heads)
	return c, nil
}

func (b *Bag) topicNames() []string {
	out := make([]string, len(b.topics))
	for i, t := range b.topics {
		out[i] = t.Name
	}
	return out
}

// advance loads the next row of one file into head.
func (fc *fileCursor) advance() (bool, error) {
	if !fc.rows.Next() {
		if err := fc.rows.Err(); err != nil {
			return false, fmt.Errorf("%w: %s: %v", ErrCorrupt, fc.f.path, err)
		}
		return false, nil
	}
	var topicID int64
	var m Message
	if err := fc.rows.Scan(&fc.id, &topicID, &m.Timestamp, &m.Data); err != nil {
		return false, fmt.Errorf("%w: %s: message row: %v", ErrCorrupt, fc.f.path, err)
	}
	t, ok := fc.f.topics[topicID]
	if !ok {
		return false, fmt.Errorf("%w: %s: message %d has unknown topic_id %d", ErrCorrupt, fc.f.path, fc.id, topicID)
	}
	m.Topic = t
	fc.head = m
	return true, nil
}

// Next advances to the next message; false at the end or on error (see Err).
func (c *Cursor) Next() bool {
	if c.done || c.err != nil {
		return false
	}
	if err := c.ctx.Err(); err != nil {
		c.err = err
		return false
	}
	if len(c.heads) == 0 {
		c.done = true
		return false
	}
	fc := c.heads[0]
	c.cur = fc.head
	ok, err := fc.advance()
	switch {
	case err != nil:
		c.err = err
		return false
	case ok:
		heap.Fix(&c.heads, 0)
	default:
		heap.Pop(&c.heads)
	}
	return true
}

// Message returns the message Next moved to.
func (c *Cursor) Message() Message { return c.cur }

// Err returns the error that ended the iteration, if any.
func (c *Cursor) Err() error { return c.err }

// Close releases the queries. It is safe to call more than once.
func (c *Cursor) Close() error {
	var errs []error
	for _, fc := range c.all {
		errs = append(errs, fc.rows.Close())
	}
	c.all, c.heads, c.done = nil, nil, true
	return errors.Join(errs...)
}

// cursorHeap orders file cursors by their head's timestamp, then file index.
type cursorHeap []*fileCursor

func (h cursorHeap) Len() int { return len(h) }
func (h cursorHeap) Less(i, j int) bool {
	if h[i].head.Timestamp != h[j].head.Timestamp {
		return h[i].head.Timestamp < h[j].head.Timestamp
	}
	return h[i].idx < h[j].idx
}
func (h cursorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)   { *h = append(*h, x.(*fileCursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
