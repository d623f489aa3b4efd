package postgres_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history/postgres"
)

// Redact hides every password of a store's connection string: the user
// info's and the query's of a URL, a key=value string's, and those of
// malformed URLs; what is not a password is kept.
func TestRedact(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		// URLs that parse: exactly the passwords are masked.
		{"postgres://u:secret@db.example:5432/sessions", "postgres://u:xxxxx@db.example:5432/sessions"},
		{"postgresql://u:secret@db.example/sessions?sslmode=require", "postgresql://u:xxxxx@db.example/sessions?sslmode=require"},
		{"postgres://u@db.example/sessions?password=secret", "postgres://u@db.example/sessions?password=xxxxx"},
		{"postgres://u@db.example/sessions?sslmode=verify-full&sslpassword=secret&application_name=a", "postgres://u@db.example/sessions?sslmode=verify-full&sslpassword=xxxxx&application_name=a"},
		{"postgres://u:secret@db.example/sessions?PASSWORD=secret&pass%77ord=secret", "postgres://u:xxxxx@db.example/sessions?PASSWORD=xxxxx&pass%77ord=xxxxx"},
		{"PostgreSQL://u:secret@db.example/sessions", "postgresql://u:xxxxx@db.example/sessions"},
		{"postgres://:secret@db.example/sessions", "postgres://:xxxxx@db.example/sessions"},
		{"postgres://u:s%40c%2Fret@db.example/sessions", "postgres://u:xxxxx@db.example/sessions"},
		{"postgres://u:secret@h1:5432,h2:5433/sessions", "postgres://u:xxxxx@h1:5432,h2:5433/sessions"},
		{"postgres://u:secret@db.example/sessions#secret", "postgres://u:xxxxx@db.example/sessions#xxxxx"},
		// Nothing to hide: kept as it was.
		{"postgres://u@db.example:5432/sessions?sslmode=disable", "postgres://u@db.example:5432/sessions?sslmode=disable"},
		{"postgres:///sessions?host=/run/postgresql", "postgres:///sessions?host=/run/postgresql"},
		{"/home/u/.local/share/sessionkit/sessions.db", "/home/u/.local/share/sessionkit/sessions.db"},
		{"sessions.db", "sessions.db"},
		{"", ""},
		// Malformed URLs: masked all the same.
		{"postgres://u:secret@[::1/sessions", "postgres://u:xxxxx@[::1/sessions"},
		{"postgres://u:sec/ret@db.example/sessions", "postgres://u:xxxxx@db.example/sessions"},
		{"postgres://u:sec?ret@db.example/sessions", "postgres://u:xxxxx@db.example/sessions"},
		{"postgres://u:sec@ret@db.example/sessions", "postgres://u:xxxxx@db.example/sessions"},
		{"postgres://u:secret%zz@db.example/sessions", "postgres://u:xxxxx@db.example/sessions"},
		{"postgres://u:secret@db.example:port/sessions?password=secret", "postgres://u:xxxxx@db.example:port/sessions?password=xxxxx"},
		{"postgres://u@[::1/sessions?password=secret&x=%zz", "postgres://u@[::1/sessions?password=xxxxx&x=%zz"},
		{"postgres://u:secret\x7f@db.example/sessions", "postgres://u:xxxxx@db.example/sessions"},
		{"postgres://u@db.example/sessions?password=se@cret", "postgres://u@db.example/sessions?password=xxxxx"},
		{"postgres://u:@secret#@db.example/sessions", "postgres://u:xxxxx@db.example/sessions"},
		{"postgres://u:secret@db.example/sessions?application_name=a@b", "postgres://u:xxxxx@b"}, // over-masked: an '@' past the host
		{"postgres://u:12/secret@db.example/sessions", "postgres://u:xxxxx@db.example/sessions"},
		{"postgres://u:12?secret@db.example/sessions", "postgres://u:xxxxx@db.example/sessions"},
		{"postgres://u:12#secret@db.example/sessions", "postgres://u:xxxxx@db.example/sessions"},
		{"postgres://u@db.example/sessions?x=1?password=secret", "postgres://u@db.example/sessions?x=1?password=xxxxx"},
		// key=value connection strings.
		{"host=db.example user=u password=secret dbname=sessions", "host=db.example user=u password=xxxxx dbname=sessions"},
		{"host=db.example password='se cret\\' still' dbname=sessions", "host=db.example password=xxxxx dbname=sessions"},
		{"password = secret host=db.example", "password = xxxxx host=db.example"},
		{"host=db.example sslpassword=secret PASSWORD='secret", "host=db.example sslpassword=xxxxx PASSWORD=xxxxx"},
		{"host=db.example\tpassword=secret", "host=db.example\tpassword=xxxxx"},
	} {
		got := postgres.Redact(tt.in)
		assert.Equal(t, tt.want, got, "Redact(%q)", tt.in)
		for _, part := range []string{"secret", "sec", "cret", "ret@"} {
			if strings.Contains(tt.in, part) && !strings.Contains(tt.want, part) {
				assert.NotContains(t, got, part, "Redact(%q)", tt.in)
			}
		}
	}
}

