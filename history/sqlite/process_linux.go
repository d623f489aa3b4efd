//go:build linux

package sqlite

import (
	"os"
	"strings"

	"github.com/sessionkit/sessionkit/history/internal/leasing"
)

// whereAmI is what a lease row records of where its holder runs, and
// whether this process can judge a holder recorded there: on Linux the
// host name, the boot ID (/proc/sys/kernel/random/boot_id) and the PID
// namespace (/proc/self/ns/pid). A process ID means the same process only
// among processes that agree on all three; two containers that share a
// volume and a host name differ in their PID namespace. Without /proc
// nothing can be judged: every holder is treated as alive until its lease
// expires.
func whereAmI() (where string, checkable bool) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return leasing.Hostname() + " boot=? pidns=?", false
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return leasing.Hostname() + " boot=" + strings.TrimSpace(string(boot)) + " pidns=?", false
	}
	return leasing.Hostname() + " boot=" + strings.TrimSpace(string(boot)) + " pidns=" + ns, true
}
