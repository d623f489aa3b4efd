//go:build !linux

package sandbox

import (
	"errors"
	"runtime"
)

// helperSupported: elsewhere the shell runs directly.
const helperSupported = false

func kernelStatus() Status {
	return Status{Reason: "Landlock is Linux only, and this is " + runtime.GOOS}
}

func supervise([]string) int { return helperFail(errors.New("the sandbox helper runs on Linux only")) }

func confine([]string) int { return helperFail(errors.New("the sandbox helper runs on Linux only")) }

func initStage([]string) int { return helperFail(errors.New("the sandbox helper runs on Linux only")) }

func probe() int { return 1 }

func namespaces() string { return "namespaces are Linux only" }

func agentID() string { return "" }
