package main

import (
	"context"
	"errors"

	"github.com/sessionkit/sessionkit/session"
)

// search returns the IDs of the first k messages Session.Search finds for
// query, best first; ok is false when the session's store cannot search.
func search(ctx context.Context, sess *session.Session, query string, k int) (ids []string, ok bool, err error) {
	hits, err := sess.Search(ctx, session.SearchRequest{Query: query, Limit: k})
	if errors.Is(err, session.ErrCannotSearch) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	for _, h := range hits {
		ids = append(ids, h.MessageID)
	}
	return ids, true, nil
}
