package storekit

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/sessionkit/sessionkit/history"
)

// The checks return errors wrapping [history.ErrInvalid]; a store returns
// them as they are, before it writes anything.

// CheckUncompaction validates u, passed to [history.Writer.Uncompact].
func CheckUncompaction(u *history.Uncompaction) error {
	if u.ID == "" {
		return fmt.Errorf("%w: uncompaction has no ID", history.ErrInvalid)
	}
	return nil
}

// CheckCommit validates c against the number of Active messages; stores call
// it inside the commit transaction.
func CheckCommit(c *history.Commit, active int) error {
	switch {
	case c.CompactID == "" || c.SegmentID == "":
		return fmt.Errorf("%w: commit needs a compaction ID and a segment ID", history.ErrInvalid)
	case c.Archive < 1 || c.Archive > active:
		return fmt.Errorf("%w: commit archives %d messages of %d active", history.ErrInvalid, c.Archive, active)
	case strings.TrimSpace(c.Summary) == "":
		return fmt.Errorf("%w: commit has an empty summary", history.ErrInvalid)
	case c.Fidelity.Facts < 0 || c.Fidelity.Kept < 0 || c.Fidelity.Kept > c.Fidelity.Facts:
		return fmt.Errorf("%w: commit fidelity keeps %d of %d facts", history.ErrInvalid, c.Fidelity.Kept, c.Fidelity.Facts)
	case len(c.Fidelity.Missing) > history.MaxFidelityMissing:
		return fmt.Errorf("%w: commit fidelity lists %d missing facts, at most %d", history.ErrInvalid, len(c.Fidelity.Missing), history.MaxFidelityMissing)
	}
	if err := history.ValidFileStates(c.Files); err != nil {
		return fmt.Errorf("%w: commit files: %w", history.ErrInvalid, err)
	}
	return CheckUsage(c.Usage)
}

// CheckBegin validates a compaction record passed to BeginCompaction.
func CheckBegin(rec *history.CompactionRecord) error {
	switch {
	case rec.CompactID == "":
		return fmt.Errorf("%w: compaction has no ID", history.ErrInvalid)
	case rec.Status != history.StatusInProgress && rec.Status != history.StatusNothingToCompact:
		return fmt.Errorf("%w: compaction %s cannot begin as %q", history.ErrInvalid, rec.CompactID, rec.Status)
	case !history.ValidTrigger(rec.Trigger):
		return fmt.Errorf("%w: compaction %s has unknown trigger %q", history.ErrInvalid, rec.CompactID, rec.Trigger)
	}
	return nil
}

// CheckFinish validates the status passed to FinishCompaction.
func CheckFinish(status history.CompactionStatus) error {
	if status != history.StatusFailed && status != history.StatusCancelled {
		return fmt.Errorf("%w: a compaction cannot finish as %q without a commit", history.ErrInvalid, status)
	}
	return nil
}

// CheckAppend validates the arguments of history.Writer.Append: the
// messages (CheckMessages) and their usage records (CheckUsage).
func CheckAppend(msgs []history.Message, usage []history.UsageRecord) error {
	if err := CheckMessages(msgs); err != nil {
		return err
	}
	return CheckUsage(usage)
}

// CheckMessages validates messages passed to Append.
func CheckMessages(msgs []history.Message) error {
	if len(msgs) == 0 {
		return fmt.Errorf("%w: nothing to append", history.ErrInvalid)
	}
	for i := range msgs {
		if err := msgs[i].Validate(); err != nil {
			return err
		}
	}
	return nil
}

// CheckConfig validates a configuration blob: nil or valid JSON.
func CheckConfig(config json.RawMessage) error {
	if config != nil && !json.Valid(config) {
		return fmt.Errorf("%w: configuration is not JSON", history.ErrInvalid)
	}
	return nil
}

// CheckConfigChange validates a change for history.Writer.RecordConfig: its
// Config nil or JSON, its Data JSON.
func CheckConfigChange(c *history.ConfigChange) error {
	if err := CheckConfig(c.Config); err != nil {
		return err
	}
	if !json.Valid(c.Data) {
		return fmt.Errorf("%w: the configuration change's data is not JSON", history.ErrInvalid)
	}
	return nil
}

// CheckEventBatch validates b against the Through the session recorded
// before; stores call it inside the write transaction.
func CheckEventBatch(b *history.EventBatch, through uint64) error {
	last := through
	for i := range b.Events {
		e := &b.Events[i]
		switch {
		case e.Seq <= last:
			return fmt.Errorf("%w: event sequence number %d is not above %d", history.ErrInvalid, e.Seq, last)
		case e.Kind == "":
			return fmt.Errorf("%w: event %d has no kind", history.ErrInvalid, e.Seq)
		}
		last = e.Seq
	}
	switch {
	case b.Through < last:
		return fmt.Errorf("%w: batch through %d is below sequence number %d", history.ErrInvalid, b.Through, last)
	case b.Through > history.MaxSeq:
		return fmt.Errorf("%w: sequence number %d is above history.MaxSeq", history.ErrInvalid, b.Through)
	case b.Covers < 0:
		return fmt.Errorf("%w: batch covers negative position %d", history.ErrInvalid, b.Covers)
	}
	return nil
}

