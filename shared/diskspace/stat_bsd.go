//go:build darwin || freebsd

package diskspace

import (
	"os"
	"syscall"
)

// Stat reads the usage of the filesystem holding dir with statfs(2).
func Stat(dir string) (Usage, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return Usage{}, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	bs := uint64(st.Bsize)
	return Usage{Free: uint64(st.Bavail) * bs, Total: uint64(st.Blocks) * bs}, nil
}
