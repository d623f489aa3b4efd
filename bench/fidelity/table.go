package main

import (
	"fmt"
	"io"
	"strings"
)

// row is one measure of the table: its name and how a depth's figures show.
type row struct {
	name string
	cell func(s *Stats) string
}

func ratio(n, of int) string {
	if of == 0 {
		return "–"
	}
	return fmt.Sprintf("%d / %d (%.3f)", n, of, float64(n)/float64(of))
}

func mean(sum, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(sum)/float64(n))
}

var rows = []row{
	{"messages archived (mean per session)", func(s *Stats) string { return mean(s.Archived, s.Sessions-s.Failed) }},
	{"facts kept in the retained summary / facts archived", func(s *Stats) string { return ratio(s.Kept, s.FactsArchived) }},
	{"recall@5, archived facts", func(s *Stats) string {
		if !s.Searched {
			return "no search"
		}
		return ratio(s.RecallArchived, s.FactsArchived)
	}},
	{"recall@5, all facts", func(s *Stats) string {
		if !s.Searched {
			return "no search"
		}
		return ratio(s.Recall, s.Facts)
	}},
	{"recall@1, all facts", func(s *Stats) string {
		if !s.Searched {
			return "no search"
		}
		return ratio(s.Top, s.Facts)
	}},
	{"recall@10, all facts", func(s *Stats) string {
		if !s.Searched {
			return "no search"
		}
		return ratio(s.Ten, s.Facts)
	}},
	{"context tokens after (mean)", func(s *Stats) string { return mean(s.ContextAfter, s.Sessions-s.Failed) }},
	{"Segment fidelity, mean Kept/Facts", func(s *Stats) string {
		if s.FidelityN == 0 {
			return "–"
		}
		return fmt.Sprintf("%.3f", s.Fidelity/float64(s.FidelityN))
	}},
	{"compactions that failed", func(s *Stats) string { return fmt.Sprint(s.Failed) }},
}

// WriteTable writes the Markdown table of cols: a row per depth and
// measure, a column per provider; then the facts kept per kind at each
// depth.
func WriteTable(w io.Writer, cols []Column) {
	head := "| depth | measure |"
	sep := "|---:|---|"
	for _, c := range cols {
		head += " " + c.Provider + " |"
		sep += "---:|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, sep)
	for d := range Depths {
		for _, r := range rows {
			line := fmt.Sprintf("| %d | %s |", d+1, r.name)
			for i := range cols {
				line += " " + r.cell(&cols[i].Depth[d]) + " |"
			}
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintln(w)
	head = "| depth | kept / archived, by kind |"
	for _, c := range cols {
		head += " " + c.Provider + " |"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, sep)
	for d := range Depths {
		for _, k := range Kinds {
			line := fmt.Sprintf("| %d | %s |", d+1, k)
			for i := range cols {
				s := &cols[i].Depth[d]
				line += " " + ratio(s.KeptByKind[k], s.ArchivedByKind[k]) + " |"
			}
			fmt.Fprintln(w, line)
		}
	}
}

// providerNames lists the columns for a heading.
func providerNames(cols []Column) string {
	var ns []string
	for _, c := range cols {
		ns = append(ns, c.Provider)
	}
	return strings.Join(ns, ", ")
}
