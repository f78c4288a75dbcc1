//go:build !unix

package livestatus

import "os"

// pidAlive cannot check a PID without signals; FindProcess succeeds for live processes on
// Windows, the only other platform sitewatch builds on.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
