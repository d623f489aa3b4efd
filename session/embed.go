package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/chanbatch"
	"github.com/sessionkit/sessionkit/internal/textcut"
	"github.com/sessionkit/sessionkit/provider"
)

// The embedder (Config.Embedder, docs/compaction.md "Search with an
// embedder"). Embedding runs on a goroutine of its own, never on the
// loop and never on the commit path: the loop hands each message it
// committed to a bounded queue without waiting (a full queue drops it and
// marks the embedder behind), and the embedder embeds what it takes in
// batches and writes the vectors with history.VectorIndex.PutVectors, an
// unversioned write keyed by the message's position and fenced by the
// session's lease, which never races the loop's versioned writes. When it
// is behind (at open, after a dropped message, after a failure) it asks
// the store for the messages without a vector (Unembedded), a batch at a
// time, oldest first. A failure (an error, a timeout, another count or
// dimension than asked for, NaN) leaves the messages without vectors,
// found by their words as ever, and is retried later, with backoff; the
// session reports it once with an EmbedEvent, and once more when the
// embedder works again.

// Bounds of the embedder.
const (
	// DefaultEmbedTimeout is Config.EmbedTimeout's default.
	DefaultEmbedTimeout = 30 * time.Second
	// MaxEmbedBytes is how much of a message's text (history.SearchText)
	// is embedded: its first 16 KiB, cut at a character; its words are
	// all searched.
	MaxEmbedBytes = 16 << 10
	// embedBatch is the most texts of one Embed call.
	embedBatch = 64
	// embedQueue is the most committed messages waiting to be embedded.
	embedQueue = 1024
	// embedBackoff and maxEmbedBackoff bound the wait before an embedder
	// that failed is tried again.
	embedBackoff    = time.Second
	maxEmbedBackoff = 5 * time.Minute
)

// EmbedEvent reports that the session's embedder (Config.Embedder)
// failed, so that messages are found by their words only until it works
// again (Failed, with the error), or that it works again (not Failed).
// It is published once when the embedder starts failing, not for each
// message, and once when it recovers. No turn ever fails for it. Live only.
type EmbedEvent struct {
	Failed bool
	Error  string // Failed only
}

func (*EmbedEvent) payload() {}

// Durable implements Payload: live only.
func (*EmbedEvent) Durable() bool { return false }

// embedder is the session's embedding goroutine and what it owns.
type embedder struct {
	emb     provider.Embedder
	store   history.Store
	id      string
	log     *zap.Logger
	timeout time.Duration
	storeTO time.Duration
	// in is the bounded queue the loop hands committed messages to;
	// behind is set when it dropped one.
	in     chan history.PositionedMessage
	behind atomic.Bool
	// report posts an event for the loop to publish.
	report func(ctx context.Context, ev *EmbedEvent)

	ctx  context.Context
	stop context.CancelFunc
	done sync.WaitGroup

	// Owned by the goroutine.
	dim     int           // the dimension of the vectors this process stored
	failing bool          // an attempt failed and none succeeded since (reported)
	wait    time.Duration // the last backoff
	retryAt time.Time     // no attempt before it
	caught  int64         // the last position a catch-up embedded
}

// newEmbedder returns the embedder of session s, not started; nil
// without Config.Embedder.
func newEmbedder(cfg Config, s *Session, log *zap.Logger) *embedder {
	if cfg.Embedder == nil {
		return nil
	}
	e := &embedder{
		emb: cfg.Embedder, store: s.store, id: s.id, log: log,
		timeout: cmp.Or(cfg.EmbedTimeout, DefaultEmbedTimeout),
		storeTO: cmp.Or(cfg.StoreTimeout, DefaultStoreTimeout),
		in:      make(chan history.PositionedMessage, embedQueue),
		caught:  -1,
	}
	e.ctx, e.stop = context.WithCancel(s.storeCtx)
	e.report = func(ctx context.Context, ev *EmbedEvent) {
		select {
		case s.ctl <- func(l *loop) { l.publish(ev) }:
		case <-ctx.Done():
		}
	}
	return e
}

// start starts the goroutine, which first embeds what the store holds
// without a vector.
func (e *embedder) start() {
	e.behind.Store(true)
	e.done.Add(1)
	go func() {
		defer e.done.Done()
		e.run()
	}()
}

// close stops the goroutine and waits for it (an Embed call in flight
// sees its context end), at most closeGrace.
func (e *embedder) close() {
	e.stop()
	done := make(chan struct{})
	go func() { e.done.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeGrace):
		e.log.Warn("the embedder did not stop within the close grace")
	}
}

// stopEmbedder stops the embedder, if any.
func (s *Session) stopEmbedder() {
	if s.embed != nil {
		s.embed.close()
	}
}

// add hands the loop's committed messages to the goroutine, without
// waiting: a full queue drops them, and the goroutine reads them back
// from the store.
func (e *embedder) add(first int64, msgs []history.Message) {
	for i := range msgs {
		select {
		case e.in <- history.PositionedMessage{Position: first + int64(i), Message: msgs[i]}:
		default:
			e.behind.Store(true)
			return
		}
	}
}

