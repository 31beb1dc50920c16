package controlplane

import "syscall"

// procAttr puts a child in its own process group, killed when the thread that started it
// exits (see spawner).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
