//go:build !unix

package pgtest

import "errors"

// server is a throwaway PostgreSQL server; they run on Unix systems only.
type server struct {
	version string
	port    int
}

func newServer() (*server, error) {
	return nil, errors.New("throwaway PostgreSQL servers run on Unix systems only")
}

func (*server) adminURL() string { return "" }
func (*server) running() bool    { return false }
func (*server) start(bool) error { return errors.ErrUnsupported }
func (*server) kill() error      { return nil }
func (*server) destroy() error   { return nil }
