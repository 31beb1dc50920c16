// Package heartbeat tests hack/heartbeat.sh, the wrapper make test runs its
// long steps under: a silent command gets a line every interval, the
// command's output and exit code pass through unchanged; and that make
// test's long steps do run under it.
package heartbeat

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const script = "../heartbeat.sh"

// run runs the script with a one-second interval and returns its stdout,
// stderr and exit code.
func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), script, args...)
	cmd.Env = append(cmd.Environ(), "HEARTBEAT_INTERVAL=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", script, err)
	}
	return out.String(), errb.String(), code
}

var beat = regexp.MustCompile(`^(.+?): still running after \d+s \(no output for \d+s\)`)

func TestHeartbeat(t *testing.T) {
	tests := map[string]struct {
		stdin      string
		args       []string
		wantStdout string
		wantOther  []string // stderr lines that are not heartbeats
		wantBeats  bool
		wantCode   int
	}{
		"a command silent for 3 s gets heartbeats naming the step": {
			args:       []string{"silent step", "bash", "-c", "sleep 3; echo done"},
			wantStdout: "done\n",
			wantBeats:  true,
		},
		"a failing command's exit code and output pass through": {
			args:       []string{"fails", "bash", "-c", "echo out; echo why >&2; exit 7"},
			wantStdout: "out\n",
			wantOther:  []string{"why"},
			wantCode:   7,
		},
		"a failing command that was silent first still exits with its code": {
			args:      []string{"slow failure", "bash", "-c", "sleep 2.5; exit 3"},
			wantBeats: true,
			wantCode:  3,
		},
		"stdin reaches the command and a last line without a newline is kept": {
			stdin:      "abc\ndef",
			args:       []string{"cat", "cat"},
			wantStdout: "abc\ndef\n",
		},
		"a command that cannot start fails as bash does": {
			args:      []string{"missing", "/nonexistent/command"},
			wantOther: []string{"/nonexistent/command: No such file or directory"},
			wantCode:  127,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := run(t, tc.stdin, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tc.wantCode, stderr)
			}
			if diff := cmp.Diff(tc.wantStdout, stdout); diff != "" {
				t.Errorf("stdout (-want,+got):\n%s", diff)
			}
			var beats int
			var other []string
			for line := range strings.Lines(stderr) {
				line = strings.TrimSuffix(line, "\n")
				if m := beat.FindStringSubmatch(line); m != nil {
					beats++
					if m[1] != tc.args[0] {
						t.Errorf("heartbeat %q does not name the step %q", line, tc.args[0])
					}
					continue
				}
				other = append(other, line)
			}
			if tc.wantBeats && beats == 0 {
				t.Errorf("no heartbeat on stderr %q", stderr)
			}
			if !tc.wantBeats && beats > 0 {
				t.Errorf("%d heartbeats for a command that was not silent: %q", beats, stderr)
			}
			for i := range other {
				// bash names itself before the message: keep the message only.
				if _, msg, ok := strings.Cut(other[i], ": line "); ok {
					other[i] = msg[strings.Index(msg, ": ")+2:]
				}
			}
			if diff := cmp.Diff(tc.wantOther, other); diff != "" {
				t.Errorf("stderr besides heartbeats (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestHeartbeatToAnotherDescriptor: with HEARTBEAT_TO the command's output
// goes where it is redirected (a log nobody reads while it runs) and the
// lines go to the descriptor named, every interval although the command
// writes all the time.
func TestHeartbeatToAnotherDescriptor(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), "bash", "-c",
		`(HEARTBEAT_TO=3 `+script+` busy bash -c 'for i in 1 2 3 4 5 6; do echo log; sleep 0.5; done' 2>/dev/null) 3>&1 1>&2`)
	cmd.Env = append(cmd.Environ(), "HEARTBEAT_INTERVAL=1")
	var beats, logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &beats, &logs
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v (%s)", err, logs.String())
	}
	if got := strings.Count(logs.String(), "log\n"); got != 6 {
		t.Errorf("the command's output holds %d lines, want 6: %q", got, logs.String())
	}
	if !regexp.MustCompile(`(?m)^busy: still running after \ds$`).MatchString(beats.String()) {
		t.Errorf("no heartbeat on descriptor 3 while the command wrote to its log: %q", beats.String())
	}
}

// TestHeartbeatSaysWhatGoCompiles: while go build compiles, a heartbeat
// names a package it compiles, read from the compiler's command line.
func TestHeartbeatSaysWhatGoCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the runtime")
	}
	// -a compiles every package again, a fresh GOCACHE keeps the user's untouched.
	_, stderr, code := run(t, "", "gobuild", "env", "GOCACHE="+t.TempDir(), "go", "build", "-a", "-o", "/dev/null", "errors")
	if code != 0 {
		t.Fatalf("go build exited %d: %s", code, stderr)
	}
	if !regexp.MustCompile(`(?m)^gobuild: still running after .*: compiling \S`).MatchString(stderr) {
		t.Errorf("no heartbeat names a package being compiled:\n%s", stderr)
	}
}

// TestMakeTestStepsRunUnderHeartbeat: every go test, go run and
// long-running tool of the targets make test runs is wrapped in
// $(HEARTBEAT), so that none of them can sit silent for minutes.
func TestMakeTestStepsRunUnderHeartbeat(t *testing.T) {
	targets := []string{"unit", "deadcode", "e2e", "image", "bench-smoke"}
	recipes := map[string][]string{}
	for _, f := range []string{"../../Makefile", "../../e2e/Makefile.inc"} {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		target := ""
		joined := strings.ReplaceAll(string(text), "\\\n", " ")
		for line := range strings.Lines(joined) {
			if !strings.HasPrefix(line, "\t") {
				if name, _, ok := strings.Cut(line, ":"); ok && !strings.ContainsAny(name, " =\t#") {
					target = name
				} else if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#") {
					target = ""
				}
				continue
			}
			recipes[target] = append(recipes[target], line)
		}
	}
	long := regexp.MustCompile(`(\$\(GO\)|\bgo) (test|run)\b|\$\$dc `)
	for _, target := range targets {
		if len(recipes[target]) == 0 {
			t.Errorf("make %s: no recipe found (renamed?)", target)
		}
		var steps int
		for _, line := range recipes[target] {
			for _, m := range long.FindAllStringIndex(line, -1) {
				// The shell command the match is part of: what follows the last
				// separator before it.
				command := line[:m[0]]
				for _, sep := range []string{";", "&&", "||", "$$(", "| "} {
					if i := strings.LastIndex(command, sep); i >= 0 {
						command = command[i+len(sep):]
					}
				}
				if strings.HasPrefix(strings.TrimSpace(command), "echo ") {
					continue // says what it runs
				}
				steps++
				if !strings.Contains(command, "$(HEARTBEAT) ") {
					t.Errorf("make %s runs %q without $(HEARTBEAT) before it:\n%s", target, line[m[0]:m[1]], strings.TrimSpace(line))
				}
			}
		}
		if steps == 0 {
			t.Errorf("make %s: found no long step in its recipe", target)
		}
	}
}
