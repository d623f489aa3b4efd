package plural_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sessionkit/sessionkit/internal/plural"
)

func TestCount(t *testing.T) {
	assert.Equal(t, "1 message", plural.Count(1, "message"))
	assert.Equal(t, "0 Segments", plural.Count(0, "Segment"))
	assert.Equal(t, "2 messages", plural.Count(2, "message"))
	assert.Equal(t, "-1 messages", plural.Count(-1, "message"))
}
