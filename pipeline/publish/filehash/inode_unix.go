//go:build unix

package filehash

import (
	"io/fs"
	"syscall"
)

// inode is the file's inode number: a file renamed into place has a new one.
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino) //nolint:unconvert // Ino is uint32 on some platforms
	}
	return 0
}