func (e *embedder) run() {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		if e.behind.Load() && !time.Now().Before(e.retryAt) {
			e.catchUp()
		}
		var retry <-chan time.Time
		if e.behind.Load() {
			timer.Reset(max(time.Until(e.retryAt), 0))
			retry = timer.C
		}
		select {
		case <-e.ctx.Done():
			return
		case m := <-e.in:
			batch := chanbatch.Fill([]history.PositionedMessage{m}, e.in, embedBatch)
			// A catch-up read those it embedded from the store already.
			batch = slices.DeleteFunc(batch, func(m history.PositionedMessage) bool { return m.Position <= e.caught })
			switch {
			case len(batch) == 0:
			case time.Now().Before(e.retryAt):
				e.behind.Store(true) // backing off: read back when it is tried again
			default:
				e.embed(batch)
			}
		case <-retry:
		}
	}
}

// catchUp embeds the messages the store holds without a vector, oldest
// first, a batch at a time, until there are none or an attempt fails.
func (e *embedder) catchUp() {
	e.behind.Store(false)
	after := int64(-1)
	for e.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(e.ctx, e.storeTO)
		batch, err := e.store.Unembedded(ctx, e.id, after, embedBatch)
		cancel()
		if err != nil {
			e.storeFailed("read the messages without vectors", err)
			return
		}
		if len(batch) == 0 || !e.embed(batch) {
			return
		}
		after = batch[len(batch)-1].Position
		e.caught = max(e.caught, after)
	}
}

// embed embeds batch and stores its vectors; false when it failed (the
// failure is handled: reported, retried later).
func (e *embedder) embed(batch []history.PositionedMessage) bool {
	vecs := make([]history.MessageVector, len(batch))
	var texts []string
	var at []int
	for i := range batch {
		vecs[i] = history.MessageVector{Position: batch[i].Position, MessageID: batch[i].Message.ID}
		if text := embedText(&batch[i].Message); text != "" {
			texts, at = append(texts, text), append(at, i)
		}
	}
	if len(texts) > 0 {
		got, err := e.call(texts)
		if err != nil {
			e.failed(err)
			return false
		}
		for k, i := range at {
			vecs[i].Vector = got[k]
		}
	}
	ctx, cancel := context.WithTimeout(e.ctx, e.storeTO)
	err := e.store.PutVectors(ctx, e.id, vecs)
	cancel()
	if err != nil {
		e.storeFailed("store vectors", err)
		return false
	}
	e.wait, e.retryAt = 0, time.Time{}
	if e.failing {
		e.failing = false
		e.report(e.ctx, &EmbedEvent{})
	}
	return true
}

// call is one Embed call, bounded by the timeout, and its answer checked.
func (e *embedder) call(texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(e.ctx, e.timeout)
	defer cancel()
	got, err := e.emb.Embed(ctx, texts)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && e.ctx.Err() == nil:
		return nil, fmt.Errorf("the embedder did not answer within %v", e.timeout)
	case err != nil:
		return nil, err
	}
	if err := provider.CheckEmbeddings(got, len(texts)); err != nil {
		return nil, err
	}
	if e.dim == 0 {
		e.dim = len(got[0])
	}
	if len(got[0]) != e.dim {
		return nil, fmt.Errorf("%w: vectors of %d dimensions, %d before", provider.ErrBadEmbedding, len(got[0]), e.dim)
	}
	return got, nil
}

// failed reports a failed attempt (once while it keeps failing) and
// schedules the next one.
func (e *embedder) failed(err error) {
	if e.ctx.Err() != nil {
		return // closing
	}
	e.backOff()
	e.log.Warn("embedding failed: messages are found by their words until it works", zap.Error(err), zap.Duration("retry_in", e.wait))
	if !e.failing {
		e.failing = true
		e.report(e.ctx, &EmbedEvent{Failed: true, Error: err.Error()})
	}
}

// storeFailed logs a store call of the embedder that failed: the
// messages are read back later.
func (e *embedder) storeFailed(what string, err error) {
	if e.ctx.Err() != nil {
		return
	}
	e.backOff()
	e.log.Warn("embedder: "+what+" failed", zap.Error(err), zap.Duration("retry_in", e.wait))
}

// backOff marks the embedder behind and puts its next attempt off, twice
// as long as the last time.
func (e *embedder) backOff() {
	e.behind.Store(true)
	e.wait = min(max(2*e.wait, embedBackoff), maxEmbedBackoff)
	e.retryAt = time.Now().Add(e.wait)
}

// embedText is what of m is embedded: its searchable text, cut to
// MaxEmbedBytes; "" for a message with none.
func embedText(m *history.Message) string {
	return textcut.Prefix(strings.TrimSpace(history.SearchText(m)), MaxEmbedBytes)
}

