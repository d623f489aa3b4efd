package logref

import (
	"testing"
)

// TestRoundTrip: a reference reads back as written, IDs of any bytes
// (spaces, digits, NUL, none) included; the JSON of older logs reads as
// the same reference.
func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		pos        int64
		id, turnID string
	}{
		{0, "m0", ""}, {12345, "msg 7 with spaces", "turn-1"}, {-1, "", "t"}, {1 << 40, "12 34", "5 6"}, {7, "a\x00b", "\x00"},
	} {
		got, err := Parse(Append(nil, c.pos, c.id, c.turnID))
		if err != nil || got.Position != c.pos || string(got.ID) != c.id || string(got.TurnID) != c.turnID {
			t.Errorf("%+v: got %+v, %v", c, got, err)
		}
	}
	got, err := Parse([]byte(`{"position":42,"id":"m 1","turn_id":"t1"}`))
	if err != nil || got.Position != 42 || string(got.ID) != "m 1" || string(got.TurnID) != "t1" {
		t.Errorf("JSON: got %+v, %v", got, err)
	}
}

// TestMalformed: data in neither form is an error, never a reference.
func TestMalformed(t *testing.T) {
	for _, data := range []string{"", " ", "1", "1 ", "1 5 abc", "x 1 a", "1 x a", "1 -1 a", `{"id":"m"}`, `{"position":`, "123456789012345678901 1 a"} {
		if got, err := Parse([]byte(data)); err == nil {
			t.Errorf("%q: parsed as %+v", data, got)
		}
	}
}
