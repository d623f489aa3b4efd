package crashtest_test

import (
	"testing"

	"github.com/sessionkit/sessionkit/internal/pgtest"
)

// TestMain stops the throwaway PostgreSQL server of TestScaleOut and checks
// for leaked goroutines (pgtest.Main does both).
func TestMain(m *testing.M) { pgtest.Main(m) }
