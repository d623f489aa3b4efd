package acp

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

// Model is one model a session may use ([ServerOptions.Models]): ID is what
// the provider is asked for (provider.Request.Model), Name what the user
// sees ("" = ID).
type Model struct {
	ID          string
	Name        string
	Description string
}

// The IDs of the config options this package offers.
const (
	// ConfigMode is the config option of the session's mode (category
	// "mode"), offered with ServerOptions.Modes.
	ConfigMode = "mode"
	// ConfigModel is the config option of the session's model (category
	// "model"), offered with ServerOptions.Models.
	ConfigModel = "model"
)

// choice is a session's mode and model, as the client sees them.
type choice struct {
	mode, model string
}

// defaultChoice is a new session's: the first mode and model listed.
func (s *server) defaultChoice() choice {
	var c choice
	if len(s.opts.Modes) > 0 {
		c.mode = s.opts.Modes[0].ID
	}
	if len(s.opts.Models) > 0 {
		c.model = s.opts.Models[0].ID
	}
	return c
}

// modeState is the v1 modes of a response (nil without modes).
func (s *server) modeState(c choice) *schema.SessionModeState {
	if len(s.opts.Modes) == 0 {
		return nil
	}
	return &schema.SessionModeState{CurrentModeID: c.mode, AvailableModes: slices.Clone(s.opts.Modes)}
}

// configOptions are the v1 config options with c's values (nil: none).
func (s *server) configOptions(c choice) []schema.SessionConfigOption {
	var out []schema.SessionConfigOption
	if len(s.opts.Modes) > 0 {
		o := schema.SessionConfigOption{ID: ConfigMode, Name: "Mode", Category: schema.CategoryMode, CurrentValue: c.mode}
		for _, m := range s.opts.Modes {
			o.Options = append(o.Options, schema.SessionConfigSelectOption{Value: m.ID, Name: m.Name, Description: m.Description})
		}
		out = append(out, withCurrent(o))
	}
	if len(s.opts.Models) > 0 {
		o := schema.SessionConfigOption{ID: ConfigModel, Name: "Model", Category: schema.CategoryModel, CurrentValue: c.model}
		for _, m := range s.opts.Models {
			name := m.Name
			if name == "" {
				name = m.ID
			}
			o.Options = append(o.Options, schema.SessionConfigSelectOption{Value: m.ID, Name: name, Description: m.Description})
		}
		out = append(out, withCurrent(o))
	}
	return out
}

// withCurrent adds the current value to o's values when it is not one of
// them (a session stored with a model this agent no longer lists): the
// schema wants the current value among the options, and the session
// goes on using it until the user picks another.
func withCurrent(o schema.SessionConfigOption) schema.SessionConfigOption {
	if o.CurrentValue != "" && !slices.ContainsFunc(o.Options, func(v schema.SessionConfigSelectOption) bool { return v.Value == o.CurrentValue }) {
		o.Options = append(o.Options, schema.SessionConfigSelectOption{Value: o.CurrentValue, Name: o.CurrentValue, Description: "kept from before; no longer offered"})
	}
	return o
}

// configOptionsV2 are configOptions on a v2 connection.
func (s *server) configOptionsV2(c choice) []schema.SessionConfigOptionV2 {
	return convertAll(s.configOptions(c), func(o schema.SessionConfigOption) schema.SessionConfigOptionV2 {
		return schema.SessionConfigOptionV2(o)
	})
}

// withChoice fills the modes and config options of a response that opens
// a session (result), as the session stands (c).
func (s *server) withChoice(result any, c choice) any {
	return editOpened(result, func(f openedFields) {
		if f.optionsV2 != nil {
			*f.optionsV2 = nilIfEmpty(s.configOptionsV2(c))
			return
		}
		*f.modes, *f.options = s.modeState(c), s.configOptions(c)
	})
}

// validChoice reports whether value is one of the values of config
// option id.
func (s *server) validChoice(id, value string) bool {
	switch id {
	case ConfigMode:
		return slices.ContainsFunc(s.opts.Modes, func(m schema.SessionMode) bool { return m.ID == value })
	case ConfigModel:
		return slices.ContainsFunc(s.opts.Models, func(m Model) bool { return m.ID == value })
	}
	return false
}

// setMode handles the v1 session/set_mode.
func (s *server) setMode(ctx context.Context, p schema.SetSessionModeRequest) (any, error) {
	a, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	if !s.validChoice(ConfigMode, p.ModeID) {
		return nil, invalidParams("field \"modeId\": %q is not a mode of this agent (%s)", p.ModeID, s.choices(ConfigMode))
	}
	return a.configure(ctx, jsonrpc.Defer(ctx), ConfigMode, p.ModeID, func(choice) any { return schema.SetSessionModeResponse{} })
}

// setConfigOption handles session/set_config_option of either version.
func (s *server) setConfigOption(ctx context.Context, p schema.SetConfigOptionRequest) (any, error) {
	a, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	v2 := s.negotiated.version == schema.ProtocolVersion2
	switch {
	case v2 && p.Type != "id":
		return nil, invalidParams("field \"type\": a value of type %q is not supported (the options of this agent take value IDs, type \"id\")", p.Type)
	case !v2 && p.Type != "":
		return nil, invalidParams("field \"type\": a value of type %q is not supported (the options of this agent take value IDs)", p.Type)
	case p.ConfigID != ConfigMode && p.ConfigID != ConfigModel || s.choices(p.ConfigID) == "":
		return nil, invalidParams("field \"configId\": %q is not a config option of this agent", p.ConfigID)
	}
	var value string
	if err := json.Unmarshal(p.Value, &value); err != nil {
		return nil, invalidParams("field \"value\": must be a value ID (a string)")
	}
	if !s.validChoice(p.ConfigID, value) {
		return nil, invalidParams("field \"value\": %q is not a value of %q (%s)", value, p.ConfigID, s.choices(p.ConfigID))
	}
	return a.configure(ctx, jsonrpc.Defer(ctx), p.ConfigID, value, func(c choice) any {
		if v2 {
			return schema.SetConfigOptionResponseV2{ConfigOptions: s.configOptionsV2(c)}
		}
		return schema.SetConfigOptionResponse{ConfigOptions: s.configOptions(c)}
	})
}

// choices lists the values of config option id, for an error message.
func (s *server) choices(id string) string {
	var ids []string
	switch id {
	case ConfigMode:
		for _, m := range s.opts.Modes {
			ids = append(ids, m.ID)
		}
	case ConfigModel:
		for _, m := range s.opts.Models {
			ids = append(ids, m.ID)
		}
	}
	out := ""
	for i, v := range ids {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

// defaultSettings gives a session opened here the first mode and model
// offered, where its Config names none: a new session starts with them,
// and a stored one keeps what Configure set (session.New's reopen rule).
func (s *server) defaultSettings(cfg *session.Config) {
	c := s.defaultChoice()
	if cfg.Mode == "" {
		cfg.Mode = c.mode
	}
	if cfg.Model == "" {
		cfg.Model = c.model
	}
}
