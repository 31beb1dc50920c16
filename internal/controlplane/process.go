//go:build unix

package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// component is one control-plane process. Its stdout and stderr go to a log file.
type component struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File

	exited  chan struct{}
	waitErr error // valid once exited is closed
}

// spawner starts every child process from one goroutine that is locked to its OS thread and
// never returns. Pdeathsig fires when the thread that forked the child exits, not when the
// process does; a dedicated thread that lives as long as the process makes it mean "kill the
// control plane when this process dies", even on a panic or a timeout that skips every
// cleanup.
var spawner struct {
	once sync.Once
	reqs chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func spawn(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
			for req := range spawner.reqs {
				req.done <- req.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.reqs <- spawnRequest{cmd: cmd, done: done}
	return <-done
}

// startComponent runs bin with args in its own process group, logging to logPath. env is
// added to the current environment.
func startComponent(name, bin, logPath string, args, env []string) (*component, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = procAttr()
	if err := spawn(cmd); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &component{name: name, cmd: cmd, logPath: logPath, logFile: logFile, exited: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(c.exited)
	}()
	return c, nil
}

// running reports an error if the process has exited.
func (c *component) running() error {
	select {
	case <-c.exited:
		if c.waitErr != nil {
			return fmt.Errorf("%s exited: %w", c.name, c.waitErr)
		}
		return fmt.Errorf("%s exited", c.name)
	default:
		return nil
	}
}

// stop sends SIGTERM to the process group, waits up to grace for the process to exit and then
// kills the group. It returns once the process is gone.
func (c *component) stop(grace time.Duration) {
	pgid := c.cmd.Process.Pid
	select {
	case <-c.exited:
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // leftovers in the group, if any
		return
	default:
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-c.exited:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return
	case <-timer.C:
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		// A process that survives SIGKILL for this long is stuck in the kernel; nothing more
		// can be done from here.
	}
}

// readLog returns the log from offset on, at most maxBytes of its end (0: all of it).
func (c *component) readLog(offset, maxBytes int64) string {
	f, err := os.Open(c.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)\n", err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(no log: %v)\n", err)
	}
	size := fi.Size()
	truncated := false
	if maxBytes > 0 && size-offset > maxBytes {
		offset = size - maxBytes
		truncated = true
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return fmt.Sprintf("(no log: %v)\n", err)
	}
	data, err := io.ReadAll(f)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Sprintf("(read log: %v)\n", err)
	}
	if truncated {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
		return "(earlier lines left out)\n" + string(data)
	}
	return string(data)
}

// logContains reports whether the log contains s.
func (c *component) logContains(s string) bool {
	data, err := os.ReadFile(c.logPath)
	return err == nil && strings.Contains(string(data), s)
}

// Process is a process of the control plane or one started by (*Cluster).StartProcess.
type Process struct {
	// Name of the process (a component's name, or the name given to StartProcess).
	Name string
	// Path and Args it was started with (Args without the program's name).
	Path string
	Args []string
	// LogPath is the file the process logs to, with the other processes of its name
	// (appended to).
	LogPath string

	comp *component
}

func newProcess(c *component) *Process {
	return &Process{Name: c.name, Path: c.cmd.Path, Args: c.cmd.Args[1:], LogPath: c.logPath, comp: c}
}

// Stop stops the process (SIGTERM to its group, SIGKILL after 15 seconds) and waits for it.
func (p *Process) Stop() { p.comp.stop(15 * time.Second) }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.comp.exited }

// Pid returns the process id.
func (p *Process) Pid() int { return p.comp.cmd.Process.Pid }

// LogSince returns what the process logged from offset on, at most about maxBytes of its end
// (0: no limit).
func (p *Process) LogSince(offset, maxBytes int64) string { return p.comp.readLog(offset, maxBytes) }
