package sqlstore

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/history"
)

// Times are stored as integer unix nanoseconds, NULL for the zero time, and
// read back in UTC. Nanoseconds since 1970 fit an int64 from 1677-09-21 to
// 2262-04-11; other instants are rejected with history.ErrInvalid.
var (
	minTime = time.Unix(0, -1<<63)
	maxTime = time.Unix(0, 1<<63-1)
)

// UnixNano is the column value of t: its unix nanoseconds, and whether it
// is a time at all (false, NULL, for the zero time).
func UnixNano(t time.Time) (n int64, valid bool, err error) {
	if t.IsZero() {
		return 0, false, nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return 0, false, fmt.Errorf("%w: time %v is outside the years 1678 to 2261", history.ErrInvalid, t)
	}
	return t.UnixNano(), true, nil
}

// FromUnixNano is the inverse of UnixNano.
func FromUnixNano(n int64, valid bool) time.Time {
	if !valid {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Arguments splits a tool call's arguments between the two fields they are
// stored in, so that their bytes survive exactly: a JSON string (not
// embedded JSON, which encoding/json would compact) when they are UTF-8,
// their bytes (base64 in JSON) otherwise; neither for nil arguments.
func Arguments(args json.RawMessage) (text *string, raw []byte) {
	switch {
	case args == nil:
		return nil, nil
	case utf8.Valid(args):
		s := string(args)
		return &s, nil
	}
	return nil, args
}

// FromArguments is the inverse of Arguments.
func FromArguments(text *string, raw []byte) json.RawMessage {
	switch {
	case text != nil:
		return json.RawMessage(*text)
	case raw != nil:
		return json.RawMessage(raw)
	}
	return nil
}

// SeqAfter is the argument of an Events query for the sequence numbers
// after after: the schemas keep them in signed 64-bit columns, and no stored
// number is above math.MaxInt64.
func SeqAfter(after uint64) int64 {
	return int64(min(after, math.MaxInt64))
}

// NotNull is data as a value for a NOT NULL binary column (an event's
// data): nil becomes empty.
func NotNull(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}
