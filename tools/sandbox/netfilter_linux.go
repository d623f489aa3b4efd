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

// denySockets installs a seccomp filter that closes what Landlock's
// rules leave open. In every case it refuses (EPERM) to create a UNIX
// stream or seqpacket socket (Landlock restricts connecting to one made
// outside the sandbox from ABI 9 only, and through one a command could ask
// a service outside, D-Bus, systemd or Docker, to run anything: that is
// no network, and allowing the network does not allow it) and io_uring
// (whose socket operations bypass seccomp); a system call of another
// architecture or ABI (i386, x32) is refused too. Without network it also
// refuses an IPv4 or IPv6 socket that is a datagram or raw socket (UDP:
// Landlock restricts it from ABI 10 only) or a Multipath TCP one
// (IPPROTO_MPTCP, which Landlock does not restrict at all). The caller
// has set no_new_privs.
func denySockets(network bool) error {
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		and  = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		tax  = unix.BPF_MISC | unix.BPF_TAX
		txa  = unix.BPF_MISC | unix.BPF_TXA
		ret  = unix.BPF_RET | unix.BPF_K
		nr   = 0
		arch = 4
		arg0 = 16 // low 32 bits of args[0] (little endian)
		arg1 = 24
		arg2 = 32
	)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
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
		/* 8 */ f(jeq, 1, 0, unix.SYS_SOCKET),
		/* 9 */ f(ret, 0, 0, allow),
		/* 10 */ f(ld, 0, 0, arg1),
		/* 11 */ f(and, 0, 0, 0xf), // the type without SOCK_NONBLOCK, SOCK_CLOEXEC
		/* 12 */ f(tax, 0, 0, 0),
		/* 13 */ f(ld, 0, 0, arg0), // the domain
		/* 14 */ f(jeq, 0, 4, unix.AF_UNIX), // no: 19
		/* 15 */ f(txa, 0, 0, 0),
		/* 16 */ f(jeq, 9, 0, unix.SOCK_STREAM), // deny (26)
		/* 17 */ f(jeq, 8, 0, unix.SOCK_SEQPACKET), // deny (26)
		/* 18 */ f(ret, 0, 0, allow),
		/* 19 */ f(jeq, 1, 0, unix.AF_INET), // 21
		/* 20 */ f(jeq, 0, 6, unix.AF_INET6), // neither: allow (27)
		// AF_INET, AF_INET6: only TCP, which Landlock's rules govern
		// (an allow-list: UDP, raw, SCTP, Multipath TCP are refused).
		/* 21 */ f(txa, 0, 0, 0),
		/* 22 */ f(jeq, 0, 3, unix.SOCK_STREAM), // not a stream: deny (26)
		/* 23 */ f(ld, 0, 0, arg2), // the protocol
		/* 24 */ f(jeq, 2, 0, 0), // the default, TCP: allow (27)
		/* 25 */ f(jeq, 1, 0, unix.IPPROTO_TCP), // allow (27)
		/* 26 */ f(ret, 0, 0, deny),
		/* 27 */ f(ret, 0, 0, allow),
	}
	if network {
		// Every IPv4 and IPv6 socket; UNIX stream and seqpacket ones
		// still refused.
		prog = append(prog[:14],
			/* 14 */ f(jeq, 0, 3, unix.AF_UNIX), // no: allow (18)
			/* 15 */ f(txa, 0, 0, 0),
			/* 16 */ f(jeq, 2, 0, unix.SOCK_STREAM), // deny (19)
			/* 17 */ f(jeq, 1, 0, unix.SOCK_SEQPACKET), // deny (19)
			/* 18 */ f(ret, 0, 0, allow),
			/* 19 */ f(ret, 0, 0, deny),
		)
	}
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
