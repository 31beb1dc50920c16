// Package doccommands runs every shell command of the task pages
// (docs/tasks/*.md) as a reader would, offline, with the convention of
// internal/testing/doccommands: each command of a ```sh block, in order,
// from a copy of the repository's examples/ (the commands' working
// directory, so whatever they write stays out of the repository), with a
// claimbridge built from this checkout first on PATH, HOME and TMPDIR in a
// temporary directory, no kubeconfig and no module proxy.
package doccommands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claimbridge/claimbridge/internal/testing/doccommands"
)

const root = "../.."

// timeout bounds one command: every command of the pages is an offline
// run over examples/, which takes seconds.
const timeout = 2 * time.Minute

// copied are the folders of the repository the commands may read, copied
// into the directory they run in.
var copied = []string{"examples"}

// TestTaskPagesRun: every command of docs/tasks/*.md exits as its page says
// (0 unless an exit directive says otherwise), or its block says why it
// cannot run offline.
func TestTaskPagesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds claimbridge and runs the pages' commands")
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "tasks", "*.md"))
	if err != nil || len(pages) < 5 {
		t.Fatalf("found the task pages %v (%v); the glob lost them", pages, err)
	}
	bin := build(t)
	for _, page := range pages {
		name := filepath.ToSlash(must(filepath.Rel(root, page)))
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			text, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			blocks, problems := doccommands.Parse(string(text))
			for _, p := range problems {
				t.Errorf("%s:%s", name, p)
			}
			env := environment(t, bin)
			dir := workdir(t)
			for _, b := range blocks {
				if b.Skip != "" {
					t.Logf("%s:%d: skipped: %s", name, b.Line, b.Skip)
					continue
				}
				for i, c := range b.Commands {
					want := 0
					if i == len(b.Commands)-1 {
						want = b.Exit
					}
					code, output := run(t, dir, env, c.Text)
					if code != want {
						t.Errorf("%s:%d: %s\nexited %d, want %d; its output:\n%s", name, c.Line, c.Text, code, want, tail(output, 30))
					}
				}
			}
		})
	}
}

// build builds claimbridge into a temporary directory and returns that
// directory, for PATH.
func build(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	args := []string{"build", "-o", filepath.Join(bin, "claimbridge")}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(t.Context(), "go", append(args, "./cmd/claimbridge")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/claimbridge: %v\n%s", err, out)
	}
	return bin
}

// environment is the commands' environment: this process's, with the
// built claimbridge first on PATH and nothing that reaches a cluster or the
// network.
func environment(t *testing.T, bin string) []string {
	t.Helper()
	home := t.TempDir()
	tmp := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "TMPDIR", "KUBECONFIG", "GOPROXY", "GOFLAGS":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home,
		"TMPDIR="+tmp,
		"KUBECONFIG="+filepath.Join(home, "no-cluster.kubeconfig"),
		"GOPROXY=off",
	)
}

// workdir is a temporary directory holding a copy of the folders the
// commands read: the repository's root as the commands see it.
func workdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range copied {
		if err := os.CopyFS(filepath.Join(dir, d), os.DirFS(filepath.Join(root, d))); err != nil {
			t.Fatalf("copy %s: %v", d, err)
		}
	}
	return dir
}

// run runs one command with bash (pipefail: a pipeline fails when any of
// its commands does) and returns its exit code and output.
func run(t *testing.T, dir string, env []string, command string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", command)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader("")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, fmt.Sprintf("%s\n(killed after %s)", out.String(), timeout)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String()
	case err != nil:
		t.Fatalf("run %q: %v", command, err)
	}
	return 0, out.String()
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
