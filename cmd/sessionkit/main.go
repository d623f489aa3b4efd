// Command sessionkit looks into a sessionkit store: a SQLite file or a
// PostgreSQL database. It lists the sessions, shows one (settings, retained
// summary, Active history), its Segments, its timeline, searches its
// messages, and exports it as one JSON document.
//
//	sessionkit [--store PATH|URL] sessions [--cwd DIR] [--limit N] [--json]
//	sessionkit [--store PATH|URL] show ID [--json]
//	sessionkit [--store PATH|URL] segments ID [--messages] [--json]
//	sessionkit [--store PATH|URL] timeline ID [--json]
//	sessionkit [--store PATH|URL] export ID    # JSON, with or without --json
//	sessionkit [--store PATH|URL] search ID QUERY [--limit N] [--json]
//	sessionkit [--store PATH|URL] serve [--addr 127.0.0.1:7777] [--token T]
//	sessionkit [--store PATH|URL] delete ID [--yes]
//	sessionkit --version
//
// --store is a SQLite file path or a postgres:// URL; the default is the
// acp-agent's default store ($XDG_DATA_HOME/sessionkit/sessions.db, else
// ~/.local/share/sessionkit/sessions.db). Flags may also follow the command.
//
// # Read only, except delete
//
// Every command but delete only reads. It opens a SQLite file with sqlite.OpenReadOnly
// and a PostgreSQL database with postgres.OpenReadOnly: it never creates a
// file, never migrates a schema and never takes a session's lease, so it
// can look into a session while an agent serves it; it then says so, on
// stderr and in the output of show and export, since what it prints is
// what the agent had committed when it was read. A SQLite path that does
// not exist is an error: no file is created. A store at an older schema
// version is read as it is (SQLite: through a migrated copy in memory); a
// newer one is refused, naming both versions. A store the user cannot
// write is read too; a WAL-mode SQLite file whose index (-shm) is missing
// and cannot be created beside it is read as immutable, and stderr says
// that changes still in its -wal file are not seen.
//
// delete is the one command that writes (delete.go). It reads the session
// first, as the others do, and refuses one that an agent serves, naming
// the agent; it asks for confirmation on the terminal unless --yes is
// given, and without a terminal refuses to run without --yes. Then it
// opens the store as the agent does (sqlite.Open, postgres.Open: an older
// schema is migrated) and deletes the session with everything stored of
// it (history.Deleter), in one transaction that checks again that no lease
// covers it.
//
// # Exit status
//
// 0 on success, 1 when the store cannot be read or a session is not found
// (and for delete: the session is served by an agent, or the answer to the
// question was not yes), 2 for a bad command line (unknown command or flag,
// missing or extra arguments, delete without --yes and without a
// terminal).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/internal/envconfig"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	status := cli(ctx, os.Args[1:], console{in: os.Stdin, tty: isTerminal(os.Stdin.Fd())}, os.Stdout, os.Stderr)
	stop()
	os.Exit(status)
}

// Exit statuses.
const (
	exitFailure = envconfig.ExitFailure
	exitUsage   = envconfig.ExitUsage
)

// usagef is envconfig.Usagef: a bad command line, exit status 2.
var usagef = envconfig.Usagef

const usage = `usage: sessionkit [--store PATH|URL] COMMAND [flags] [ID]

commands:
  sessions      list the sessions, newest first, each fork under its source (--cwd DIR, --limit N)
  show ID       settings, retained summary and Active history of a session
  segments ID   the Segments of a session (--messages: the archived messages)
  timeline ID   messages and compactions in timeline order
  export ID     the whole session as one JSON document
  search ID QUERY  the session's messages, archived or active, that hold words
                of QUERY, best first (--limit N hits, default 10)
  serve         a web inspector of the store (--addr HOST:PORT, --token T)
  delete ID     delete a session and everything stored of it, after asking
                (--yes: without asking); the one command that writes

flags:
  --store PATH|URL  SQLite file or postgres:// URL (default: the acp-agent's store)
  --json            JSON output (export writes JSON either way)
  --version         print the version and exit
`

// console is where delete asks its question: standard input, and whether
// it is a terminal.
type console struct {
	in  io.Reader // nil: no input
	tty bool
}

// cli runs one command line and returns the exit status.
func cli(ctx context.Context, args []string, in console, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, in, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
	}
	return envconfig.Status(stderr, "sessionkit", err)
}

// options are the flags of every command; each command uses its own.
type options struct {
	store    string
	json     bool
	messages bool
	cwd      string
	limit    int
	query    string // search: the words after the ID
}

