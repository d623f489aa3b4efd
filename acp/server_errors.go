package acp

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

// unknownSession is the ResourceNotFound error for a session ID, with
// data {sessionId} as the official SDK sends it.
func unknownSession(id, hint string) error {
	e := jsonrpc.NewError(jsonrpc.ResourceNotFound, "unknown session %q: %s", id, hint)
	e.Data, _ = json.Marshal(map[string]string{"sessionId": id})
	return e
}

// loadingSession is the error of a request naming a session that a
// session/load or session/resume of this connection is still opening: a
// ResourceNotFound error (the session is not open yet) whose message says
// to wait for that response.
func loadingSession(id string) error {
	e := jsonrpc.NewError(jsonrpc.ResourceNotFound, "session %q is still being opened by an earlier session/load or session/resume on this connection: send requests for it once that request is answered", id)
	e.Data, _ = json.Marshal(map[string]any{"sessionId": id, schema.MetaKey: map[string]any{"loading": true}})
	return e
}

// servedElsewhere is the error for a session that another agent process
// serves from the shared store: an internal error (ACP has no code for it)
// whose data names the session, the holder and when its lease expires
// unless renewed.
func servedElsewhere(le *history.LeaseError) error {
	e := jsonrpc.NewError(jsonrpc.InternalError, "session %q is served by another agent process (%s); try again when it closes the session, or after its lease expires", le.Session, le.Holder)
	e.Data, _ = json.Marshal(map[string]any{
		"sessionId":    le.Session,
		schema.MetaKey: map[string]any{"leasedBy": le.Holder, "leaseExpires": le.Expires.UTC().Format(time.RFC3339Nano)},
	})
	return e
}

// busySession is the error for a session whose store call gave up waiting
// for a lock that another transaction holds (history.ErrBusy: an agent
// process stopped inside a write, a tool's open transaction): an internal
// error (ACP has no code for it) that says to try again, whose data names
// the session and, when the store knows it, the holder of its lease and
// when that lease expires unless renewed.
func busySession(be *history.BusyError) error {
	e := jsonrpc.NewError(jsonrpc.InternalError, "%s", strings.TrimPrefix(be.Error(), "history: "))
	meta := map[string]any{"busy": true}
	if be.Holder != "" {
		meta["leasedBy"], meta["leaseExpires"] = be.Holder, be.Expires.UTC().Format(time.RFC3339Nano)
	}
	e.Data, _ = json.Marshal(map[string]any{"sessionId": be.Session, schema.MetaKey: meta})
	return e
}

// refusedByStore maps a store's refusal of a session (another process
// serves it; a lock it needs is busy) to its JSON-RPC error, naming the
// holder; any other error is returned as it is.
func refusedByStore(err error) error {
	var (
		leased *history.LeaseError
		busy   *history.BusyError
	)
	switch {
	case errors.As(err, &leased):
		return servedElsewhere(leased)
	case errors.As(err, &busy):
		return busySession(busy)
	}
	return err
}

// TooManySessions is the ErrorCode of the error that refuses a session/new,
// session/load or session/resume when the connection has
// ServerOptions.MaxSessions sessions open: an internal error (ACP has no
// code for it, and reserves the server-error range for its own) whose
// message says so and whose data is {"sessionkit": {"maxSessions": N}} (and
// the sessionId asked for, if any). Closing a session with session/close
// frees its slot.
const TooManySessions = jsonrpc.InternalError

// tooManySessions is the error of a session id ("" = new) that would be
// one past the limit of max.
func tooManySessions(id string, max int) error {
	e := jsonrpc.NewError(TooManySessions, "too many sessions on this connection: this agent serves at most %d at once on one connection; close one with session/close first", max)
	data := map[string]any{schema.MetaKey: map[string]any{"maxSessions": max}}
	if id != "" {
		data["sessionId"] = id
	}
	e.Data, _ = json.Marshal(data)
	return e
}

func invalidParams(format string, args ...any) error {
	return jsonrpc.NewError(jsonrpc.InvalidParams, "invalid params: "+format, args...)
}

// sessionError maps an admission error of a session to a JSON-RPC error.
func sessionError(err error) error {
	switch {
	case errors.Is(err, session.ErrInvalid):
		return invalidParams("%v", err)
	case errors.Is(err, session.ErrQueueFull):
		return jsonrpc.NewError(jsonrpc.InternalError, "%v", err)
	}
	return err
}
