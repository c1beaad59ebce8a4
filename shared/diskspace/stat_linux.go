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
	// Block counts are in f_frsize units (what df uses; the kernel sets it
	// to f_bsize when a filesystem leaves it unset). f_bsize is only the
	// preferred I/O size here, larger on some FUSE filesystems; the BSDs
	// have no f_frsize and count in f_bsize, hence the two files.
	bs := uint64(st.Frsize)
	return Usage{Free: uint64(st.Bavail) * bs, Total: uint64(st.Blocks) * bs}, nil
}
