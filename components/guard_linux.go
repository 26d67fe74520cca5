//go:build linux

package components

import (
	"os"
	"path/filepath"
	"strconv"
)

// holders lists the processes other than this one that have f's file
// open, reading /proc: every process's descriptors, compared by device
// and inode. Processes of other users, whose descriptors this one cannot
// read, are not listed. found is false when /proc cannot be read.
func holders(f *os.File) (pids []int, found bool) {
	want, err := f.Stat()
	if err != nil {
		return nil, false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	self := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // exited, or not ours to read
		}
		for _, fd := range fds {
			if fi, err := os.Stat(filepath.Join(dir, fd.Name())); err == nil && os.SameFile(fi, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, true
}
