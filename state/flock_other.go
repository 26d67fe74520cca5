//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package state

import (
	"errors"
	"os"
)

var errNoFlock = errors.New("the File store needs flock(2), which this system does not have; use Memory or an etcd store")

func tryLock(f *os.File) (bool, error) {
	return false, &os.PathError{Op: "flock", Path: f.Name(), Err: errNoFlock}
}

func unlock(f *os.File) error {
	return &os.PathError{Op: "flock", Path: f.Name(), Err: errNoFlock}
}
