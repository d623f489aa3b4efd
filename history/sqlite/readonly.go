package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
)

// ErrReadOnly is the error of every write of a Store opened with
// [OpenReadOnly] (Create, Append, Acquire, LogEvents, ...).
var ErrReadOnly = errors.New("sqlite: the store was opened read-only")

// ErrNotAStore reports a file that holds no sessionkit store: an empty
// file, or a database of another program.
var ErrNotAStore = errors.New("sqlite: not a sessionkit store")

// ErrNeedsImmutable reports a file in WAL mode that SQLite cannot read
// here without writing: the WAL index (the "-shm" file beside it) is
// missing and the directory does not let this process create it. Open it
// with [WithImmutable] to read what the main file holds.
var ErrNeedsImmutable = errors.New("sqlite: the store is in WAL mode and its WAL index (the -shm file beside it) is missing and cannot be created here")

// WithImmutable makes [OpenReadOnly] read the file as immutable (SQLite's
// immutable=1): no lock is taken and no file is created beside it, but
// changes still in the file's WAL (the "-wal" file beside it, not yet
// checkpointed into the main file) are not seen, and the file must not
// change while it is read. For a backup, or a store in a directory this
// process cannot write. [Open] ignores it.
func WithImmutable() Option {
	return func(o *options) { o.immutable = true }
}

// OpenReadOnly opens the existing SQLite store at path for reading only: it
// never creates the file, never migrates its schema, never takes a lease
// and writes nothing (every write fails with [ErrReadOnly]); SQLite itself
// may create the WAL index files ("-wal", "-shm") beside a store in WAL mode
// when the directory lets it, as every reader of such a file does. A store
// whose directory or file this process cannot write is read too; one in
// WAL mode that SQLite cannot read there fails with an error wrapping
// [ErrNeedsImmutable] (see [WithImmutable]).
//
// A file at the schema version of this package is read in place. One at an
// older version is read through a copy in memory, brought up to date there
// (the file is left as it is, for the older programs that may serve it);
// one at a newer version fails with an error wrapping [ErrNewerSchema] that
// names both versions, and a file that is no sessionkit store with one
// wrapping [ErrNotAStore]. Options other than [WithBusyTimeout],
// [WithReadConns] and [WithImmutable] have no effect. ReadLease reports the
// leases of the processes that serve the file.
func OpenReadOnly(path string, opts ...Option) (*Store, error) {
	o := newOptions(opts)
	if path == "" {
		return nil, errors.New("sqlite: open read-only: empty path")
	}
	if o.busyTimeout < 0 || o.readConns < 1 {
		return nil, fmt.Errorf("sqlite: open read-only: invalid options (busy timeout %v, read connections %d)", o.busyTimeout, o.readConns)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open read-only: %w", err)
	}
	switch fi, err := os.Stat(abs); {
	case err != nil:
		return nil, fmt.Errorf("sqlite: open read-only: %w", err)
	case fi.IsDir():
		return nil, fmt.Errorf("sqlite: open read-only: %s is a directory, not a SQLite file", path)
	}
	params := []string{"mode=ro", fmt.Sprintf("_pragma=busy_timeout(%d)", o.busyTimeout.Milliseconds()), "_pragma=query_only(1)"}
	if o.immutable {
		params = append(params, "immutable=1")
	}
	r, err := sql.Open("sqlite", dsn(abs, params...))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open read-only: %w", err)
	}
	r.SetMaxOpenConns(o.readConns)
	r.SetMaxIdleConns(o.readConns)
	var raw *rawReaders // Load's readers of the file, not of a copy
	version, err := storeVersion(r)
	if err != nil {
		if !o.immutable && needsImmutable(abs) {
			err = fmt.Errorf("%w (%v)", ErrNeedsImmutable, err)
		}
		err = notADatabase(err)
		return nil, errors.Join(fmt.Errorf("sqlite: open read-only %s: %w", path, err), r.Close())
	}
	switch known := len(migrations); {
	case version > known:
		return nil, errors.Join(fmt.Errorf("sqlite: open read-only %s: %w: file schema version %d, this version reads versions up to %d", path, ErrNewerSchema, version, known), r.Close())
	case version < known:
		mem, err := migratedCopy(r)
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: open read-only %s: a copy of its schema version %d brought to version %d: %w", path, version, known, err)
		}
		r = mem
	default:
		uri := []string{"mode=ro"}
		if o.immutable {
			uri = append(uri, "immutable=1")
		}
		if raw, err = openRawReaders(dsn(abs, uri...), o.busyTimeout, o.readConns); err != nil {
			return nil, errors.Join(fmt.Errorf("sqlite: open read-only %s: %w", path, err), r.Close())
		}
	}
	host, checkable := whereAmI()
	return &Store{db: &db{
		path: abs, c: readOnlyCommitter(), r: r, raw: raw, st: sqlstore.NewState("sqlite", true),
		ttl: o.ttl, holder: o.holder, host: host, pid: os.Getpid(), checkable: checkable,
	}}, nil
}