// command is one subcommand: whether it takes a session ID, which of the
// optional flags it has, and what it does.
type command struct {
	takesID bool
	// takesQuery: after the ID come the words of a query (search)
	takesQuery bool
	flags      func(fs *flag.FlagSet, o *options)
	run        func(ctx context.Context, r *reader, id string, o *options, stdout, stderr io.Writer) error
}

func jsonFlag(fs *flag.FlagSet, o *options) {
	fs.BoolVar(&o.json, "json", o.json, "JSON output")
}

var commands = map[string]command{
	"sessions": {flags: func(fs *flag.FlagSet, o *options) {
		jsonFlag(fs, o)
		fs.StringVar(&o.cwd, "cwd", "", "only the sessions created in this directory")
		fs.IntVar(&o.limit, "limit", 0, "at most this many sessions (0 = all)")
	}, run: runSessions},
	"show": {takesID: true, flags: jsonFlag, run: runShow},
	"segments": {takesID: true, flags: func(fs *flag.FlagSet, o *options) {
		jsonFlag(fs, o)
		fs.BoolVar(&o.messages, "messages", false, "print the archived messages verbatim")
	}, run: runSegments},
	"timeline": {takesID: true, flags: jsonFlag, run: runTimeline},
	"export":   {takesID: true, flags: jsonFlag, run: runExport}, // JSON either way
	"search": {takesID: true, takesQuery: true, flags: func(fs *flag.FlagSet, o *options) {
		jsonFlag(fs, o)
		fs.IntVar(&o.limit, "limit", 0, "at most this many hits (0 = 10)")
	}, run: runSearch},
}

// dispatch parses the command line and runs its command.
func dispatch(ctx context.Context, args []string, in console, stdout, stderr io.Writer) error {
	o := options{}
	global := newFlagSet("sessionkit")
	global.StringVar(&o.store, "store", defaultStore(), "")
	global.BoolVar(&o.json, "json", false, "")
	showVersion := global.Bool("version", false, "")
	if err := global.Parse(args); err != nil {
		return flagError(err)
	}
	if *showVersion {
		fmt.Fprintln(stdout, version())
		return nil
	}
	if global.NArg() == 0 {
		return usagef("no command: give one of %s (see -h)", commandNames)
	}
	name, rest := global.Arg(0), global.Args()[1:]
	if name == "help" {
		return flag.ErrHelp
	}
	if name == "serve" { // a server, not a report: flags of its own (serve.go)
		return runServe(ctx, rest, o.store, stdout, stderr)
	}
	if name == "delete" { // the one command that writes (delete.go)
		return runDelete(ctx, rest, o.store, in, stdout, stderr)
	}
	cmd, ok := commands[name]
	if !ok {
		return usagef("unknown command %q: give one of %s (see -h)", name, commandNames)
	}
	fs := newFlagSet(name)
	fs.StringVar(&o.store, "store", o.store, "")
	cmd.flags(fs, &o)
	positional, err := parseInterleaved(fs, rest)
	if err != nil {
		return err
	}
	if cmd.takesQuery {
		if len(positional) < 2 {
			return usagef("%s needs a session ID and a query: sessionkit %s ID QUERY", name, name)
		}
		o.query, positional = strings.Join(positional[1:], " "), positional[:1]
	}
	var id string
	switch {
	case cmd.takesID && len(positional) == 0:
		return usagef("%s needs a session ID (sessionkit sessions lists them)", name)
	case cmd.takesID && len(positional) > 1:
		return usagef("%s takes one session ID, not %d arguments (unexpected %q)", name, len(positional), positional[1])
	case !cmd.takesID && len(positional) > 0:
		return usagef("%s takes no argument (unexpected %q)", name, positional[0])
	case cmd.takesID:
		id = positional[0]
	}
	if o.limit < 0 {
		return usagef("--limit %d is negative", o.limit)
	}
	r, err := openReader(ctx, o.store, stderr)
	if err != nil {
		return err
	}
	defer r.close()
	return cmd.run(ctx, r, id, &o, stdout, stderr)
}

// commandNames lists the commands for the usage errors.
const commandNames = "sessions, show, segments, timeline, export, search, serve, delete"

// parseInterleaved parses args with fs, flags before and after the
// positional arguments, and returns those in order.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, flagError(err)
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// version is what --version prints: the release, and the commit it was
// built from when the build recorded one.
func version() string {
	v := "sessionkit " + acp.Version
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				v += " (commit " + s.Value[:min(12, len(s.Value))] + ")"
			}
		}
	}
	return v
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// flagError makes a flag package error a usage error (help stays help),
// naming the flag as the help does (--name; the flag package says -name).
func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usagef("%s", flagName.ReplaceAllString(err.Error(), "$1--$2"))
}

// flagName finds the flags the flag package names in its errors.
var flagName = regexp.MustCompile(`(: |for flag |for )-([A-Za-z][\w-]*)`)
