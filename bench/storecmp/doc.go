// Package storecmp compares the history stores on the operations a session
// makes durable, in one run so that the figures can be compared by ratio
// (docs/scale-out.md): one message appended, one compaction commit, and the
// durable writes per second and the write latency of 1, 16, 64 and 256
// sessions writing at once. The PostgreSQL side
// runs on a throwaway server (internal/pgtest), or on the server named by
// SESSIONKIT_TEST_POSTGRES_URL.
//
//	go test -run '^$' -bench . -benchtime 200x ./bench/storecmp/
package storecmp
