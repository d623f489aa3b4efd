package session

import (
	"fmt"
	"testing"

	"github.com/sessionkit/sessionkit/history"
)

// TestInTimelineOrder_Repeats: an entry logged again keeps its first
// event, and an event without a position that followed the repeat goes
// with it; one logged after later entries takes its place by position;
// an event without a position stays after the entry it followed.
func TestInTimelineOrder_Repeats(t *testing.T) {
	msg := func(pos int64) Event {
		return Event{Seq: uint64(pos), Payload: &MessageEvent{Message: history.Message{ID: fmt.Sprint("m", pos)}, Position: pos}}
	}
	title := func(name string) Event {
		return Event{Payload: &SettingsEvent{Changed: []string{name}, Position: NoPosition}}
	}
	name := func(evs []Event) []string {
		var out []string
		for _, ev := range evs {
			switch p := ev.Payload.(type) {
			case *MessageEvent:
				out = append(out, p.Message.ID)
			case *SettingsEvent:
				out = append(out, p.Changed[0])
			}
		}
		return out
	}
	for _, c := range []struct {
		in   []Event
		want string
	}{
		{[]Event{msg(0), title("t0"), msg(1), msg(2)}, "[m0 t0 m1 m2]"},
		{[]Event{msg(0), title("t0"), msg(1), msg(0), title("again"), msg(2), msg(1)}, "[m0 t0 m1 m2]"},
		{[]Event{msg(0), msg(3), msg(1), title("t1"), msg(2), msg(3), msg(1)}, "[m0 m1 t1 m2 m3]"},
		{[]Event{msg(5), msg(6), msg(2), msg(6), msg(5), msg(7)}, "[m2 m5 m6 m7]"},
	} {
		if got := fmt.Sprint(name(inTimelineOrder(c.in))); got != c.want {
			t.Errorf("%v: got %s, want %s", name(c.in), got, c.want)
		}
	}
}
