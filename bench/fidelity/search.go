package main

import (
	"context"

	"github.com/sessionkit/sessionkit/session"
)

// search returns the IDs of the first k messages Session.Search finds for
// query, best first.
func search(ctx context.Context, sess *session.Session, query string, k int) ([]string, error) {
	hits, err := sess.Search(ctx, session.SearchRequest{Query: query, Limit: k})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(hits))
	for _, h := range hits {
		ids = append(ids, h.MessageID)
	}
	return ids, nil
}
