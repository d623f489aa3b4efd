package schema

import "encoding/json"

// Session update kinds of plans identified by ID (ACP v1 since 2026-11-20,
// advertised by clientCapabilities.plan; ACP v2's plan_update).
const (
	UpdatePlanUpdate  = "plan_update"
	UpdatePlanRemoved = "plan_removed"
)

// The types of a [PlanContent].
const (
	PlanTypeItems    = "items"
	PlanTypeMarkdown = "markdown"
	PlanTypeFile     = "file"
)

// PlanUpdate is the plan_update session update: the content of the plan
// PlanID, replacing what the client had of it. A v1 agent sends it to a
// client that advertised clientCapabilities.plan (an object) and the
// legacy [Plan] update to one that did not; v2 has plan_update only.
type PlanUpdate struct {
	Plan PlanContent    `json:"plan" acp:"required"`
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// PlanContent is the PlanUpdateContent union, discriminated by Type: a
// plan of Entries ("items"; Entries is required there and sent as [] when
// empty), of Markdown Content ("markdown"), or in the file at URI
// ("file").
type PlanContent struct {
	Type    string         `json:"type" acp:"required"`
	PlanID  string         `json:"planId" acp:"required"`
	Entries []PlanEntry    `json:"entries,omitzero" acp:"lenient,skipinvalid"`
	Content string         `json:"content,omitzero"`
	URI     string         `json:"uri,omitzero"`
	Meta    map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// MarshalJSON encodes c with the members of its Type: the entries of
// items (an empty list as []), the content of markdown, the URI of file.
func (c PlanContent) MarshalJSON() ([]byte, error) {
	type plain PlanContent
	p := plain(c)
	switch c.Type {
	case PlanTypeItems:
		if p.Entries == nil {
			p.Entries = []PlanEntry{}
		}
		p.Content, p.URI = "", ""
	case PlanTypeMarkdown:
		p.Entries, p.URI = nil, ""
	case PlanTypeFile:
		p.Entries, p.Content = nil, ""
	}
	return json.Marshal(p)
}

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *PlanContent) UnmarshalJSON(data []byte) error {
	type plain PlanContent
	return DecodeObject(data, (*plain)(c))
}

// PlanRemoved is the plan_removed session update (ACP v1): the plan
// PlanID is gone.
type PlanRemoved struct {
	PlanID string         `json:"planId" acp:"required"`
	Meta   map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// PlanCapabilities is the (empty) plan capability object of a v1 client
// (clientCapabilities.plan).
type PlanCapabilities struct {
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

var (
	_ SessionUpdate = (*PlanUpdate)(nil)
	_ SessionUpdate = (*PlanRemoved)(nil)
)

// SessionUpdateKind returns "plan_update".
func (*PlanUpdate) SessionUpdateKind() string { return UpdatePlanUpdate }

// SessionUpdateKind returns "plan_removed".
func (*PlanRemoved) SessionUpdateKind() string { return UpdatePlanRemoved }

func (*PlanUpdate) isSessionUpdate()  {}
func (*PlanRemoved) isSessionUpdate() {}

// MarshalJSON encodes u with "sessionUpdate":"plan_update".
func (u PlanUpdate) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *PlanUpdate) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"plan_removed".
func (u PlanRemoved) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *PlanRemoved) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }
