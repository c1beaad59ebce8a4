//go:build !linux && !darwin && !freebsd

package diskspace

import (
	"errors"
	"fmt"
)

// Stat is not available on this platform: the guard admits every upload
// and health reports nothing about free space.
func Stat(dir string) (Usage, error) {
	return Usage{}, fmt.Errorf("statfs %s: %w", dir, errors.ErrUnsupported)
}
