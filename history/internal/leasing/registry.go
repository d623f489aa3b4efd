package leasing

import (
	"os"
	"sync"
	"time"
)

// DefaultTTL is how long a lease lives without being renewed unless the
// store is told otherwise.
const DefaultTTL = 15 * time.Second

// Hostname names this machine in the default holder names of leases.
func Hostname() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "unknown-host"
	}
	return host
}

// Registry is the set of live leases of one store, which the store's Close
// releases. The zero Registry is empty and open.
type Registry[L comparable] struct {
	mu     sync.Mutex
	leases map[L]struct{}
	closed bool
}

// Add records the new lease l, unless the store closed meanwhile: then it
// reports false, and the caller releases l itself.
func (r *Registry[L]) Add(l L) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	if r.leases == nil {
		r.leases = map[L]struct{}{}
	}
	r.leases[l] = struct{}{}
	return true
}

// Remove forgets l, released by its holder.
func (r *Registry[L]) Remove(l L) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.leases, l)
}

// Close returns the live leases, for the store's Close to release, and
// makes every later Add fail.
func (r *Registry[L]) Close() map[L]struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	leases := r.leases
	r.leases, r.closed = nil, true
	return leases
}
