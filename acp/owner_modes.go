package acp

import (
	"context"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/session"
)

// The owner's side of a session's mode and model (see acp/server_modes.go):
// what they are now, changing them with session.Configure, and telling the
// client.

// chosen queues what tells the client that the session's mode or model is
// now c, where it was was: v1's current_mode_update when the mode changed,
// and the config_option_update of both versions.
func (a *agentSession) chosen(was, c choice) {
	if was == c {
		return
	}
	if was.mode != c.mode {
		if _, v1 := a.surf.(v1Surface); v1 && len(a.srv.opts.Modes) > 0 {
			a.enqueue(&schema.CurrentModeUpdate{CurrentModeID: c.mode})
		}
	}
	if _, v1 := a.surf.(v1Surface); v1 {
		a.enqueue(&schema.ConfigOptionUpdate{ConfigOptions: a.srv.configOptions(c)})
	} else {
		a.enqueue(&schema.ConfigOptionUpdateV2{ConfigOptions: a.srv.configOptionsV2(c)})
	}
}

// choice is the session's mode and model now: its settings
// (session.Settings, stored and kept on reopen), or the first mode and
// model offered where it has none.
func (a *agentSession) choice() choice { return a.choiceOf(a.sess.Settings()) }

// choiceOf is the mode and model of settings set.
func (a *agentSession) choiceOf(set session.Settings) choice {
	c := a.srv.defaultChoice()
	if set.Mode != "" {
		c.mode = set.Mode
	}
	if set.Model != "" {
		c.model = set.Model
	}
	return c
}

// choose sets config option id (ConfigMode, ConfigModel) to value, a value
// it takes, with session.Configure: it runs on the owner goroutine, and
// once the session has taken the change (at once when idle, at the next
// step checkpoint of a running turn) calls done, on the owner, with nil or
// why the session refused it. What tells the client of the change is the
// session's SettingsEvent (forward), queued before done's answer: the
// session publishes it before the Configure finishes.
func (a *agentSession) choose(id, value string, done func(error)) {
	var req session.ConfigureRequest
	switch id {
	case ConfigMode:
		req.Mode = &value
	case ConfigModel:
		req.Model = &value
	}
	h, err := a.sess.Configure(context.Background(), req)
	if err != nil {
		done(sessionError(err))
		return
	}
	go func() {
		<-h.Finished() // every accepted command finishes, also on Close
		a.post(func() {
			var err error
			if r := h.Result(); r != nil && r.Err != nil {
				err = sessionError(r.Err)
			}
			a.catchUp() // the change's SettingsEvent: its updates go first
			done(err)
		})
	}()
}