// storeVersion reads the schema version of the store behind r; a file
// without a schema_version table is not a store.
func storeVersion(r *sql.DB) (int, error) {
	ctx := context.Background()
	var tables int
	if err := r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'`).Scan(&tables); err != nil {
		return 0, err
	}
	if tables == 0 {
		return 0, fmt.Errorf("%w: the file has no schema version (an empty file, or the database of another program)", ErrNotAStore)
	}
	v, err := schemaVersion(ctx, r)
	if err == nil && v == 0 {
		err = fmt.Errorf("%w: the file's schema version is 0", ErrNotAStore)
	}
	return v, err
}

// needsImmutable reports whether the file at path, which SQLite failed to
// read, is in WAL mode (its header says so) with no WAL index beside it:
// SQLite cannot read it here without immutable=1.
func needsImmutable(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	header := make([]byte, 20)
	if _, err := io.ReadFull(f, header); err != nil || header[18] != 2 || header[19] != 2 {
		return false
	}
	// Had SQLite been able to create the index, the open would not have
	// failed for it.
	_, err = os.Stat(path + "-shm")
	return errors.Is(err, fs.ErrNotExist)
}

// migratedCopy copies the database behind r into memory and brings the
// copy's schema up to date; the copy is the returned pool's one connection.
func migratedCopy(r *sql.DB) (*sql.DB, error) {
	ctx := context.Background()
	var image []byte
	conn, err := r.Conn(ctx)
	if err != nil {
		return nil, err
	}
	err = conn.Raw(func(dc any) error {
		s, ok := dc.(interface{ Serialize() ([]byte, error) })
		if !ok {
			return errors.New("the driver cannot copy a database")
		}
		image, err = s.Serialize()
		return err
	})
	if cerr := conn.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if len(image) < 100 {
		return nil, errors.New("the database is empty")
	}
	image[18], image[19] = 1, 1 // a copy in memory has no WAL
	mem, err := sql.Open("sqlite", "file::memory:?_pragma=foreign_keys(1)")
	if err != nil {
		return nil, err
	}
	// One connection, kept for the pool's life: it is the copy.
	mem.SetMaxOpenConns(1)
	mem.SetMaxIdleConns(1)
	mem.SetConnMaxLifetime(0)
	mem.SetConnMaxIdleTime(0)
	conn, err = mem.Conn(ctx)
	if err == nil {
		err = conn.Raw(func(dc any) error {
			d, ok := dc.(interface{ Deserialize([]byte) error })
			if !ok {
				return errors.New("the driver cannot load a database copy")
			}
			return d.Deserialize(image)
		})
		if cerr := conn.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = migrate(mem, migrations)
	}
	if err == nil {
		_, err = mem.ExecContext(ctx, `PRAGMA query_only = 1`)
	}
	if err != nil {
		return nil, errors.Join(err, mem.Close())
	}
	return mem, nil
}

// readOnlyCommitter is the committer of a Store opened read-only: it runs
// no goroutine and refuses every write with ErrReadOnly.
func readOnlyCommitter() *committer {
	c := &committer{quit: make(chan struct{}), stopped: make(chan struct{}), readOnly: true}
	close(c.stopped)
	return c
}
