// Package memstore is an in-memory [history.Store] for tests and throwaway
// sessions. It keeps every session in process memory and loses it when the
// process ends; it follows the same contract as the durable stores and passes
// the same conformance suite (history/historytest).
//
//	store := memstore.New()
//	sess, err := session.New(ctx, session.Config{Provider: p, Store: store})
package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/segments"
	"github.com/sessionkit/sessionkit/history/internal/textsearch"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// Store is an in-memory history store. It is safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	closed   bool
	sessions map[string]*session
}

type session struct {
	version     uint64
	config      json.RawMessage
	summary     string
	messages    []history.Message // every message ever appended, in order
	positions   []int64           // positions[i] is the timeline position of messages[i]
	activeFrom  int               // index into messages of the first Active message
	compactions []history.CompactionRecord
	segments    []segment
	undos       []history.UncompactionRecord
	configs     []history.ConfigRecord
	nextPos     int64
	title, cwd  string
	created     time.Time
	updated     time.Time // of the last write
	events      []history.LoggedEvent
	lastSeq     uint64                // Through of the last EventBatch
	logCovers   int64                 // the highest EventBatch.Covers
	usage       []history.UsageRecord // the ledger, in the order recorded
	usageIDs    map[string]bool       // the IDs of usage
	usageTotals []history.UsageTotal  // the sums of usage (storekit.AddUsage)
	// The word index of Search, kept by Append under the same lock as the
	// messages: words maps a stem to the indexes into messages of the
	// messages holding it, ascending; tools[i] is the name of the tool
	// messages[i] answers.
	words map[string][]int
	tools []string
	// vecs are the messages' vectors (vectors.go).
	vecs [][]byte
	// forkOf, forkAt and forkPos say what the session is a fork of (fork.go).
	forkOf, forkAt string
	forkPos        int64
}

// index adds messages[i] to the word index.
func (ss *session) index(i int) {
	if ss.words == nil {
		ss.words = make(map[string][]int)
	}
	tool := textsearch.ToolName(ss.messages, i, nil)
	ss.tools = append(ss.tools, tool)
	doc := textsearch.DocOf(&ss.messages[i], tool)
	add := func(w string) bool {
		t := textsearch.Term(w)
		if l := ss.words[t]; len(l) == 0 || l[len(l)-1] != i {
			ss.words[t] = append(l, i)
		}
		return true
	}
	textsearch.Words(doc.Text, add)
	textsearch.Words(doc.Tool, add)
}

// touch advances the version of a write and records its time.
func (ss *session) touch() {
	ss.version++
	ss.updated = time.Now().Round(0) // wall clock only: listing compares UnixNano
}

// info is the session as ListSessions lists it.
func (ss *session) info(id string) history.SessionInfo {
	return history.SessionInfo{ID: id, CreatedAt: ss.created, UpdatedAt: ss.updated, Title: ss.titled(), Cwd: ss.cwd, Messages: len(ss.messages), ForkOf: ss.forkOf, ForkAt: ss.forkAt}
}

// titled is the session's title, or the default one of its first message.
func (ss *session) titled() string {
	if ss.title == "" && len(ss.messages) > 0 {
		return history.DefaultTitle(ss.messages[0].Text)
	}
	return ss.title
}

type segment struct {
	seg        history.Segment // without Messages
	from, upto int             // messages[from:upto]
}

var _ history.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{sessions: make(map[string]*session)}
}

// Close makes every later call fail with history.ErrClosed. It never fails.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// open checks a call's context and the store, with s.mu held by the caller.
func (s *Store) open(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed {
		return history.ErrClosed
	}
	return nil
}

// get returns the session for a read, with s.mu held by the caller.
func (s *Store) get(ctx context.Context, id string) (*session, error) {
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	ss, ok := s.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", history.ErrNotFound, id)
	}
	return ss, nil
}

