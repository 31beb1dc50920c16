//go:build unix && !linux

package controlplane

import "syscall"

// procAttr puts a child in its own process group. Outside Linux there is no Pdeathsig: a
// control plane whose parent is killed without cleaning up outlives it, and the next run
// removes its files (sweepStaleDirs).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
