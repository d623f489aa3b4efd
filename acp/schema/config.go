package schema

// Wire types of session modes (v1) and session config options (v1 and
// v2), following the official schemas (npm @agentclientprotocol/sdk 2.4.0)
// field by field. The two versions' config options differ in one key: v1
// names an option "id", v2 "configId"; a v2 set request carries
// "type":"id" where v1 leaves the type out.

import (
	"encoding/json"
)

// Methods of modes and config options.
const (
	MethodSetMode         = "session/set_mode"          // v1
	MethodSetConfigOption = "session/set_config_option" // v1 and v2
)

// UpdateConfigOption is the "sessionUpdate" of [ConfigOptionUpdate] and
// [ConfigOptionUpdateV2].
const UpdateConfigOption = "config_option_update"

// Config option categories of the schema (the set is open: a "_" prefix is
// free for custom use).
const (
	CategoryMode         = "mode"
	CategoryModel        = "model"
	CategoryModelConfig  = "model_config"
	CategoryThoughtLevel = "thought_level"
)

// SessionConfigOption is one config option of a session, a dropdown
// ("type":"select", the only kind sessionkit sends): its current value and
// the values it may take. It encodes with v1's "id";
// [SessionConfigOptionV2] is the same with v2's "configId".
type SessionConfigOption struct {
	ID           string                      `json:"id" acp:"required"`
	Name         string                      `json:"name" acp:"required"`
	Description  string                      `json:"description,omitzero" acp:"lenient"` // string|null: "" = absent
	Category     string                      `json:"category,omitzero" acp:"lenient"`    // string|null: "" = absent
	CurrentValue string                      `json:"currentValue" acp:"required"`
	Options      []SessionConfigSelectOption `json:"options" acp:"required,skipinvalid"`
	Meta         map[string]any              `json:"_meta,omitzero" acp:"lenient"`
}

// SessionConfigOptionV2 is [SessionConfigOption] on a v2 connection.
type SessionConfigOptionV2 struct {
	ID           string                      `json:"configId" acp:"required"`
	Name         string                      `json:"name" acp:"required"`
	Description  string                      `json:"description,omitzero" acp:"lenient"`
	Category     string                      `json:"category,omitzero" acp:"lenient"`
	CurrentValue string                      `json:"currentValue" acp:"required"`
	Options      []SessionConfigSelectOption `json:"options" acp:"required,skipinvalid"`
	Meta         map[string]any              `json:"_meta,omitzero" acp:"lenient"`
}

