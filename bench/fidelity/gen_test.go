package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

var defaultGen = GenConfig{Seed: 1, Sessions: 30, Messages: 200, FactsPerKind: 2}

// TestGenerateDeterministic: a seed always gives the same scripts, another
// seed other ones.
func TestGenerateDeterministic(t *testing.T) {
	a, b := Generate(defaultGen), Generate(defaultGen)
	require.Equal(t, a, b)
	other := defaultGen
	other.Seed = 2
	c := Generate(other)
	require.Len(t, c, len(a))
	differ := 0
	for i := range a {
		if !assert.ObjectsAreEqual(a[i].Msgs, c[i].Msgs) {
			differ++
		}
	}
	assert.Equal(t, len(a), differ, "every script of seed 2 differs from seed 1's")
}

// TestGenerateCounts: at least 30 sessions of at least 200 messages, each
// a well-formed conversation of user prompts, assistant messages with tool
// calls and the tools' results.
func TestGenerateCounts(t *testing.T) {
	scripts := Generate(defaultGen)
	require.Len(t, scripts, 30)
	ids := map[string]bool{}
	tools := map[string]bool{}
	for _, tl := range newPlayer(&Script{}).tools() {
		tools[tl.Name] = true
	}
	for _, s := range scripts {
		assert.False(t, ids[s.ID], "session IDs are unique")
		ids[s.ID] = true
		require.GreaterOrEqual(t, len(s.Msgs), 200, s.ID)
		roles := map[history.Role]int{}
		var open []string // calls of the last assistant message not answered yet
		for i, m := range s.Msgs {
			roles[m.Role]++
			if len(m.Calls) == 0 {
				assert.NotEmpty(t, m.Text, "%s message %d", s.ID, i)
			}
			switch m.Role {
			case history.RoleUser:
				assert.Empty(t, open, "%s message %d: a turn ends with every call answered", s.ID, i)
				assert.True(t, slices.Contains(s.Turns, i), "%s message %d: every user message starts a turn", s.ID, i)
			case history.RoleAssistant:
				assert.Empty(t, open, "%s message %d", s.ID, i)
				for _, c := range m.Calls {
					assert.True(t, tools[c.Name], "%s calls unknown tool %s", s.ID, c.Name)
					open = append(open, c.ID)
				}
			case history.RoleTool:
				require.NotEmpty(t, open, "%s message %d answers no call", s.ID, i)
				assert.Equal(t, open[0], m.CallID, "%s message %d", s.ID, i)
				open = open[1:]
			}
		}
		assert.Equal(t, 0, s.Turns[0])
		assert.GreaterOrEqual(t, roles[history.RoleTool], len(s.Msgs)/5, "%s: tool results are a good part of it", s.ID)
		assert.Greater(t, roles[history.RoleAssistant], roles[history.RoleUser], s.ID)
		assert.Equal(t, history.RoleAssistant, s.Msgs[len(s.Msgs)-1].Role)
	}
}

// TestEveryKindPlanted: every script holds FactsPerKind facts of each of
// the six kinds, spread over the session, each held by the message its Msg
// names, whose text keeps all of its keys.
func TestEveryKindPlanted(t *testing.T) {
	require.GreaterOrEqual(t, len(Kinds), 6)
	for _, s := range Generate(defaultGen) {
		count := map[Kind]int{}
		for _, f := range s.Facts {
			count[f.Kind]++
			m := s.Msgs[f.Msg]
			assert.Equal(t, f.Text, m.Text, "%s: the holder's text is the fact", s.ID)
			assert.True(t, Kept(m.Text, f.Keys), "%s: the fact %q holds its keys %q", s.ID, f.Text, f.Keys)
			want := history.RoleAssistant
			if f.Kind == KindPreference {
				want = history.RoleUser
			}
			assert.Equal(t, want, m.Role, "%s: %s", s.ID, f.Kind)
			assert.NotEmpty(t, f.Keys)
			for _, k := range f.Keys {
				assert.NotContains(t, k, "{", "placeholders are filled")
			}
		}
		for _, k := range Kinds {
			assert.Equal(t, defaultGen.FactsPerKind, count[k], "%s: facts of kind %s", s.ID, k)
		}
		// Spread: some facts in the first quarter, some in the last.
		first, last := s.Facts[0].Msg, s.Facts[len(s.Facts)-1].Msg
		assert.Less(t, first, len(s.Msgs)/4, s.ID)
		assert.Greater(t, last, len(s.Msgs)/2, s.ID)
	}
}