// queryVector embeds a search query; nil when the embedder failed (the
// search then ranks by words only).
func (e *embedder) queryVector(ctx context.Context, query string) []float32 {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	got, err := e.emb.Embed(ctx, []string{embedText(&history.Message{Text: query})})
	if err == nil {
		err = provider.CheckEmbeddings(got, 1)
	}
	if err != nil {
		e.log.Warn("embedding a search query failed: searching by words only", zap.Error(err))
		return nil
	}
	return got[0]
}

// rrfK is the constant of reciprocal rank fusion: a message's fused
// score is the sum, over the rankings that hold it, of 1/(rrfK + rank),
// rank 1 the best (Cormack, Clarke and Büttcher, 2009).
const rrfK = 60

// fused is one message of a fused ranking.
type fused struct {
	id    string
	pos   int64
	score float64
	words *history.SearchHit // its hit in the word ranking; nil for none
}

// fuse merges the word ranking and the vector ranking by reciprocal rank
// fusion, best first; among equal scores the word ranking's order, then
// the later message.
func fuse(words []history.SearchHit, near []history.VectorHit) []fused {
	byID := map[string]int{}
	var out []fused
	for r := range words {
		byID[words[r].MessageID] = len(out)
		out = append(out, fused{id: words[r].MessageID, pos: words[r].Position, score: 1.0 / float64(rrfK+r+1), words: &words[r]})
	}
	for r, h := range near {
		if i, ok := byID[h.MessageID]; ok {
			out[i].score += 1.0 / float64(rrfK+r+1)
			continue
		}
		byID[h.MessageID] = len(out)
		out = append(out, fused{id: h.MessageID, pos: h.Position, score: 1.0 / float64(rrfK+r+1)})
	}
	slices.SortStableFunc(out, func(a, b fused) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if (a.words == nil) != (b.words == nil) {
			if a.words != nil {
				return -1
			}
			return 1
		}
		return 0
	})
	return out
}

// fusedSearch is Search with a query vector: the store's word ranking and
// its nearest vectors, fused, and each hit read with its neighbours
// (history.Reader.Window), merged as the store merges them
// (history.SearchHit.Neighbors). It returns nil, false when the session
// has no vector to rank by.
func (s *Session) fusedSearch(ctx context.Context, req SearchRequest, vec []float32) ([]SearchHit, bool, error) {
	limit := cmp.Or(min(req.Limit, history.MaxSearchLimit), history.DefaultSearchLimit)
	depth := min(history.MaxSearchLimit, limit*(2*req.Neighbors+2))
	near, err := s.store.Nearest(ctx, s.id, history.VectorQuery{Vector: vec, Limit: depth})
	if err != nil || len(near) == 0 {
		return nil, false, err
	}
	page, err := s.store.Search(ctx, s.id, history.SearchQuery{Text: req.Query, Limit: depth})
	if err != nil {
		return nil, false, err
	}
	n := req.Neighbors
	taken := map[int64]bool{}
	hits := []SearchHit{}
	for _, f := range fuse(page.Hits, near) {
		if len(hits) == limit {
			break
		}
		if taken[f.pos] {
			continue // a neighbour of a better hit
		}
		var w []history.WindowMessage
		if n > 0 || f.words == nil {
			w, err = s.store.Window(ctx, s.id, history.WindowQuery{Around: f.id, Before: n, After: n})
			if errors.Is(err, history.ErrUnknownMessage) {
				continue // gone (the session was forked or rewritten meanwhile)
			}
			if err != nil {
				return nil, false, err
			}
		}
		h, ok := hitOf(f, w)
		if !ok {
			continue
		}
		taken[f.pos] = true
		for k := range w {
			if m := &w[k]; m.Position != f.pos && !taken[m.Position] {
				taken[m.Position] = true
				h.Neighbors = append(h.Neighbors, m.Message)
				if m.Position < f.pos {
					h.NeighborsBefore++
				}
			}
		}
		hits = append(hits, SearchHit{SearchHit: h})
	}
	return hits, true, nil
}

// hitOf is the hit of fused message f, whose window (when read) is w:
// the word ranking's hit, or one made of the message itself, with the
// fused score.
func hitOf(f fused, w []history.WindowMessage) (history.SearchHit, bool) {
	if f.words != nil {
		h := *f.words
		h.Score = f.score
		return h, true
	}
	i := slices.IndexFunc(w, func(m history.WindowMessage) bool { return m.Position == f.pos })
	if i < 0 {
		return history.SearchHit{}, false // another message of that ID is the newest
	}
	m := &w[i]
	return history.SearchHit{
		MessageID: m.Message.ID, SegmentID: m.SegmentID, Compaction: m.Compaction, Position: m.Position,
		Role: m.Message.Role, ToolName: m.ToolName, Snippet: excerpt(history.SearchText(&m.Message)), Score: f.score,
	}, true
}

// excerptBytes bounds the snippet of a hit found by its vector alone:
// the start of the message (no word of the query to show).
const excerptBytes = 300

// excerpt is the start of text, on one line, at most excerptBytes.
func excerpt(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if cut := textcut.Prefix(text, excerptBytes); cut != text {
		return cut + "…"
	}
	return text
}