// CheckSeqGap validates the gap of a reservation of sequence numbers
// (history.EventLog.ReserveSeqs): 1..history.MaxSeq/2.
func CheckSeqGap(gap uint64) error {
	if gap == 0 || gap > history.MaxSeq/2 {
		return fmt.Errorf("%w: a reservation of %d sequence numbers (1 to history.MaxSeq/2)", history.ErrInvalid, gap)
	}
	return nil
}

// SeqRoom reports whether a session whose recorded Through is last has room
// for a reservation of gap numbers: the raise and another gap above it stay
// within history.MaxSeq. gap has passed CheckSeqGap.
func SeqRoom(last, gap uint64) bool { return last <= history.MaxSeq-2*gap }

// CheckUsage validates usage records for history.Writer.Append,
// history.Commit.Usage and history.Ledger.RecordUsage: each valid
// (history.UsageRecord.Validate), no two of one ID.
func CheckUsage(recs []history.UsageRecord) error {
	for i := range recs {
		if err := recs[i].Validate(); err != nil {
			return err
		}
		for j := range i {
			if recs[j].ID == recs[i].ID {
				return fmt.Errorf("%w: two usage records have ID %q", history.ErrInvalid, recs[i].ID)
			}
		}
	}
	return nil
}

// CheckPurpose validates the purpose of history.Ledger.LastUsage: not
// empty.
func CheckPurpose(purpose string) error {
	if purpose == "" {
		return fmt.Errorf("%w: LastUsage: purpose is empty", history.ErrInvalid)
	}
	return nil
}

// Last returns the first of recs (a read of at most one record), and
// whether there is one, or err.
func Last(recs []history.UsageRecord, err error) (history.UsageRecord, bool, error) {
	if err != nil || len(recs) == 0 {
		return history.UsageRecord{}, false, err
	}
	return recs[0], true, nil
}

// CheckWindow validates q, passed to [history.Reader.Window]: an Around,
// and Before and After in 0..[history.MaxWindow].
func CheckWindow(q history.WindowQuery) error {
	switch {
	case q.Around == "":
		return fmt.Errorf("%w: window: Around (a message ID) is empty", history.ErrInvalid)
	case q.Before < 0 || q.Before > history.MaxWindow:
		return fmt.Errorf("%w: window: Before %d is outside 0..%d", history.ErrInvalid, q.Before, history.MaxWindow)
	case q.After < 0 || q.After > history.MaxWindow:
		return fmt.Errorf("%w: window: After %d is outside 0..%d", history.ErrInvalid, q.After, history.MaxWindow)
	}
	return nil
}

// UnknownMessage is the error of [history.Reader.Window] for a message
// ID that session id does not hold: it wraps [history.ErrInvalid] and
// [history.ErrUnknownMessage].
func UnknownMessage(id, around string) error {
	return fmt.Errorf("%w: %w: session %q has no message %q", history.ErrInvalid, history.ErrUnknownMessage, id, around)
}

// CheckEntryQuery validates q, passed to [history.Reader.Entries], and
// returns the end of its range: q.To, or math.MaxInt64 for a q.To of 0 (to
// the end of the timeline).
func CheckEntryQuery(q history.EntryQuery) (to int64, err error) {
	switch {
	case q.From < 0:
		return 0, fmt.Errorf("%w: entry query: From %d is negative", history.ErrInvalid, q.From)
	case q.To < 0:
		return 0, fmt.Errorf("%w: entry query: To %d is negative", history.ErrInvalid, q.To)
	case q.To == 0:
		return math.MaxInt64, nil
	case q.To < q.From:
		return 0, fmt.Errorf("%w: entry query: To %d is below From %d", history.ErrInvalid, q.To, q.From)
	}
	return q.To, nil
}

// CheckFork validates spec, passed to [history.Catalog.Fork], before
// anything is read: the fork's ID and its source must be given and
// differ, and a configuration, when given, must be JSON. Each error wraps
// [history.ErrInvalid] and names the field.
func CheckFork(spec *history.ForkSpec) error {
	switch {
	case spec.ID == "":
		return fmt.Errorf("%w: fork: ID is empty", history.ErrInvalid)
	case spec.From == "":
		return fmt.Errorf("%w: fork: From is empty", history.ErrInvalid)
	case spec.ID == spec.From:
		return fmt.Errorf("%w: fork: ID %q is From", history.ErrInvalid, spec.ID)
	}
	if spec.Config != nil {
		if err := CheckConfig(spec.Config); err != nil {
			return fmt.Errorf("fork: Config: %w", err)
		}
	}
	return nil
}

// ForkInCompaction is the error of [history.Catalog.Fork] for a fork of
// session from at position at, inside compaction compactID: it wraps
// [history.ErrInvalid] and [history.ErrForkInCompaction].
func ForkInCompaction(from string, at int64, compactID string) error {
	return fmt.Errorf("%w: %w: session %q: position %d lies inside compaction %q (in progress, or archiving messages after it)", history.ErrInvalid, history.ErrForkInCompaction, from, at, compactID)
}