// write returns the session for a write at version, with s.mu held by the caller.
func (s *Store) write(ctx context.Context, id string, version uint64) (*session, error) {
	ss, err := s.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if ss.version != version {
		return nil, fmt.Errorf("%w: session %q is at version %d, not %d", history.ErrConflict, id, ss.version, version)
	}
	return ss, nil
}

// errNoChange makes update return the caller's version without a new one.
var errNoChange = errors.New("no change")

// update runs fn as one write of session id at version, under s.mu: unless
// fn fails, the session takes the next version. fn changes nothing before it
// fails; errNoChange returns version.
func (s *Store) update(ctx context.Context, id string, version uint64, fn func(ss *session) error) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.write(ctx, id, version)
	if err != nil {
		return 0, err
	}
	switch err := fn(ss); {
	case errors.Is(err, errNoChange):
		return version, nil
	case err != nil:
		return 0, err
	}
	ss.touch()
	return ss.version, nil
}

// view runs fn on session id, under s.mu.
func (s *Store) view(ctx context.Context, id string, fn func(ss *session) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.get(ctx, id)
	if err != nil {
		return err
	}
	return fn(ss)
}

// viewed is what get reads of session id, under view.
func viewed[T any](ctx context.Context, s *Store, id string, get func(ss *session) T) (T, error) {
	var out T
	err := s.view(ctx, id, func(ss *session) error {
		out = get(ss)
		return nil
	})
	return out, err
}

// Create implements [history.Store].
func (s *Store) Create(ctx context.Context, n history.NewSession) (*history.Snapshot, error) {
	if n.ID == "" {
		return nil, fmt.Errorf("%w: session has no ID", history.ErrInvalid)
	}
	if err := storekit.CheckConfig(n.Config); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	if _, ok := s.sessions[n.ID]; ok {
		return nil, fmt.Errorf("%w: %q", history.ErrExists, n.ID)
	}
	now := time.Now().Round(0)
	ss := &session{version: 1, config: slices.Clone(n.Config), title: n.Title, cwd: n.Cwd, created: now, updated: now}
	s.sessions[n.ID] = ss
	return ss.snapshot(n.ID), nil
}

func (ss *session) snapshot(id string) *history.Snapshot {
	snap := &history.Snapshot{
		ID:       id,
		Version:  ss.version,
		Config:   slices.Clone(ss.config),
		Summary:  ss.summary,
		Title:    ss.titled(),
		Cwd:      ss.cwd,
		Active:   cloneMessages(ss.messages[ss.activeFrom:]),
		Archived: int64(ss.activeFrom),
		// NextPosition is the position the next message or compaction takes.
		NextPosition: ss.nextPos,
		LastSeq:      ss.lastSeq,
		LogCovers:    ss.logCovers,
		ForkOf:       ss.forkOf,
		ForkAt:       ss.forkAt,
		ForkPosition: ss.forkPos,
	}
	for _, c := range ss.compactions {
		if c.Status == history.StatusInProgress {
			snap.Interrupted = append(snap.Interrupted, c.CompactID)
		}
	}
	return snap
}

// Delete implements [history.Catalog]: the session, with its messages,
// Segments, records, events and word index, leaves the map under s.mu.
func (s *Store) Delete(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(ctx, id); err != nil {
		return err
	}
	delete(s.sessions, id)
	return nil
}

// Load implements [history.Store].
func (s *Store) Load(ctx context.Context, id string) (*history.Snapshot, error) {
	return viewed(ctx, s, id, func(ss *session) *history.Snapshot { return ss.snapshot(id) })
}

// Append implements [history.Store].
func (s *Store) Append(ctx context.Context, id string, version uint64, msgs []history.Message, usage ...history.UsageRecord) (uint64, error) {
	if err := storekit.CheckAppend(msgs, usage); err != nil {
		return 0, err
	}
	return s.update(ctx, id, version, func(ss *session) error {
		ss.record(usage)
		for _, m := range cloneMessages(msgs) {
			ss.messages = append(ss.messages, m)
			ss.positions = append(ss.positions, ss.nextPos)
			ss.nextPos++
			ss.index(len(ss.messages) - 1)
		}
		return nil
	})
}

