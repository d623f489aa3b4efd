package main

import (
	"context"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/session"
)

// search returns the IDs of the first k messages a search of the session
// finds for query, best first; ok is false when the session's store
// cannot search.
func search(ctx context.Context, sess *session.Session, query string, k int) (ids []string, ok bool, err error) {
	sr, ok := sess.Store().(history.Searcher)
	if !ok {
		return nil, false, nil
	}
	page, err := sr.Search(ctx, sess.ID(), history.SearchQuery{Text: query, Limit: k})
	if err != nil {
		return nil, true, err
	}
	for _, h := range page.Hits {
		ids = append(ids, h.MessageID)
	}
	return ids, true, nil
}
