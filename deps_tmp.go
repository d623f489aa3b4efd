//go:build deps

package sessionkit

import (
	_ "github.com/google/uuid"
	_ "github.com/sashabaranov/go-openai"
	_ "go.uber.org/goleak"
	_ "go.uber.org/zap"
	_ "go.uber.org/zap/zaptest"
	_ "go.uber.org/zap/zaptest/observer"
	_ "modernc.org/sqlite"
	_ "pgregory.net/rapid"
)
