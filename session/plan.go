package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/plural"
	"github.com/sessionkit/sessionkit/provider"
)

// PlanTool is the name of the built-in tool that Config.Plan adds.
const PlanTool = "plan"

// PlanPriority is how important a plan entry is (ACP's PlanEntryPriority).
type PlanPriority string

// The plan entry priorities.
const (
	PlanHigh   PlanPriority = "high"
	PlanMedium PlanPriority = "medium"
	PlanLow    PlanPriority = "low"
)

// PlanStatus is where a plan entry stands (ACP's PlanEntryStatus).
type PlanStatus string

// The plan entry statuses.
const (
	PlanPending    PlanStatus = "pending"
	PlanInProgress PlanStatus = "in_progress"
	PlanCompleted  PlanStatus = "completed"
)

// PlanEntry is one task of the plan the model keeps with the plan tool
// (Config.Plan; ACP's PlanEntry).
type PlanEntry struct {
	Content  string       `json:"content"`
	Priority PlanPriority `json:"priority"`
	Status   PlanStatus   `json:"status"`
}

// Bounds of a plan: what the tool refuses beyond them.
const (
	maxPlanEntries = 50
	maxPlanContent = 1000 // bytes of one entry's content
)

// planSpec is how the model is told about the plan tool.
var planSpec = provider.ToolSpec{
	Name: PlanTool,
	Description: "Keeps your plan for the task as a checklist the user sees. Call it with the whole list each time " +
		"(it replaces the previous one): when you start a task of several steps, and whenever an entry's status changes. " +
		`Mark one entry "in_progress" while you work on it and "completed" once done; an empty list clears the plan.`,
	Parameters: json.RawMessage(`{"type":"object","required":["entries"],"properties":{"entries":{"type":"array","maxItems":50,"items":{` +
		`"type":"object","required":["content","status"],"properties":{` +
		`"content":{"type":"string","description":"what the step does"},` +
		`"priority":{"type":"string","enum":["high","medium","low"],"description":"default medium"},` +
		`"status":{"type":"string","enum":["pending","in_progress","completed"]}}}}}}`),
}

// ParsePlan decodes the arguments of a plan tool call into the plan they
// set (nil for a cleared plan), as the tool does: an entry's priority
// defaults to medium; a blank content, an unknown priority or status, more
// than 50 entries or a content over 1000 bytes are refused. An ACP agent
// shows a plan call's plan with it. Errors name the entry and the field.
func ParsePlan(args json.RawMessage) ([]PlanEntry, error) {
	var a struct {
		Entries *[]PlanEntry `json:"entries"`
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.DisallowUnknownFields()
	if err := d.Decode(&a); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if a.Entries == nil {
		return nil, errors.New(`arguments: "entries" is required (an empty list clears the plan)`)
	}
	entries := *a.Entries
	if len(entries) > maxPlanEntries {
		return nil, fmt.Errorf("entries: %d entries, at most %d", len(entries), maxPlanEntries)
	}
	if len(entries) == 0 {
		return nil, nil
	}
	out := make([]PlanEntry, len(entries))
	for i, e := range entries {
		e.Content = strings.TrimSpace(e.Content)
		switch {
		case e.Content == "":
			return nil, fmt.Errorf("entries[%d].content is empty", i)
		case len(e.Content) > maxPlanContent || !utf8.ValidString(e.Content):
			return nil, fmt.Errorf("entries[%d].content is longer than %d bytes or not UTF-8", i, maxPlanContent)
		}
		if e.Priority == "" {
			e.Priority = PlanMedium
		}
		if !slices.Contains([]PlanPriority{PlanHigh, PlanMedium, PlanLow}, e.Priority) {
			return nil, fmt.Errorf("entries[%d].priority %q is not high, medium or low", i, e.Priority)
		}
		if !slices.Contains([]PlanStatus{PlanPending, PlanInProgress, PlanCompleted}, e.Status) {
			return nil, fmt.Errorf("entries[%d].status %q is not pending, in_progress or completed", i, e.Status)
		}
		out[i] = e
	}
	return out, nil
}

// planTool is the built-in tool of Config.Plan. It checks the plan and
// answers; the session keeps the plan once the call's result is committed
// (runTools).
func planTool() Tool {
	return Tool{
		Name:        planSpec.Name,
		Description: planSpec.Description,
		Parameters:  planSpec.Parameters,
		Run: func(_ context.Context, raw json.RawMessage) (string, error) {
			entries, err := ParsePlan(raw)
			if err != nil {
				return "", err
			}
			if len(entries) == 0 {
				return "The plan is cleared.", nil
			}
			done := 0
			for _, e := range entries {
				if e.Status == PlanCompleted {
					done++
				}
			}
			return fmt.Sprintf("The plan is updated: %d of %s completed.", done, plural.Count(len(entries), "step")), nil
		},
	}
}

// planText is the plan as the retained summary carries it (see
// requestSummary).
func planText(entries []PlanEntry) string {
	var b strings.Builder
	b.WriteString("Your current plan (kept with the plan tool; call it to change it):")
	for _, e := range entries {
		mark := " "
		switch e.Status {
		case PlanCompleted:
			mark = "x"
		case PlanInProgress:
			mark = "~"
		}
		fmt.Fprintf(&b, "\n- [%s] %s", mark, e.Content)
		if e.Priority != PlanMedium {
			fmt.Fprintf(&b, " (%s priority)", e.Priority)
		}
	}
	return b.String()
}

// planCalls counts the calls of the plan tool in msgs that set a plan.
// The loop keeps the count of Active's (loop.activePlans): while it is
// not 0 the model reads the plan it keeps there.
func planCalls(msgs []history.Message) int {
	n := 0
	for i := range msgs {
		for _, c := range msgs[i].ToolCalls {
			if c.Name != PlanTool {
				continue
			}
			if _, err := ParsePlan(c.Arguments); err == nil {
				n++
			}
		}
	}
	return n
}

// keepPlan stores the plan of a plan tool call whose result the worker
// committed at version v, in settings set (the loop's, copied when the
// tool calls started: nothing else changes them while they run), and
// returns the new version and settings. The plan tool checked the
// arguments, so a call that failed (its result an error) is skipped.
func keepPlan(w writer, v uint64, set settings, tc history.ToolCall, result string) (uint64, settings, *history.Snapshot, error) {
	if history.ToolFailed(result) {
		return v, set, nil, errNoPlan
	}
	entries, err := ParsePlan(tc.Arguments)
	if err != nil {
		return v, set, nil, errNoPlan
	}
	next := set
	next.Plan = entries
	blob, err := marshalSettings(next)
	if err != nil {
		return v, set, nil, err
	}
	nv, snap, err := w.setConfig(v, blob)
	if err != nil {
		return v, set, snap, err
	}
	return nv, next, nil, nil
}

// errNoPlan is keepPlan's answer for a call that set no plan.
var errNoPlan = errors.New("the call set no plan")
