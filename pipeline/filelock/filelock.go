// Package filelock takes advisory locks on a file (flock(2)): shared by the many holders that
// may work together, exclusive for one that must be alone. The kernel releases a lock when
// its process dies, so a killed holder never leaves one behind. Every attempt fails at once
// (ErrHeld) instead of waiting.
package filelock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ErrHeld: another process (or another Lock in this one) holds the lock in a conflicting mode.
var ErrHeld = errors.New("the lock is held")

// Lock is a held lock on a file.
type Lock struct {
	f *os.File
}

// TryShared takes a shared lock on path (created if absent), or fails with ErrHeld while an
// exclusive lock is held.
func TryShared(path string) (*Lock, error) { return try(path, false) }

// TryExclusive takes an exclusive lock on path (created if absent), or fails with ErrHeld
// while any other lock is held.
func TryExclusive(path string) (*Lock, error) { return try(path, true) }

func try(path string, exclusive bool) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		f, err = os.Open(path) // flock needs no write access: a read-only lock file still locks
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := flock(f, exclusive); err != nil {
		_ = f.Close() // nothing held
		if errors.Is(err, ErrHeld) {
			return nil, err
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Release gives the lock back; it is safe to call more than once.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = unlock(l.f) // closing the file releases it too
	_ = l.f.Close()
	l.f = nil
}