// shingles returns the runs of n consecutive words of s.
func shingles(s string, n int) map[string]bool {
	w := words(s)
	out := map[string]bool{}
	for i := 0; i+n <= len(w); i++ {
		out[strings.Join(w[i:i+n], " ")] = true
	}
	return out
}

// otherForm reports whether a word of the query is another form of a word
// of the fact, not the same word: the same first four letters ("rename"
// for "renamed", "retries" for "retry"), or three for words of five letters
// or more ("moved" for "moving").
func otherForm(query, fact string) bool {
	fw := words(fact)
	for _, q := range words(query) {
		if len(q) < 4 || slices.Contains(fw, q) {
			continue
		}
		for _, f := range fw {
			n := 4
			if len(f) >= 5 && len(q) >= 5 {
				n = 3
			}
			if len(f) >= n && f[:n] == q[:n] {
				return true
			}
		}
	}
	return false
}

// TestQueriesDoNotRepeatFacts: each query is a question that shares no run
// of four words with its fact, words at least one of them in another form,
// and shares content words with other messages of the session too (search
// has to discriminate).
func TestQueriesDoNotRepeatFacts(t *testing.T) {
	for _, s := range Generate(defaultGen) {
		for _, f := range s.Facts {
			q := f.Query
			assert.True(t, strings.HasSuffix(q, "?"), "%q is a question", q)
			assert.NotContains(t, strings.ToLower(q), strings.ToLower(f.Text))
			fs := shingles(f.Text, 4)
			for sh := range shingles(q, 4) {
				assert.False(t, fs[sh], "query %q repeats %q of its fact", q, sh)
			}
			assert.True(t, otherForm(q, f.Text), "query %q words something of %q in another form", q, f.Text)
			if f.Kind == KindRename {
				for _, k := range f.Keys {
					assert.NotContains(t, strings.ToLower(q), strings.ToLower(k), "a rename's query names neither name")
				}
			}
			content := contentWords(q)
			others := 0
			for i, m := range s.Msgs {
				if i == f.Msg {
					continue
				}
				mw := words(m.Text)
				if slices.ContainsFunc(content, func(w string) bool { return slices.Contains(mw, w) }) {
					others++
				}
			}
			assert.GreaterOrEqual(t, others, 3, "%s: query %q shares words with other messages", s.ID, q)
		}
	}
}

// TestKept: keys are found without regard to case; a number is not found
// inside a longer number.
func TestKept(t *testing.T) {
	assert.True(t, Kept("Set MAX_OPEN_CONNS to 25.", []string{"max_open_conns", "25"}))
	assert.False(t, Kept("Set max_open_conns to 250.", []string{"max_open_conns", "25"}))
	assert.False(t, Kept("Set max_open_conns to 125.", []string{"25"}))
	assert.True(t, Kept("was 250, now 25", []string{"25"}))
	assert.True(t, Kept("the 10 s timeout", []string{"10 s"}))
	assert.False(t, Kept("renamed parseLedger", []string{"parseLedger", "parseEntries"}))
	assert.True(t, Kept("new dependencies", []string{"dependenc"}))
}

// TestConvQuestionsAreParaphrases: every planted answer shares at most one
// content word with its question, in every filling the generator makes.
func TestConvQuestionsAreParaphrases(t *testing.T) {
	convs := GenerateConv(3, 20, 200, len(convFacts))
	n := 0
	for _, c := range convs {
		for _, q := range c.Questions {
			n++
			ans := c.Msgs[q.Answer].Text
			var shared []string
			for _, w := range ContentWords(q.Question) {
				if slices.Contains(ContentWords(ans), w) {
					shared = append(shared, w)
				}
			}
			if len(shared) > 1 {
				t.Errorf("%q and its answer %q share %v", q.Question, ans, shared)
			}
		}
	}
	if n < 20*len(convFacts)*9/10 {
		t.Fatalf("only %d questions", n)
	}
}
