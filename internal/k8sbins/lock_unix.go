//go:build unix

package k8sbins

import (
	"os"
	"syscall"
)

// lockFile holds an exclusive lock on f (flock, as hack/lib.sh takes it) until f is closed.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
