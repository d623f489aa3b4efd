// Package plural writes a count with its noun, in the singular for one:
// "1 message", "2 messages", "0 Segments".
//
//	fmt.Println(plural.Count(1, "message")) // 1 message
package plural

import "strconv"

// Count is n followed by noun, with an "s" added unless n is 1 (the nouns
// sessionkit counts all take an "s": message, Segment, session, file).
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
