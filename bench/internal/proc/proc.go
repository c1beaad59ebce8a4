// Package proc reads what the benchmarks measure of a process.
package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is a process's resident set size and its peak (VmRSS and VmHWM
// of /proc/<pid>/status), in bytes; zeros when pid is 0 or unreadable.
func Memory(pid int) (rss, hwm int64) {
	if pid == 0 {
		return 0, 0
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, _ := strings.Cut(line, ":")
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch {
		case err != nil:
		case k == "VmRSS":
			rss = kb << 10
		case k == "VmHWM":
			hwm = kb << 10
		}
	}
	return rss, hwm
}
