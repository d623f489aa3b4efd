package history

// SearchQuery is one search of a session's messages (see [Reader.Search]).
type SearchQuery struct {
	// Text is what the caller wants to find, typically a question a model
	// wrote ("why did we change the rounding in ledger.go"). It is never
	// parsed as a boolean or FTS expression: any text is a valid query, and
	// a query with no searchable word returns no hits.
	Text string
	// Limit is the most hits on a page; 0 = DefaultSearchLimit; at most
	// MaxSearchLimit.
	Limit int
	// Cursor is SearchPage.Next of the previous page; "" = the first page.
	Cursor string
	// Neighbors is how many messages before and after each hit to return
	// with it ([SearchHit.Neighbors]): 0 (none) to MaxNeighbors.
	Neighbors int
}

// SearchHit is one message a search found.
type SearchHit struct {
	MessageID string
	// SegmentID is the Segment that archived the message, "" for a message
	// still in Active. A message of an undone Segment is Active again, and
	// its hit has SegmentID "".
	SegmentID string
	// Compaction is the number of the compaction whose Segment archived
	// the message: 1 for the session's first Segment, in the order of
	// [Reader.Segments] (undone Segments keep their numbers). It is 0 for
	// a message in Active, exactly when SegmentID is "".
	Compaction int
	// Position is the message's timeline position.
	Position int64
	Role     Role
	// ToolName is the tool a tool message answers (the name of the call in
	// the assistant message before it), "" for other roles.
	ToolName string
	// Snippet is an excerpt of the message around the words that matched,
	// each marked as «word».
	Snippet string
	// Score orders hits: higher is better. Hits are ranked first by the
	// evidence of the query's words the message holds: the idf (how rare
	// each word is among the session's messages) of the distinct content
	// words it holds (after stemming and irregular forms), as a share of
	// the idf of all of them, so one rare word outweighs several common
	// ones; then, within 0.001, by how close together the words stand and
	// by bm25. The three stores of sessionkit rank with the same code, so
	// they agree. Scores compare within one search only.
	Score float64
	// Neighbors are, with [SearchQuery.Neighbors] n > 0, the messages
	// around the hit, in timeline order, the hit itself not among them: up
	// to n before it and n after it (fewer at the ends of the history).
	// The windows of a page's hits are merged where they overlap: a
	// message is returned once on a page, with the best hit whose window
	// holds it; a lower hit in that window is returned as its neighbour,
	// not as a hit (the page takes the next hit instead). So a question's
	// hit carries the answer that follows it.
	Neighbors []Message
	// NeighborsBefore is how many of Neighbors come before the hit; the
	// rest come after it.
	NeighborsBefore int
}

// SearchPage is one page of hits, best first.
type SearchPage struct {
	Hits []SearchHit
	Next string // the Cursor of the next page; "" = last page
}

// Limits of [SearchQuery.Limit] and [SearchQuery.Neighbors].
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 100
	MaxNeighbors       = 5
)

// Fidelity is how much of a compacted prefix's facts its summary kept (see
// the compact package's Facts). It is computed for every committed Segment.
type Fidelity struct {
	// Facts is how many distinct facts the archived prefix held; Kept how
	// many of them occur in the summary.
	Facts, Kept int
	// Missing lists facts the summary lost, at most MaxFidelityMissing.
	Missing []string
}

// MaxFidelityMissing bounds [Fidelity.Missing].
const MaxFidelityMissing = 20