// SessionConfigSelectOption is one value a select option may take.
type SessionConfigSelectOption struct {
	Value       string         `json:"value" acp:"required"`
	Name        string         `json:"name" acp:"required"`
	Description string         `json:"description,omitzero" acp:"lenient"`
	Meta        map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// selectType is the discriminator of a select config option.
const selectType = "select"

// MarshalJSON encodes o with "type":"select".
func (o SessionConfigOption) MarshalJSON() ([]byte, error) {
	return marshalVariant("type", selectType, o)
}

// UnmarshalJSON decodes a select option; any other type (boolean, a
// future kind) is an error wrapping [ErrMalformed], which a list of
// options skips.
func (o *SessionConfigOption) UnmarshalJSON(data []byte) error {
	return decodeSelect(data, o)
}

// MarshalJSON encodes o with "type":"select".
func (o SessionConfigOptionV2) MarshalJSON() ([]byte, error) {
	return marshalVariant("type", selectType, o)
}

// UnmarshalJSON decodes o as [SessionConfigOption.UnmarshalJSON] does.
func (o *SessionConfigOptionV2) UnmarshalJSON(data []byte) error {
	return decodeSelect(data, o)
}

func decodeSelect(data []byte, v any) error {
	typ, err := Discriminator(data, "type", "SessionConfigOption")
	if err != nil {
		return err
	}
	if typ != selectType {
		return malformed("config option of type %q is not supported", typ)
	}
	return DecodeObject(data, v)
}

// MarshalJSON encodes o.
func (o SessionConfigSelectOption) MarshalJSON() ([]byte, error) { return marshalObject(o) }

// UnmarshalJSON decodes o; errors wrap [ErrMalformed].
func (o *SessionConfigSelectOption) UnmarshalJSON(data []byte) error { return DecodeObject(data, o) }

// ConfigOptionUpdate is the v1 config_option_update update: every config
// option of the session with its current value.
type ConfigOptionUpdate struct {
	ConfigOptions []SessionConfigOption `json:"configOptions" acp:"required,lenient,skipinvalid"`
	Meta          map[string]any        `json:"_meta,omitzero" acp:"lenient"`
}

// ConfigOptionUpdateV2 is the v2 config_option_update update.
type ConfigOptionUpdateV2 struct {
	ConfigOptions []SessionConfigOptionV2 `json:"configOptions" acp:"required,skipinvalid"`
	Meta          map[string]any          `json:"_meta,omitzero" acp:"lenient"`
}

// SessionUpdateKind returns "config_option_update".
func (*ConfigOptionUpdate) SessionUpdateKind() string { return UpdateConfigOption }

// SessionUpdateKind returns "config_option_update".
func (*ConfigOptionUpdateV2) SessionUpdateKind() string { return UpdateConfigOption }

func (*ConfigOptionUpdate) isSessionUpdate()   {}
func (*ConfigOptionUpdateV2) isSessionUpdate() {}

var (
	_ SessionUpdate = (*ConfigOptionUpdate)(nil)
	_ SessionUpdate = (*ConfigOptionUpdateV2)(nil)
)

// MarshalJSON encodes u with "sessionUpdate":"config_option_update".
func (u ConfigOptionUpdate) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *ConfigOptionUpdate) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"config_option_update".
func (u ConfigOptionUpdateV2) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *ConfigOptionUpdateV2) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// SetSessionModeRequest is the params of the v1 session/set_mode.
type SetSessionModeRequest struct {
	SessionID string         `json:"sessionId" acp:"required"`
	ModeID    string         `json:"modeId" acp:"required"`
	Meta      map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// SetSessionModeResponse is the result of session/set_mode.
type SetSessionModeResponse struct {
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// SetConfigOptionRequest is the params of session/set_config_option, of
// either version: Value is the value ID chosen. Type is v2's required
// discriminator ("id"; v1 sends none for a value ID); a request for a
// boolean value (type "boolean"), which no option of sessionkit takes, or
// of another type, is refused.
type SetConfigOptionRequest struct {
	SessionID string          `json:"sessionId" acp:"required"`
	ConfigID  string          `json:"configId" acp:"required"`
	Type      string          `json:"type,omitzero"`
	Value     json.RawMessage `json:"value" acp:"required"`
	Meta      map[string]any  `json:"_meta,omitzero" acp:"lenient"`
}

// SetConfigOptionResponse is the result of a v1 session/set_config_option:
// every option with its current value.
type SetConfigOptionResponse struct {
	ConfigOptions []SessionConfigOption `json:"configOptions" acp:"required,lenient,skipinvalid"`
	Meta          map[string]any        `json:"_meta,omitzero" acp:"lenient"`
}

// SetConfigOptionResponseV2 is the result of a v2
// session/set_config_option.
type SetConfigOptionResponseV2 struct {
	ConfigOptions []SessionConfigOptionV2 `json:"configOptions" acp:"required,skipinvalid"`
	Meta          map[string]any          `json:"_meta,omitzero" acp:"lenient"`
}

// MarshalJSON encodes r.
func (r SetSessionModeRequest) MarshalJSON() ([]byte, error) { return marshalObject(r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *SetSessionModeRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// MarshalJSON encodes r.
func (r SetSessionModeResponse) MarshalJSON() ([]byte, error) { return marshalObject(r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *SetSessionModeResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// MarshalJSON encodes r.
func (r SetConfigOptionRequest) MarshalJSON() ([]byte, error) { return marshalObject(r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *SetConfigOptionRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// MarshalJSON encodes r.
func (r SetConfigOptionResponse) MarshalJSON() ([]byte, error) { return marshalObject(r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *SetConfigOptionResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// MarshalJSON encodes r.
func (r SetConfigOptionResponseV2) MarshalJSON() ([]byte, error) { return marshalObject(r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *SetConfigOptionResponseV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }
