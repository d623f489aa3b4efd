package session_test

import (
	"testing"

	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/session/agenttest"
)

func TestAgentSuite(t *testing.T) {
	agenttest.Run(t, agenttest.Harness{New: func(t *testing.T, p provider.Provider) session.Agent {
		return newSession(t, p, session.Config{})
	}})
}
