//go:build !unix

package filelock

import "os"

// Without flock(2) the lock is not taken: sitewatch runs on Linux and macOS.
func flock(*os.File, bool) error { return nil }

func unlock(*os.File) error { return nil }
