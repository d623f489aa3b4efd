package compact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// containsFold finds what containsAny finds in the lower-cased text, for
// ASCII texts in any case and for texts that are not ASCII (the Kelvin
// sign lower-cases to k, the dotted capital I to two runes).
func TestContainsFoldIsContainsAnyOfToLower(t *testing.T) {
	texts := []string{
		"", "e", "ERROR: disk", "Error:x", "a fail", "FAILED", "no marker here",
		"TRACEBAC\u212A (most recent call last)", "İnvalid", "x: CANNOT y", "x: cannot", "ex: undefined: foo",
		"Always", "DON'T", "do  not", "do not", "mUsT", "musT\x00", "\xff\xfe error:", "naïve never",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"e", "E", "r", "R", "o", ":", " ", "a", "l", "w", "y", "s", "n", "v", "d", "t", "'", "f", "i", "m", "u", "c", "x", "p", "k", "b", "\u212a", "é", "\n"}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(24) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, m := range []*markerSet{errMarkers, ruleMarkers} {
		for _, s := range texts {
			if got, want := m.containsFold(s), containsAny(strings.ToLower(s), m.words); got != want {
				t.Fatalf("containsFold(%q) = %v, containsAny of its lower case %v (markers %q)", s, got, want, m.words)
			}
		}
	}
}
