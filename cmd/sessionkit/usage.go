package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/session"
)

// usageRow is one line of a usage table: what it adds up (a purpose, a
// turn, a compaction) and the totals.
type usageRow struct {
	Name string
	session.UsageTotals
}

// usageView is a session's usage ledger as show, --json and the inspector
// present it: the session's total, by purpose, per turn and per
// compaction (a summary call counts for its compaction, not its turn).
type usageView struct {
	Total       session.UsageTotals
	ByPurpose   []usageRow
	Turns       []usageRow // in the order of their first response
	Compactions []usageRow
}

// readUsage reads session id's ledger and adds it up.
func readUsage(ctx context.Context, st history.Store, id string) (*usageView, error) {
	recs, err := st.Usage(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read usage: %w", err)
	}
	return usageOf(recs), nil
}

// usageOf adds up ledger records (session.TallyUsage) into a usageView.
func usageOf(recs []history.UsageRecord) *usageView {
	rep := session.TallyUsage(recs)
	v := &usageView{Total: rep.Total}
	for _, p := range slices.Sorted(func(yield func(provider.Purpose) bool) {
		for p := range rep.ByPurpose {
			if !yield(p) {
				return
			}
		}
	}) {
		v.ByPurpose = append(v.ByPurpose, usageRow{Name: string(p), UsageTotals: rep.ByPurpose[p]})
	}
	add := func(rows *[]usageRow, name string, r *history.UsageRecord) {
		i := slices.IndexFunc(*rows, func(u usageRow) bool { return u.Name == name })
		if i < 0 {
			*rows = append(*rows, usageRow{Name: name})
			i = len(*rows) - 1
		}
		(*rows)[i].Add(r)
	}
	for i := range recs {
		r := &recs[i]
		switch {
		case r.CompactID != "":
			add(&v.Compactions, r.CompactID, r)
		case r.TurnID != "":
			add(&v.Turns, r.TurnID, r)
		}
	}
	return v
}

// costText is a cost for people: "-" when no response was priced.
func costText(c provider.Cost) string {
	switch {
	case !c.Known():
		return "-"
	case c.Currency == provider.MixedCurrency:
		return "(several currencies)"
	}
	return strconv.FormatFloat(c.Amount, 'f', 6, 64) + " " + c.Currency
}

// printUsage prints v as show does.
func printUsage(w io.Writer, v *usageView) {
	if v.Total.Requests == 0 {
		fmt.Fprintln(w, "  (none recorded)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  \trequests\tinput\tcache read\tcache write\toutput\tcost\t")
	row := func(name string, t session.UsageTotals) {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", name, t.Requests, t.InputTokens, t.CacheReadTokens, t.CacheWriteTokens, t.OutputTokens, costText(t.Cost))
	}
	row("total", v.Total)
	for _, r := range v.ByPurpose {
		row(r.Name, r.UsageTotals)
	}
	for _, r := range v.Turns {
		row("turn "+r.Name, r.UsageTotals)
	}
	for _, r := range v.Compactions {
		row("compaction "+r.Name, r.UsageTotals)
	}
	_ = tw.Flush()
}

// usageJSON is the usage of show --json.
type usageJSON struct {
	Total       totalsJSON            `json:"total"`
	ByPurpose   map[string]totalsJSON `json:"by_purpose"`
	Turns       []namedTotalsJSON     `json:"turns"`
	Compactions []namedTotalsJSON     `json:"compactions"`
}

type totalsJSON struct {
	Requests         int       `json:"requests"`
	InputTokens      int       `json:"input_tokens"`
	OutputTokens     int       `json:"output_tokens"`
	CacheReadTokens  int       `json:"cache_read_tokens"`
	CacheWriteTokens int       `json:"cache_write_tokens"`
	Cost             *costJSON `json:"cost"` // null when nothing was priced
}

type costJSON struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

type namedTotalsJSON struct {
	ID string `json:"id"`
	totalsJSON
}

func toTotals(t session.UsageTotals) totalsJSON {
	out := totalsJSON{Requests: t.Requests, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, CacheReadTokens: t.CacheReadTokens, CacheWriteTokens: t.CacheWriteTokens}
	if t.Cost.Known() {
		out.Cost = &costJSON{Amount: t.Cost.Amount, Currency: t.Cost.Currency}
	}
	return out
}

func toUsage(v *usageView) *usageJSON {
	out := &usageJSON{Total: toTotals(v.Total), ByPurpose: map[string]totalsJSON{}, Turns: []namedTotalsJSON{}, Compactions: []namedTotalsJSON{}}
	for _, r := range v.ByPurpose {
		out.ByPurpose[r.Name] = toTotals(r.UsageTotals)
	}
	for _, r := range v.Turns {
		out.Turns = append(out.Turns, namedTotalsJSON{ID: r.Name, totalsJSON: toTotals(r.UsageTotals)})
	}
	for _, r := range v.Compactions {
		out.Compactions = append(out.Compactions, namedTotalsJSON{ID: r.Name, totalsJSON: toTotals(r.UsageTotals)})
	}
	return out
}