// A URL pgx accepts means the same after Redact, but for the passwords:
// the same hosts, user, database and parameters.
func TestRedactKeepsTheMeaning(t *testing.T) {
	for _, in := range []string{
		"postgres://u:secret@db.example:5433/sessions?sslmode=disable&application_name=a",
		"postgresql://u@db.example/sessions?password=secret&connect_timeout=3",
		"postgres://u:s%40cret@h1:5432,h2:5433/sessions?target_session_attrs=read-write",
		"host=db.example port=5433 user=u password='se cret' dbname=sessions sslmode=disable",
	} {
		want, err := pgconn.ParseConfig(in)
		require.NoError(t, err, in)
		out := postgres.Redact(in)
		got, err := pgconn.ParseConfig(out)
		require.NoError(t, err, out)
		assert.Equal(t, "xxxxx", got.Password, out)
		assert.Equal(t, want.Host, got.Host, out)
		assert.Equal(t, want.Port, got.Port, out)
		assert.Equal(t, want.User, got.User, out)
		assert.Equal(t, want.Database, got.Database, out)
		assert.Equal(t, want.RuntimeParams, got.RuntimeParams, out)
		assert.Equal(t, len(want.Fallbacks), len(got.Fallbacks), out)
	}
}

// FuzzRedact: a password put in any of a URL's password places (as typed in
// the user info, encoded in the query), or quoted in a key=value string,
// never survives Redact, whatever surrounds it.
func FuzzRedact(f *testing.F) {
	f.Add("db.example:5432", "sessions", "s3cr3t-Pass")
	f.Add("[::1", "s?x=1", "Pa55word")
	f.Add("h", "d?password=", "hunter22")
	f.Fuzz(func(t *testing.T, host, path, password string) {
		if len(password) < 6 || strings.ContainsAny(password, "x\x00") {
			return // too short to tell from its surroundings, or could be part of the mask
		}
		// Each form puts the password (its encoding for that place) in one
		// slot; the rest of the string is its surroundings.
		for _, form := range []func(p string) string{
			func(p string) string { return "postgres://u:" + p + "@" + host + "/" + path },
			func(p string) string {
				return "postgres://u@" + host + "/" + path + "?password=" + url.QueryEscape(p)
			},
			func(p string) string {
				return "host=" + strings.Fields(host + " x")[0] + " password='" + strings.ReplaceAll(strings.ReplaceAll(p, `\`, `\\`), "'", `\'`) + "'"
			},
		} {
			shows := func(out string) bool {
				return strings.Contains(out, password) || strings.Contains(out, url.QueryEscape(password))
			}
			if shows(form("")) {
				continue // the surroundings spell it (the host is the password): not a password there
			}
			if shows(postgres.Redact(form("Q"))) {
				continue // the redacted surroundings spell it (an escape such as %9A before "A00000"): not the password's doing
			}
			if in := form(password); shows(postgres.Redact(in)) {
				t.Fatalf("Redact(%q) = %q shows the password", in, postgres.Redact(in))
			}
		}
	})
}
