//go:build unix

package store

import (
	"errors"
	"syscall"
)

// pidAlive reports whether a process with the id exists on this host. A
// process of another user (EPERM) exists.
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
