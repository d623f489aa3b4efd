package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/session"
)

// Depths is how many times each session is compacted.
const Depths = 3

// RecallK is the k of recall@k.
const RecallK = 5

// Kept reports whether summary keeps a fact: every one of keys occurs in
// it, compared without regard to case; a key that starts or ends with a
// digit must not touch another digit there ("25" is not kept by "250").
func Kept(summary string, keys []string) bool {
	s := strings.ToLower(summary)
	for _, k := range keys {
		if !occurs(s, strings.ToLower(k)) {
			return false
		}
	}
	return true
}

func occurs(s, k string) bool {
	digit := func(b byte) bool { return b >= '0' && b <= '9' }
	for from := 0; ; {
		i := strings.Index(s[from:], k)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(k)
		before := i > 0 && digit(k[0]) && digit(s[i-1])
		after := end < len(s) && digit(k[len(k)-1]) && digit(s[end])
		if !before && !after {
			return true
		}
		from = i + 1
	}
}

// Options configure a run.
type Options struct {
	Gen   GenConfig
	Store string // "sqlite" (a file in Dir) or "memstore"
	Dir   string // where SQLite files go
	// Recall sets Config.Recall of the sessions: the summary request then
	// tells the summarizer that the archive is searchable.
	Recall bool
	// Progress, when set, receives one line per session played.
	Progress func(string)
}

// Stats are the figures of one depth, summed over the sessions.
type Stats struct {
	Sessions int // sessions compacted this many times
	Failed   int // compactions that did not compact
	// Archived is the messages the session's Segments hold.
	Archived int
	// Facts is every planted fact; FactsArchived those whose message is in
	// a Segment; Kept those of them the retained summary keeps ([Kept]).
	Facts, FactsArchived, Kept int
	KeptByKind, ArchivedByKind map[Kind]int
	// Recall and RecallArchived count the facts whose message is among the
	// first RecallK hits of Session.Search for the fact's query: all of
	// them, and the archived ones.
	Recall, RecallArchived int
	// Top counts the facts whose message is the first hit; Ten those
	// whose message is among the first 10.
	Top, Ten int
	// Searched reports whether the store searched at all.
	Searched bool
	// ContextAfter sums CompactResult.ContextAfter.
	ContextAfter int
	// Fidelity sums the Segments' Kept/Facts, over FidelityN Segments with
	// Facts > 0.
	Fidelity  float64
	FidelityN int
}

// Column is one provider's figures.
type Column struct {
	Provider string
	Depth    [Depths]Stats
}

// Run plays every script through a session whose summaries sum makes,
// compacts each Depths times and measures each depth.
func Run(ctx context.Context, o Options, name string, sum provider.Provider) (Column, error) {
	col := Column{Provider: name}
	for d := range col.Depth {
		col.Depth[d].KeptByKind = map[Kind]int{}
		col.Depth[d].ArchivedByKind = map[Kind]int{}
	}
	var store history.Store
	switch o.Store {
	case "memstore":
		store = memstore.New()
	case "sqlite", "":
		st, err := sqlite.Open(filepath.Join(o.Dir, strings.NewReplacer(":", "_", "/", "_").Replace(name)+".db"))
		if err != nil {
			return col, err
		}
		defer st.Close()
		store = st
	default:
		return col, fmt.Errorf("fidelity: unknown store %q (sqlite or memstore)", o.Store)
	}
	for i, s := range Generate(o.Gen) {
		if err := runOne(ctx, &col, store, &s, sum, o.Recall); err != nil {
			return col, fmt.Errorf("%s, session %s: %w", name, s.ID, err)
		}
		if o.Progress != nil {
			o.Progress(fmt.Sprintf("%s: session %d of %d played and compacted", name, i+1, o.Gen.Sessions))
		}
	}
	return col, nil
}

func runOne(ctx context.Context, col *Column, store history.Store, s *Script, sum provider.Provider, recall bool) error {
	p := newPlayer(s)
	sess, err := session.New(ctx, session.Config{
		ID:              s.ID,
		Provider:        p,
		SummaryProvider: sum,
		Store:           store,
		SystemPrompt:    "You are a coding agent working in /project.",
		Tools:           p.tools(),
		Cwd:             "/project",
		Recall:          recall,
	})
	if err != nil {
		return err
	}
	defer sess.Close()
	ids, err := play(ctx, sess, s)
	if err != nil {
		return err
	}
	archived := map[string]bool{}
	for d := range Depths {
		st := &col.Depth[d]
		h, err := sess.Compact(ctx, session.CompactRequest{})
		if err != nil {
			return err
		}
		res, err := h.Wait(ctx)
		if err != nil {
			return err
		}
		st.Sessions++
		if !res.Compacted {
			st.Failed++
			continue
		}
		for _, m := range res.Segment.Messages {
			archived[m.ID] = true
		}
		st.Archived += len(archived)
		st.ContextAfter += res.ContextAfter
		if f := res.Fidelity; f.Facts > 0 {
			st.Fidelity += float64(f.Kept) / float64(f.Facts)
			st.FidelityN++
		}
		summary := res.Segment.Summary
		for _, f := range s.Facts {
			st.Facts++
			id := ids[f.Msg]
			if archived[id] {
				st.FactsArchived++
				st.ArchivedByKind[f.Kind]++
				if Kept(summary, f.Keys) {
					st.Kept++
					st.KeptByKind[f.Kind]++
				}
			}
			hits, err := search(ctx, sess, f.Query, 10)
			if err != nil {
				return fmt.Errorf("search %q: %w", f.Query, err)
			}
			st.Searched = true
			if len(hits) > 0 && hits[0] == id {
				st.Top++
			}
			if slices.Contains(hits, id) {
				st.Ten++
			}
			if slices.Contains(hits[:min(RecallK, len(hits))], id) {
				st.Recall++
				if archived[id] {
					st.RecallArchived++
				}
			}
		}
	}
	return nil
}

// words splits s into lower-case words of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// stop are words a query shares with anything.
var stop = map[string]bool{"the": true, "a": true, "an": true, "of": true, "in": true, "to": true, "we": true, "did": true, "do": true, "does": true, "what": true, "why": true, "how": true, "is": true, "was": true, "for": true, "it": true, "i": true, "and": true, "be": true, "on": true, "at": true, "by": true, "from": true, "our": true, "that": true, "which": true, "with": true, "are": true, "its": true, "so": true, "before": true, "now": true, "my": true, "should": true, "may": true, "get": true}

// contentWords returns the words of s that are not in stop.
func contentWords(s string) []string {
	var out []string
	for _, w := range words(s) {
		if !stop[w] {
			out = append(out, w)
		}
	}
	return out
}
