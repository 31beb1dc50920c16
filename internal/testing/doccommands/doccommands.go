// Package doccommands reads the shell commands of the project's task pages
// so that a test can run them as a reader would. The convention it reads:
//
//   - A fenced block whose info string is sh holds commands; other blocks
//     (yaml, output, plain) are text. Each line is a command, or several
//     lines when a line ends with a backslash; blank lines and lines that
//     start with # are not commands. A fence may be indented (a block inside
//     a list item): the indentation is taken off its lines.
//   - The line right before the fence may hold one directive:
//     <!-- doc-test: skip (REASON) --> for a block that cannot run offline
//     (a live cluster, the network, a container engine, minutes of
//     control-plane start), where REASON is required; or
//     <!-- doc-test: exit N --> when the block's last command is meant to
//     exit with N (audit's --fail-on exits 1 when it finds something).
//
// A directive that is not one of these, or that does not stand right before
// an sh block, is a problem: a result, like a broken link. The package reads
// text and runs nothing.
package doccommands

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Block is one sh block of a page.
type Block struct {
	// Line is the line of the opening fence, from 1.
	Line int
	// Commands are the block's commands in order.
	Commands []Command
	// Skip is the reason the block is not run; empty when it is run.
	Skip string
	// Exit is the exit code the last command is meant to end with; every
	// other command is meant to exit 0.
	Exit int
}

// Command is one command of a block: a line, or the lines a backslash joins.
type Command struct {
	// Line is the command's first line, from 1.
	Line int
	// Text is the command as bash reads it, continuation lines included.
	Text string
}

// Problem is a directive the convention does not allow.
type Problem struct {
	// Line is the directive's line, from 1.
	Line int
	// Why says what is wrong with it.
	Why string
}

// String is the problem as line: why; the caller adds the file.
func (p Problem) String() string { return fmt.Sprintf("%d: %s", p.Line, p.Why) }

var (
	directive = regexp.MustCompile(`^<!--\s*doc-test:\s*(.*?)\s*-->$`)
	skip      = regexp.MustCompile(`^skip(?:\s*\((.*)\))?$`)
	exit      = regexp.MustCompile(`^exit\s+(\d+)$`)
)

// Parse returns the sh blocks of a Markdown page, with their directives,
// and the problems of its directives.
func Parse(text string) ([]Block, []Problem) {
	lines := strings.Split(text, "\n")
	var blocks []Block
	var problems []Problem
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if m := directive.FindStringSubmatch(trimmed); m != nil {
			if !opensSh(lines, i+1) {
				problems = append(problems, Problem{i + 1, "a doc-test directive must stand on the line right before a ```sh fence"})
			}
			continue
		}
		fence, info, ok := opening(lines[i])
		if !ok {
			continue
		}
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
		end := closing(lines, i+1, fence)
		if info == "sh" {
			b := Block{Line: i + 1, Commands: commands(lines[i+1:end], i+2, indent)}
			if i > 0 {
				if m := directive.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
					if p := b.apply(m[1]); p != "" {
						problems = append(problems, Problem{i, p})
					}
				}
			}
			blocks = append(blocks, b)
		}
		i = end
	}
	return blocks, problems
}

// apply sets the block's directive; the answer is the problem, if any.
func (b *Block) apply(d string) string {
	if m := skip.FindStringSubmatch(d); m != nil {
		b.Skip = strings.TrimSpace(m[1])
		if b.Skip == "" {
			return "a skipped block says why: <!-- doc-test: skip (REASON) -->"
		}
		return ""
	}
	if m := exit.FindStringSubmatch(d); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n > 255 {
			return fmt.Sprintf("exit %s is not an exit code", m[1])
		}
		b.Exit = n
		return ""
	}
	return fmt.Sprintf("unknown doc-test directive %q: skip (REASON) or exit N", d)
}

// opening reads a fence's opening line: the fence (``` or ~~~, three or
// more) and the first word of its info string.
func opening(line string) (fence, info string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 && !strings.HasPrefix(t, "```") && !strings.HasPrefix(t, "~~~") {
		return "", "", false
	}
	for _, c := range []string{"`", "~"} {
		n := len(t) - len(strings.TrimLeft(t, c))
		if n >= 3 {
			fields := strings.Fields(t[n:])
			if len(fields) > 0 {
				info = fields[0]
			}
			return t[:n], info, true
		}
	}
	return "", "", false
}

// closing is the index of the line that closes the fence opened before
// from, or len(lines) when the page ends first.
func closing(lines []string, from int, fence string) int {
	for j := from; j < len(lines); j++ {
		t := strings.TrimSpace(lines[j])
		if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
			return j
		}
	}
	return len(lines)
}

// opensSh says whether lines[i] opens an sh block.
func opensSh(lines []string, i int) bool {
	if i >= len(lines) {
		return false
	}
	_, info, ok := opening(lines[i])
	return ok && info == "sh"
}

// commands splits a block's lines (the first is line first of the page)
// into commands, with up to indent spaces taken off each line.
func commands(lines []string, first, indent int) []Command {
	var out []Command
	var cur *Command
	for k, l := range lines {
		l = strings.TrimPrefix(l, strings.Repeat(" ", min(indent, len(l)-len(strings.TrimLeft(l, " ")))))
		if cur != nil {
			cur.Text += "\n" + l
		} else {
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			out = append(out, Command{Line: first + k, Text: l})
			cur = &out[len(out)-1]
		}
		if !strings.HasSuffix(strings.TrimRight(l, " \t"), `\`) {
			cur = nil
		}
	}
	return out
}
