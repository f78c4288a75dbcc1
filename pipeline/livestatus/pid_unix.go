//go:build unix

package livestatus

import (
	"errors"
	"syscall"
)

// pidAlive reports whether a process with this PID exists (signal 0 checks without sending).
// EPERM means it exists but belongs to another user.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
