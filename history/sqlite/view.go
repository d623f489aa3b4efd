package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"

	sqlite3 "modernc.org/sqlite/lib"
)

// The reads of a replay (Entries, Timeline, Events), of Search and of
// Window run their statements through a querier: on the store's raw
// readers (rawread.go) when it has them, as Load does, otherwise in a read
// transaction of database/sql. A replay reads every message and logged
// event of its range: through the raw readers each row costs what it costs
// SQLite, not the driver's and database/sql's locking and boxing besides.
// A search runs some thirty statements, which the raw readers keep
// prepared.

// rowScanner is one row of a result: *sql.Rows, or a rawRow.
type rowScanner interface {
	Scan(dest ...any) error
}

// querier runs a query of one read transaction and calls scan for every
// row of its result; its errors are wrapped for the operation.
type querier interface {
	query(query string, args []any, scan func(row rowScanner) error) error
}

// view runs fn with a querier of one read transaction: every statement
// fn runs sees the same committed state.
func (s *Store) view(ctx context.Context, op string, fn func(q querier) error) error {
	if s.raw == nil {
		return s.read(ctx, op, func(tx *sql.Tx) error { return fn(txQuerier{s: s, ctx: ctx, tx: tx, op: op}) })
	}
	if err := s.admit(ctx); err != nil {
		return err
	}
	var ferr error
	err := s.raw.read(ctx, func(r *rawReader) error {
		ferr = fn(rawQuerier{s: s, ctx: ctx, r: r, op: op})
		return ferr
	})
	if ferr != nil {
		return ferr
	}
	if err != nil {
		return s.fail(ctx, op, err)
	}
	return nil
}

// txQuerier is a read transaction of database/sql.
type txQuerier struct {
	s   *Store
	ctx context.Context
	tx  *sql.Tx
	op  string
}

func (q txQuerier) query(query string, args []any, scan func(row rowScanner) error) error {
	return q.s.each(q.ctx, q.tx, q.op, query, args, func(rows *sql.Rows) error { return scan(rows) })
}

// rawQuerier is a read transaction of a raw reader.
type rawQuerier struct {
	s   *Store
	ctx context.Context
	r   *rawReader
	op  string
}

func (q rawQuerier) query(query string, args []any, scan func(row rowScanner) error) error {
	st, err := q.r.stmt(query, args...)
	if err != nil {
		return q.s.fail(q.ctx, q.op, err)
	}
	defer st.reset()
	for n := 1; ; n++ {
		ok, err := st.step()
		if err != nil {
			return q.s.fail(q.ctx, q.op, err)
		}
		if !ok {
			return nil
		}
		if n%1024 == 0 {
			if err := q.ctx.Err(); err != nil {
				return q.s.fail(q.ctx, q.op, err)
			}
		}
		if err := scan(rawRow{st}); err != nil {
			return q.s.fail(q.ctx, q.op, err)
		}
	}
}

// queryRow runs a query of one row through q and scans it into dest;
// sql.ErrNoRows when there is none.
func queryRow(q querier, query string, args []any, dest ...any) error {
	found := false
	err := q.query(query, args, func(row rowScanner) error {
		found = true
		return row.Scan(dest...)
	})
	if err == nil && !found {
		return sql.ErrNoRows
	}
	return err
}

// existsIn is exists through q.
func (s *Store) existsIn(ctx context.Context, q querier, op, id string) (activeFrom int64, err error) {
	err = queryRow(q, `SELECT active_from FROM sessions WHERE id = ?`, []any{id}, &activeFrom)
	if err := s.found(ctx, op, id, err); err != nil {
		return 0, err
	}
	return activeFrom, nil
}

// rawRow is the current row of a raw statement. Its Scan takes the
// destinations the store's reads use: strings (and types of kind
// string), int64s, ints, float64s, byte slices (and json.RawMessage), sql.NullInt64, sql.NullString and
// sql.Scanners; values are copied out of SQLite's memory.
type rawRow struct{ st rawStmt }

func (r rawRow) Scan(dest ...any) error {
	for i, d := range dest {
		col := int32(i)
		null := sqlite3.Xsqlite3_column_type(r.st.r.tls, r.st.p, col) == sqlite3.SQLITE_NULL
		switch d := d.(type) {
		case *string:
			*d = r.st.text(col)
		case *int64:
			*d = r.st.int64(col)
		case *int:
			*d = int(r.st.int64(col))
		case *seqColumn: // as its Scan, without boxing the value
			n := r.st.int64(col)
			if null || n < 0 {
				return fmt.Errorf("column %d: sequence number column holds %d", i, n)
			}
			*d = seqColumn(n)
		case *float64:
			*d = sqlite3.Xsqlite3_column_double(r.st.r.tls, r.st.p, col)
		case *sql.RawBytes: // SQLite's memory, valid until the next row
			*d = r.st.mem(col)
		case *[]byte:
			*d = r.st.bytes(col)
		case *json.RawMessage:
			*d = r.st.bytes(col)
		case *sql.NullInt64:
			*d = sql.NullInt64{Int64: r.st.int64(col), Valid: !null}
		case *sql.NullString:
			*d = sql.NullString{String: r.st.text(col), Valid: !null}
		case sql.Scanner:
			var v any
			switch sqlite3.Xsqlite3_column_type(r.st.r.tls, r.st.p, col) {
			case sqlite3.SQLITE_INTEGER:
				v = r.st.int64(col)
			case sqlite3.SQLITE_TEXT:
				v = r.st.text(col)
			case sqlite3.SQLITE_BLOB:
				v = r.st.bytes(col)
			case sqlite3.SQLITE_NULL:
			default:
				return fmt.Errorf("column %d: a type the store does not read", i)
			}
			if err := d.Scan(v); err != nil {
				return fmt.Errorf("column %d: %w", i, err)
			}
		default:
			v := reflect.ValueOf(d)
			if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.String {
				return fmt.Errorf("column %d: cannot scan into %T", i, d)
			}
			v.Elem().SetString(r.st.text(col))
		}
	}
	return nil
}
