package sqlstore

import (
	"context"
	"fmt"
)

// MigrationTx is one transaction of Migrate, as a store's driver runs it.
type MigrationTx interface {
	// Exec runs one statement (or, for a migration, a script).
	Exec(ctx context.Context, query string, args ...any) error
	// Version reads the schema version: 0 without one. Its error says
	// "schema: ".
	Version(ctx context.Context) (int, error)
	// Commit commits the transaction; current says that it found the
	// schema up to date and applied nothing.
	Commit(ctx context.Context, current bool) error
	// Rollback ends the transaction if it is still open.
	Rollback(ctx context.Context)
}

// Schema is how a store migrates its schema.
type Schema struct {
	// Migrations bring the schema forward: Migrations[i] takes it from
	// version i to i+1.
	Migrations []string
	// SetVersion inserts the version, its one argument, into the emptied
	// schema_version table.
	SetVersion string
	// Newer is the error of a schema at version, newer than the known
	// len(Migrations).
	Newer func(version, known int) error
	// Begin opens a transaction of the migration; its error says
	// "schema: ".
	Begin func(ctx context.Context) (MigrationTx, error)
}

// Migrate brings the schema up to len(Migrations), one transaction per
// migration together with the version update. Each transaction re-reads the
// version, so that stores migrating at once (the transactions serialize)
// apply each migration once.
func (s *Schema) Migrate(ctx context.Context) error {
	for {
		done, err := s.step(ctx)
		if err != nil || done {
			return err
		}
	}
}

// step applies the next migration, or reports that none is left.
func (s *Schema) step(ctx context.Context) (done bool, err error) {
	tx, err := s.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx)
	version, err := tx.Version(ctx)
	if err != nil {
		return false, err
	}
	switch {
	case version > len(s.Migrations):
		return false, s.Newer(version, len(s.Migrations))
	case version == len(s.Migrations):
		return true, tx.Commit(ctx, true)
	}
	if err := tx.Exec(ctx, s.Migrations[version]); err != nil {
		return false, fmt.Errorf("schema: migration to version %d: %w", version+1, err)
	}
	if err := tx.Exec(ctx, `DELETE FROM schema_version`); err != nil {
		return false, fmt.Errorf("schema: %w", err)
	}
	if err := tx.Exec(ctx, s.SetVersion, version+1); err != nil {
		return false, fmt.Errorf("schema: %w", err)
	}
	if err := tx.Commit(ctx, false); err != nil {
		return false, fmt.Errorf("schema: migration to version %d: %w", version+1, err)
	}
	return false, nil
}