// SetConfig implements [history.Store].
func (s *Store) SetConfig(ctx context.Context, id string, version uint64, config json.RawMessage) (uint64, error) {
	if err := storekit.CheckConfig(config); err != nil {
		return 0, err
	}
	return s.update(ctx, id, version, func(ss *session) error {
		ss.config = slices.Clone(config)
		return nil
	})
}

// RecordConfig implements [history.Writer].
func (s *Store) RecordConfig(ctx context.Context, id string, version uint64, c history.ConfigChange) (uint64, *history.ConfigRecord, error) {
	if err := storekit.CheckConfigChange(&c); err != nil {
		return 0, nil, err
	}
	var rec *history.ConfigRecord
	v, err := s.update(ctx, id, version, func(ss *session) error {
		ss.config = slices.Clone(c.Config)
		rec = &history.ConfigRecord{Data: slices.Clone(c.Data), At: c.At, Position: ss.nextPos}
		ss.nextPos++
		ss.configs = append(ss.configs, *rec)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return v, rec, nil
}

func (ss *session) compaction(compactID string) int {
	return slices.IndexFunc(ss.compactions, func(c history.CompactionRecord) bool { return c.CompactID == compactID })
}

// BeginCompaction implements [history.Store].
func (s *Store) BeginCompaction(ctx context.Context, id string, version uint64, rec history.CompactionRecord) (uint64, error) {
	if err := storekit.CheckBegin(&rec); err != nil {
		return 0, err
	}
	return s.update(ctx, id, version, func(ss *session) error {
		if ss.compaction(rec.CompactID) >= 0 {
			return fmt.Errorf("%w: compaction %q is already recorded", history.ErrExists, rec.CompactID)
		}
		rec.Position = ss.nextPos
		rec.Summary, rec.Error = "", ""
		if rec.Status != history.StatusInProgress {
			rec.FinishedAt = rec.StartedAt
		} else {
			rec.FinishedAt = time.Time{}
		}
		ss.nextPos++
		ss.compactions = append(ss.compactions, rec)
		return nil
	})
}

// inProgress returns the index of an in-progress compaction.
func (ss *session) inProgress(compactID string) (int, error) {
	i := ss.compaction(compactID)
	if i < 0 {
		return 0, fmt.Errorf("%w: no compaction %q", history.ErrInvalid, compactID)
	}
	if ss.compactions[i].Status != history.StatusInProgress {
		return 0, fmt.Errorf("%w: compaction %q is already %s", history.ErrInvalid, compactID, ss.compactions[i].Status)
	}
	return i, nil
}

// FinishCompaction implements [history.Store].
func (s *Store) FinishCompaction(ctx context.Context, id string, version uint64, compactID string, status history.CompactionStatus, errText string, at time.Time) (uint64, error) {
	if err := storekit.CheckFinish(status); err != nil {
		return 0, err
	}
	return s.update(ctx, id, version, func(ss *session) error {
		i, err := ss.inProgress(compactID)
		if err != nil {
			return err
		}
		ss.compactions[i].Status = status
		ss.compactions[i].Error = errText
		ss.compactions[i].FinishedAt = at
		return nil
	})
}

// CommitCompaction implements [history.Store].
func (s *Store) CommitCompaction(ctx context.Context, id string, version uint64, c history.Commit) (uint64, *history.Segment, error) {
	var out *history.Segment
	v, err := s.update(ctx, id, version, func(ss *session) error {
		if err := storekit.CheckCommit(&c, len(ss.messages)-ss.activeFrom); err != nil {
			return err
		}
		i, err := ss.inProgress(c.CompactID)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(ss.segments, func(g segment) bool { return g.seg.ID == c.SegmentID }) {
			return fmt.Errorf("%w: segment %q is already recorded", history.ErrExists, c.SegmentID)
		}
		rec := &ss.compactions[i]
		rec.Status = history.StatusCompleted
		rec.Summary = c.Summary
		rec.FinishedAt = c.At
		seg := segment{
			seg:  *storekit.CommittedSegment(&c, rec),
			from: ss.activeFrom,
			upto: ss.activeFrom + c.Archive,
		}
		ss.segments = append(ss.segments, seg)
		ss.activeFrom = seg.upto
		ss.record(c.Usage)
		ss.summary = c.Summary
		out = new(history.Segment)
		*out = seg.seg
		out.Fidelity = seg.seg.Fidelity.Clone()
		out.Files = slices.Clone(seg.seg.Files)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return v, out, nil
}

// Uncompact implements [history.Writer].
func (s *Store) Uncompact(ctx context.Context, id string, version uint64, u history.Uncompaction) (uint64, *history.UncompactionRecord, error) {
	if err := storekit.CheckUncompaction(&u); err != nil {
		return 0, nil, err
	}
	var rec *history.UncompactionRecord
	v, err := s.update(ctx, id, version, func(ss *session) error {
		// The standing Segments are contiguous and end at the watermark;
		// the newest is the last of them.
		last, prev := -1, -1
		for i := range ss.segments {
			if !ss.segments[i].seg.Undone() {
				prev, last = last, i
			}
		}
		if last < 0 {
			return fmt.Errorf("%w: session %q", history.ErrNothingToUndo, id)
		}
		if slices.ContainsFunc(ss.undos, func(r history.UncompactionRecord) bool { return r.ID == u.ID }) {
			return fmt.Errorf("%w: uncompaction %q is already recorded", history.ErrExists, u.ID)
		}
		g := &ss.segments[last]
		g.seg.UndoneAt, g.seg.UndoID = u.At, u.ID
		rec = &history.UncompactionRecord{ID: u.ID, SegmentID: g.seg.ID, CompactID: g.seg.CompactID, Restored: g.upto - g.from, At: u.At, Position: ss.nextPos}
		ss.nextPos++
		ss.undos = append(ss.undos, *rec)
		ss.activeFrom = g.from
		ss.summary = ""
		if prev >= 0 {
			ss.summary = ss.segments[prev].seg.Summary
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return v, rec, nil
}

func (ss *session) segmentOf(s *segment) *history.Segment {
	seg := s.seg
	seg.Fidelity = seg.Fidelity.Clone()
	seg.Files = slices.Clone(seg.Files)
	seg.Messages = cloneMessages(ss.messages[s.from:s.upto])
	return &seg
}

// Recover implements [history.Store].
func (s *Store) Recover(ctx context.Context, id string, version uint64, at time.Time) (uint64, []string, error) {
	var ids []string
	v, err := s.update(ctx, id, version, func(ss *session) error {
		for i := range ss.compactions {
			if c := &ss.compactions[i]; c.Status == history.StatusInProgress {
				c.Status, c.Error, c.FinishedAt = history.StatusFailed, history.InterruptedError, at
				ids = append(ids, c.CompactID)
			}
		}
		if len(ids) == 0 {
			return errNoChange
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return v, ids, nil
}

// Segments implements [history.Store].
func (s *Store) Segments(ctx context.Context, id string) ([]history.Segment, error) {
	var out []history.Segment
	err := s.view(ctx, id, func(ss *session) error {
		out = make([]history.Segment, 0, len(ss.segments))
		for i := range ss.segments {
			out = append(out, *ss.segmentOf(&ss.segments[i]))
		}
		return nil
	})
	return out, err
}

// Timeline implements [history.Store].
func (s *Store) Timeline(ctx context.Context, id string) ([]history.Entry, error) {
	return viewed(ctx, s, id, func(ss *session) []history.Entry { return ss.entries(0, math.MaxInt64, false) })
}

// Entries implements [history.Reader]: the messages in the range are
// found by binary search.
func (s *Store) Entries(ctx context.Context, id string, q history.EntryQuery) ([]history.Entry, error) {
	to, err := storekit.CheckEntryQuery(q)
	if err != nil {
		return nil, err
	}
	var out []history.Entry
	err = s.view(ctx, id, func(ss *session) error {
		out = ss.entries(q.From, to, q.Records)
		return nil
	})
	return out, err
}

// entries returns copies of the timeline entries at positions from up to,
// not including, to; without the messages when records.
func (ss *session) entries(from, to int64, records bool) []history.Entry {
	activeFrom := ss.nextPos
	if ss.activeFrom < len(ss.positions) {
		activeFrom = ss.positions[ss.activeFrom]
	}
	var (
		positions []int64
		msgs      []history.Message
	)
	if !records {
		i, _ := slices.BinarySearch(ss.positions, from)
		j, _ := slices.BinarySearch(ss.positions, to)
		positions, msgs = slices.Clone(ss.positions[i:j]), cloneMessages(ss.messages[i:j])
	}
	recs := inRange(ss.compactions, from, to, func(r history.CompactionRecord) int64 { return r.Position })
	undos := inRange(ss.undos, from, to, func(r history.UncompactionRecord) int64 { return r.Position })
	configs := inRange(ss.configs, from, to, func(r history.ConfigRecord) int64 { return r.Position })
	for i := range configs {
		configs[i].Data = slices.Clone(configs[i].Data)
	}
	return storekit.MergeConfigs(storekit.MergeEntries(positions, msgs, recs, undos, activeFrom), configs)
}

// inRange returns a copy of the records of recs (in position order) at
// positions from up to, not including, to.
func inRange[R any](recs []R, from, to int64, pos func(R) int64) []R {
	i := sort.Search(len(recs), func(k int) bool { return pos(recs[k]) >= from })
	j := sort.Search(len(recs), func(k int) bool { return pos(recs[k]) >= to })
	return slices.Clone(recs[i:j])
}

// SegmentHeaders implements [history.Reader].
func (s *Store) SegmentHeaders(ctx context.Context, id string) ([]history.Segment, error) {
	var out []history.Segment
	err := s.view(ctx, id, func(ss *session) error {
		out = make([]history.Segment, 0, len(ss.segments))
		for i := range ss.segments {
			seg := ss.segments[i].seg
			seg.Fidelity = seg.Fidelity.Clone()
			seg.Files = slices.Clone(seg.Files)
			seg.Messages = nil
			out = append(out, seg)
		}
		return nil
	})
	return out, err
}

func cloneMessages(msgs []history.Message) []history.Message {
	out := make([]history.Message, len(msgs))
	for i, m := range msgs {
		m.ToolCalls = slices.Clone(m.ToolCalls)
		for j := range m.ToolCalls {
			m.ToolCalls[j].Arguments = slices.Clone(m.ToolCalls[j].Arguments)
		}
		m.Attachments = slices.Clone(m.Attachments)
		for j := range m.Attachments {
			m.Attachments[j].Data = slices.Clone(m.Attachments[j].Data)
		}
		m.Files = slices.Clone(m.Files)
		m.Thoughts = slices.Clone(m.Thoughts)
		out[i] = m
	}
	return out
}

// ListSessions implements [history.Catalog].
func (s *Store) ListSessions(ctx context.Context, opts history.ListOptions) (history.SessionPage, error) {
	limit, after, err := storekit.ParseList(opts)
	if err != nil {
		return history.SessionPage{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.open(ctx); err != nil {
		return history.SessionPage{}, err
	}
	var all []history.SessionInfo
	for id, ss := range s.sessions {
		if opts.Cwd != "" && ss.cwd != opts.Cwd || opts.ForkOf != "" && ss.forkOf != opts.ForkOf {
			continue
		}
		if after != nil && !after.Before(ss.updated.UnixNano(), id) {
			continue
		}
		all = append(all, ss.info(id))
	}
	slices.SortFunc(all, func(a, b history.SessionInfo) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return storekit.Page(all[:min(len(all), limit+1)], limit), nil
}

// LogEvents implements [history.EventLog].
func (s *Store) LogEvents(ctx context.Context, id string, b history.EventBatch) error {
	return s.view(ctx, id, func(ss *session) error {
		if err := storekit.CheckEventBatch(&b, ss.lastSeq); err != nil {
			return err
		}
		for _, e := range b.Events {
			e.Data = slices.Clone(e.Data)
			ss.events = append(ss.events, e)
		}
		ss.lastSeq = b.Through
		ss.logCovers = max(ss.logCovers, b.Covers)
		return nil
	})
}

// record adds recs to the ledger, leaving out the IDs it holds. recs
// have passed storekit.CheckUsage.
func (ss *session) record(recs []history.UsageRecord) {
	for _, r := range recs {
		if ss.usageIDs == nil {
			ss.usageIDs = make(map[string]bool)
		}
		if !ss.usageIDs[r.ID] {
			ss.usageIDs[r.ID] = true
			ss.usage = append(ss.usage, r)
			ss.usageTotals = storekit.AddUsage(ss.usageTotals, &r)
		}
	}
}

// RecordUsage implements [history.Ledger].
func (s *Store) RecordUsage(ctx context.Context, id string, recs []history.UsageRecord) error {
	if err := storekit.CheckUsage(recs); err != nil {
		return err
	}
	return s.view(ctx, id, func(ss *session) error {
		ss.record(recs)
		return nil
	})
}

// Usage implements [history.Ledger].
func (s *Store) Usage(ctx context.Context, id string) ([]history.UsageRecord, error) {
	return viewed(ctx, s, id, func(ss *session) []history.UsageRecord { return slices.Clone(ss.usage) })
}

// UsageTotals implements [history.Ledger]: the sums kept as records are
// added.
func (s *Store) UsageTotals(ctx context.Context, id string) ([]history.UsageTotal, error) {
	return viewed(ctx, s, id, func(ss *session) []history.UsageTotal { return slices.Clone(ss.usageTotals) })
}

// LastUsage implements [history.Ledger].
func (s *Store) LastUsage(ctx context.Context, id, purpose string) (history.UsageRecord, bool, error) {
	if err := storekit.CheckPurpose(purpose); err != nil {
		return history.UsageRecord{}, false, err
	}
	return storekit.Last(viewed(ctx, s, id, func(ss *session) []history.UsageRecord {
		for i := len(ss.usage) - 1; i >= 0; i-- {
			if ss.usage[i].Purpose == purpose {
				return []history.UsageRecord{ss.usage[i]}
			}
		}
		return nil
	}))
}

// ReserveSeqs implements [history.EventLog].
func (s *Store) ReserveSeqs(ctx context.Context, id string, gap uint64) (history.SeqReservation, error) {
	if err := storekit.CheckSeqGap(gap); err != nil {
		return history.SeqReservation{}, err
	}
	var r history.SeqReservation
	err := s.view(ctx, id, func(ss *session) error {
		r = history.SeqReservation{Found: true, Last: ss.lastSeq}
		if storekit.SeqRoom(ss.lastSeq, gap) {
			ss.lastSeq += gap
			r.Start = ss.lastSeq
		}
		return nil
	})
	if err != nil {
		return history.SeqReservation{}, err
	}
	return r, nil
}

// Events implements [history.EventLog].
func (s *Store) Events(ctx context.Context, id string, after uint64, limit int) ([]history.LoggedEvent, error) {
	var out []history.LoggedEvent
	err := s.view(ctx, id, func(ss *session) error {
		if after == math.MaxUint64 {
			return nil
		}
		i, _ := slices.BinarySearchFunc(ss.events, after+1, func(e history.LoggedEvent, seq uint64) int {
			return cmp.Compare(e.Seq, seq)
		})
		evs := ss.events[i:]
		if limit > 0 && len(evs) > limit {
			evs = evs[:limit]
		}
		out = slices.Clone(evs)
		for j := range out {
			out[j].Data = slices.Clone(out[j].Data)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Search implements [history.Reader] over the session's word index: every
// message holding a word of the query is a candidate, ranked by
// history/internal/textsearch like the other stores rank theirs.
func (s *Store) Search(ctx context.Context, id string, sq history.SearchQuery) (history.SearchPage, error) {
	q, offset, limit, err := textsearch.Request(sq)
	if err != nil {
		return history.SearchPage{}, err
	}
	var page history.SearchPage
	err = s.view(ctx, id, func(ss *session) error {
		st := textsearch.Stats{N: len(ss.messages), DF: make([]int, len(q.Terms))}
		var idx []int
		for i, t := range q.Terms {
			l := ss.words[t]
			st.DF[i] = len(l)
			idx = append(idx, l...)
		}
		slices.Sort(idx)
		idx = slices.Compact(idx)
		standing := ss.standing()
		cands := make([]textsearch.Candidate, len(idx))
		for k, i := range idx {
			cands[k] = textsearch.Candidate{
				Message:  cloneMessages(ss.messages[i : i+1])[0],
				Position: ss.positions[i],
				ToolName: ss.tools[i],
			}
			cands[k].SegmentID, cands[k].Compaction = standing.At(int64(i), int64(ss.activeFrom))
		}
		page, err = textsearch.Page(q, offset, limit, sq.Neighbors, cands, st, func(pos int64, limit int, after bool) ([]history.WindowMessage, error) {
			at, _ := slices.BinarySearch(ss.positions, pos) // the hit's index
			from, to := max(0, at-limit), at
			if after {
				from, to = at+1, min(len(ss.messages), at+1+limit)
			}
			msgs := cloneMessages(ss.messages[from:to])
			out := make([]history.WindowMessage, len(msgs))
			for k := range msgs {
				out[k] = history.WindowMessage{Message: msgs[k], Position: ss.positions[from+k]}
			}
			if !after {
				slices.Reverse(out)
			}
			return out, nil
		})
		return err
	})
	return page, err
}

// standing is the session's standing Segments, their spans as indexes
// into messages; a Segment's compaction number is its place in segments
// (commit order), from 1.
func (ss *session) standing() *segments.Standing {
	var st segments.Standing
	for k, g := range ss.segments {
		if !g.seg.Undone() {
			st.Add(g.seg.ID, storekit.SegmentSpan{From: int64(g.from), To: int64(g.upto - 1)}, k+1)
		}
	}
	return &st
}

// Window implements [history.Reader]: the newest message with the ID
// q.Around and its neighbours, from the session's messages in memory.
func (s *Store) Window(ctx context.Context, id string, q history.WindowQuery) ([]history.WindowMessage, error) {
	if err := storekit.CheckWindow(q); err != nil {
		return nil, err
	}
	var out []history.WindowMessage
	err := s.view(ctx, id, func(ss *session) error {
		at := len(ss.messages) - 1
		for at >= 0 && ss.messages[at].ID != q.Around {
			at--
		}
		if at < 0 {
			return storekit.UnknownMessage(id, q.Around)
		}
		from, to := max(0, at-q.Before), min(len(ss.messages), at+q.After+1)
		msgs, standing := cloneMessages(ss.messages[from:to]), ss.standing()
		out = make([]history.WindowMessage, len(msgs))
		for k := range msgs {
			i := from + k
			w := &out[k]
			w.Message, w.Position, w.ToolName = msgs[k], ss.positions[i], ss.tools[i]
			w.SegmentID, w.Compaction = standing.At(int64(i), int64(ss.activeFrom))
		}
		return nil
	})
	return out, err
}
