//go:build linux && (amd64 || arm64)

package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// auditArch is the seccomp architecture of this build.
var auditArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]

// socketFamilies are the address families of the sockets a command may
// make with socket(2), without and with network: none without (Landlock
// ABI 7 cannot keep a pathname UNIX socket from connecting or sending to
// one made outside the sandbox, so no UNIX socket either), IPv4 and IPv6
// with (Landlock's TCP rules are then off). Netlink, packet, vsock and
// every other family are never allowed.
func socketFamilies(network bool) []uint32 {
	if network {
		return []uint32{unix.AF_INET, unix.AF_INET6}
	}
	return nil
}

// denySockets installs a seccomp filter that closes what Landlock's
// rules leave open: socket(2) is allowed only for the families of
// [socketFamilies] (EACCES otherwise), socketpair(2) only for AF_UNIX (a
// connected pair reaches nothing outside the command), io_uring never
// (its socket operations bypass seccomp), and a system call of another
// architecture or ABI (i386, x32) is refused (EPERM). The caller has set
// no_new_privs.
func denySockets(network bool) error {
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		nr   = 0
		arch = 4
		arg0 = 16 // low 32 bits of args[0] (little endian): the domain
	)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	refuse := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)) // a socket: "permission denied", as socket(2) documents
	f := func(code uint16, jt, jf uint8, k uint32) unix.SockFilter {
		return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
	}
	// A jump goes to the instruction 1+jt (or 1+jf) after it.
	prog := []unix.SockFilter{
		/* 0 */ f(ld, 0, 0, arch),
		/* 1 */ f(jeq, 1, 0, auditArch),
		/* 2 */ f(ret, 0, 0, deny), // another architecture
		/* 3 */ f(ld, 0, 0, nr),
		/* 4 */ f(jge, 0, 1, 0x40000000),
		/* 5 */ f(ret, 0, 0, deny), // x32
		/* 6 */ f(jeq, 0, 1, unix.SYS_IO_URING_SETUP),
		/* 7 */ f(ret, 0, 0, deny),
		/* 8 */ f(jeq, 0, 4, unix.SYS_SOCKETPAIR), // no: 13
		/* 9 */ f(ld, 0, 0, arg0),
		/* 10 */ f(jeq, 0, 1, unix.AF_UNIX),
		/* 11 */ f(ret, 0, 0, allow),
		/* 12 */ f(ret, 0, 0, refuse),
		/* 13 */ f(jeq, 1, 0, unix.SYS_SOCKET), // 15
		/* 14 */ f(ret, 0, 0, allow), // any other call
		/* 15 */ f(ld, 0, 0, arg0),
	}
	// 16…: one test per allowed family, each jumping to the allow at
	// the end; the refuse before it.
	families := socketFamilies(network)
	for i, family := range families {
		prog = append(prog, f(jeq, uint8(len(families)-i), 0, family))
	}
	prog = append(prog, f(ret, 0, 0, refuse), f(ret, 0, 0, allow))
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	tid, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	switch {
	case errno != 0:
		return fmt.Errorf("seccomp: %w", errno)
	case tid != 0: // TSYNC names the thread it could not synchronize
		return fmt.Errorf("seccomp: thread %d could not take the filter", tid)
	}
	return nil
}
