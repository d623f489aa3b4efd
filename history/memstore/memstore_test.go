package memstore_test

import (
	"testing"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/history/memstore"
)

func TestConformance(t *testing.T) {
	historytest.Run(t, historytest.Harness{
		New: func(t *testing.T) history.Store {
			s := memstore.New()
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	})
}
