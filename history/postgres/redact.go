package postgres

import (
	"net/url"
	"regexp"
	"strings"
)

// redactMask replaces every password Redact finds.
const redactMask = "xxxxx"

// Redact returns url, a store's connection string as a user gives it (a
// postgres:// or postgresql:// URL in any case, a key=value connection
// string, or a SQLite path), with every password in it replaced by xxxxx,
// so that it can be logged or printed: the password of the URL's user
// info, its password and sslpassword query parameters (also percent
// encoded), and password= and sslpassword= in a key=value string, quoted
// or not. Anything else is kept as it was. A URL that does not parse, or
// parses with an '@' past its host, is masked all the same, erring on the
// side of hiding too much: everything between the user name and the last
// '@', and the value of every query parameter named like a password.
func Redact(url string) string {
	lower := strings.ToLower(url)
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		if strings.HasPrefix(lower, scheme) {
			if r, ok := redactURL(url); ok {
				return r
			}
			return redactMalformedURL(url, len(scheme))
		}
	}
	return keywordPassword.ReplaceAllString(url, "${1}"+redactMask)
}

// keywordPassword is a password or sslpassword keyword of a key=value
// connection string and its value: quoted (with backslash escapes, to the
// end if the quote is not closed) or up to the next white space.
var keywordPassword = regexp.MustCompile(`(?i)((?:^|[\s])(?:ssl)?password\s*=\s*)('(?:\\.|[^'\\])*'?|\S*)`)

// redactURL redacts a URL that net/url parses; ok is false when it does
// not.
func redactURL(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" {
		return "", false
	}
	rest := s[strings.Index(s, "://")+3:]
	if authority := strings.IndexAny(rest, "/?#"); authority >= 0 && strings.LastIndexByte(rest, '@') > authority {
		// An '@' past the host: a password with a '/', '?' or '#' left
		// unencoded ends the user info early (postgres://u:12/34@host),
		// so what parsed is not what the user meant.
		return "", false
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), redactMask)
		}
	}
	u.RawQuery = redactQuery(u.RawQuery)
	if u.Fragment != "" {
		// Never part of a connection string: nothing to keep.
		u.Fragment, u.RawFragment = redactMask, ""
	}
	return u.String(), true
}

// redactQuery masks the value of every parameter of query whose name,
// percent-decoded, is a password's; the rest is kept byte for byte. A '?'
// inside the query starts a parameter as '&' does, so that a password
// after a stray '?' is masked too.
func redactQuery(query string) string {
	var b strings.Builder
	for query != "" {
		end := strings.IndexAny(query, "&?")
		if end < 0 {
			end = len(query)
		}
		pair := query[:end]
		if key, _, hasValue := strings.Cut(pair, "="); hasValue && isPasswordKey(key) {
			pair = key + "=" + redactMask
		}
		b.WriteString(pair)
		if end < len(query) {
			b.WriteByte(query[end])
			end++
		}
		query = query[end:]
	}
	return b.String()
}

// isPasswordKey reports whether a query parameter's raw name is password
// or sslpassword, in any case and encoding.
func isPasswordKey(raw string) bool {
	key, err := url.QueryUnescape(raw)
	if err != nil {
		key = raw
	}
	key = strings.ToLower(strings.TrimSpace(key))
	return key == "password" || key == "sslpassword"
}

// redactMalformedURL masks a URL that does not parse; rest begins after
// its scheme's "://". Whatever lies between the first ':' of the user info
// and the last '@' may be a password (one with an unencoded '/', '?' or
// '@' makes the URL malformed in just this way), and so may the value of
// any parameter named like a password, wherever a '?' starts the query.
func redactMalformedURL(s string, rest int) string {
	head, tail := s[:rest], s[rest:]
	if at := strings.LastIndexByte(tail, '@'); at >= 0 {
		if colon := strings.IndexByte(tail[:at], ':'); colon >= 0 {
			tail = tail[:colon+1] + redactMask + tail[at:]
		}
	}
	if q := strings.IndexByte(tail, '?'); q >= 0 {
		tail = tail[:q+1] + redactQuery(tail[q+1:])
	}
	return head + tail
}
