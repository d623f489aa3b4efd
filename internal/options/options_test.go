package options_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sessionkit/sessionkit/internal/options"
)

// TestBaseURLProblem: each way a base URL is wrong is said as it is.
func TestBaseURLProblem(t *testing.T) {
	for raw, want := range map[string]string{
		"http://[::1":          "is not a valid URL (missing ']' in host)",
		"http://[::1]:8080/v1": "",
		"https://api.test":     "",
		"ftp://host/v1":        "is not an http:// or https:// URL",
		"localhost:8080":       "is not an http:// or https:// URL",
		"http://":              "has no host",
		"http://host:port/v1":  `is not a valid URL (invalid port ":port" after host)`,
	} {
		assert.Equal(t, want, options.BaseURLProblem(raw), raw)
	}
}
