package acp

import (
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/session"
)

// Instructions are a session's project instructions
// ([ServerOptions.Instructions]).
type Instructions struct {
	// Text is added to the system prompt (session.Config.Instructions).
	Text string
	// Files name where Text came from, for the log and the response's
	// _meta (sessionkit.projectInstructions).
	Files []string
}

// MetaProjectInstructions is the key under _meta.sessionkit of a response
// that opens a session (session/new, session/load, session/resume) that
// lists the project instruction files read for it
// ([ServerOptions.Instructions]).
const MetaProjectInstructions = "projectInstructions"

// systemPromptCapabilities advertise the client's system prompt, append
// and override (v1 sessionCapabilities.systemPrompt, v2
// session.systemPrompt).
func systemPromptCapabilities() *schema.SystemPromptCapabilities {
	return &schema.SystemPromptCapabilities{Mode: &schema.SystemPromptModeCapabilities{Override: &schema.Capability{}}}
}

// clientPrompt checks the systemPrompt of a lifecycle request and returns
// it as the session takes it (zero for none: the stored one is kept).
// What it cannot apply is invalid params naming the field: a mode other
// than append and override, no content, a block that is not text, text
// that is blank.
func clientPrompt(p *schema.SystemPrompt) (session.ClientPrompt, error) {
	if p == nil {
		return session.ClientPrompt{}, nil
	}
	var out session.ClientPrompt
	switch p.Mode {
	case schema.SystemPromptAppend:
	case schema.SystemPromptOverride:
		out.Override = true
	default:
		return out, invalidParams(`field "systemPrompt.mode": %q is not a mode this agent takes ("append" or "override")`, p.Mode)
	}
	if len(p.Content) == 0 {
		return out, invalidParams(`field "systemPrompt.content": must not be empty`)
	}
	texts := make([]string, 0, len(p.Content))
	for i, b := range p.Content {
		if b.Text == nil {
			return out, invalidParams(`field "systemPrompt.content[%d]": a %q block: a system prompt takes text blocks only`, i, b.Type())
		}
		texts = append(texts, b.Text.Text)
	}
	out.Text = strings.Join(texts, "\n\n")
	if strings.TrimSpace(out.Text) == "" {
		return out, invalidParams(`field "systemPrompt.content": has no text`)
	}
	return out, nil
}

// readInstructions reads the project instructions of a session opened at
// at into cfg, logs the files and returns them. Instructions that are not
// UTF-8 text (a NUL byte, bytes that are not UTF-8) are left out, with a
// warning in the log.
func (s *server) readInstructions(cfg *session.Config, id string, at place) []string {
	if s.opts.Instructions == nil {
		return nil
	}
	in := s.opts.Instructions(at.cwd, at.dirs)
	if strings.IndexByte(in.Text, 0) >= 0 || !utf8.ValidString(in.Text) {
		// Never sent to the model (a binary file, another encoding).
		s.log.Warn("project instructions are not UTF-8 text: left out", zap.String("session", id), zap.String("cwd", at.cwd), zap.Strings("files", in.Files))
		return nil
	}
	cfg.Instructions = in.Text
	if len(in.Files) > 0 {
		s.log.Info("project instructions", zap.String("session", id), zap.String("cwd", at.cwd), zap.Strings("files", in.Files))
	}
	return in.Files
}

// withInstructions is result, a response that opens a session, with the
// project instruction files read for it in its _meta.
func withInstructions(result any, files []string) any {
	return editOpened(result, func(f openedFields) {
		// withMeta copies: a response's map may be shared with its maker.
		*f.meta, _ = withMeta(schema.Value(*f.meta), MetaProjectInstructions, files).Get()
	})
}

// openedFields point into a copy of a response that opens a session, at
// the fields the server fills after its maker: v1 responses have modes
// and options, v2 ones optionsV2 (the others nil).
type openedFields struct {
	meta      *map[string]any
	modes     **schema.SessionModeState
	options   *[]schema.SessionConfigOption
	optionsV2 *[]schema.SessionConfigOptionV2
}

// editOpened is a copy of result, a response that opens a session (v1 or
// v2), edited by edit; any other result is returned as it is.
func editOpened(result any, edit func(openedFields)) any {
	switch r := result.(type) {
	case schema.NewSessionResponse:
		edit(openedFields{meta: &r.Meta, modes: &r.Modes, options: &r.ConfigOptions})
		return r
	case schema.LoadSessionResponse:
		edit(openedFields{meta: &r.Meta, modes: &r.Modes, options: &r.ConfigOptions})
		return r
	case schema.ResumeSessionResponse:
		edit(openedFields{meta: &r.Meta, modes: &r.Modes, options: &r.ConfigOptions})
		return r
	case schema.ForkSessionResponse:
		edit(openedFields{meta: &r.Meta, modes: &r.Modes, options: &r.ConfigOptions})
		return r
	case schema.NewSessionResponseV2:
		edit(openedFields{meta: &r.Meta, optionsV2: &r.ConfigOptions})
		return r
	case schema.ResumeSessionResponseV2:
		edit(openedFields{meta: &r.Meta, optionsV2: &r.ConfigOptions})
		return r
	case schema.ForkSessionResponseV2:
		edit(openedFields{meta: &r.Meta, optionsV2: &r.ConfigOptions})
		return r
	}
	return result
}
