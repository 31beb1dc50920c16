// Package doclinks checks the links of the project's Markdown: a relative
// link names a file or folder that exists, and its #anchor names a heading
// of the target as GitHub makes its anchors (or an explicit <a id> or
// <a name>). External links are checked for their form only: nothing is
// fetched. Text in code fences and code spans holds no links. The checks
// read files and nothing else; a problem is a result, an error means a file
// could not be read.
package doclinks

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Problem is one broken link.
type Problem struct {
	// File is the linking file, relative to the root, slash-separated.
	File string
	// Line is the link's line in File, from 1.
	Line int
	// Link is the link as written.
	Link string
	// Why says what is wrong with it.
	Why string
}

// String is the problem as file:line: link: why, the way compilers point
// at a line.
func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Link, p.Why)
}

// Link is a link of a Markdown text.
type Link struct {
	// Line is the link's line, from 1.
	Line int
	// Target is the destination as written: a URL, a path, a path#anchor
	// or #anchor.
	Target string
}

var (
	// inline matches [text](dest) and ![alt](dest), with an optional title;
	// the text may hold one level of brackets ([`a[0]`](dest)).
	inline = regexp.MustCompile(`\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// definition matches a reference definition: [label]: dest
	definition = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(\S+)`)
	// htmlLink matches the href of <a> and the src of <img>.
	htmlLink = regexp.MustCompile(`<(?:a|img)\s[^>]*?(?:href|src)\s*=\s*"([^"]*)"`)
	// autolink matches <https://…>.
	autolink = regexp.MustCompile(`<(https?://[^>\s]*)>`)
	// heading matches an ATX heading and its text.
	heading = regexp.MustCompile(`^ {0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$`)
	// explicit matches <a id="…"> and <a name="…">.
	explicit = regexp.MustCompile(`<a\s[^>]*?(?:id|name)\s*=\s*"([^"]+)"`)
	// markdownLink is a link inside a heading, whose text is what shows.
	markdownLink = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)`)
	// tag is an HTML tag inside a heading.
	tag = regexp.MustCompile(`<[^>]*>`)
	// lineAnchor is GitHub's anchor of lines in a file that is not Markdown.
	lineAnchor = regexp.MustCompile(`^L[0-9]+(-L[0-9]+)?$`)
)

// lines returns the lines of text outside code fences, with their numbers
// (from 1); each line has its code spans blanked.
func lines(text string) (nums []int, out []string) {
	nums, out = unfenced(text)
	for i, line := range out {
		out[i] = blankCodeSpans(line)
	}
	return nums, out
}

// unfenced returns the lines of text outside code fences, as they are, with
// their numbers (from 1).
func unfenced(text string) (nums []int, out []string) {
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])) == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			n := len(trimmed) - len(strings.TrimLeft(trimmed, trimmed[:1]))
			fence = strings.Repeat(trimmed[:1], n)
			continue
		}
		nums = append(nums, i+1)
		out = append(out, line)
	}
	return nums, out
}

// blankCodeSpans replaces the code spans of a line — a run of backticks,
// text, and a run of as many — by spaces.
func blankCodeSpans(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		n := 0
		for i+n < len(line) && line[i+n] == '`' {
			n++
		}
		ticks := line[i : i+n]
		end := -1
		for j := i + n; j < len(line); {
			k := strings.Index(line[j:], ticks)
			if k < 0 {
				break
			}
			k += j
			if k+n == len(line) || line[k+n] != '`' {
				end = k
				break
			}
			for k < len(line) && line[k] == '`' {
				k++
			}
			j = k
		}
		if end < 0 {
			// An unmatched run of backticks is text.
			b.WriteString(ticks)
			i += n
			continue
		}
		b.WriteString(strings.Repeat(" ", end+n-i))
		i = end + n
	}
	return b.String()
}

// Links lists the links of a Markdown text in their order: inline links and
// images, reference definitions, <a href>, <img src> and autolinks, outside
// code fences and code spans.
func Links(text string) []Link {
	var out []Link
	nums, ls := lines(text)
	for i, line := range ls {
		for _, re := range []*regexp.Regexp{inline, definition, htmlLink, autolink} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				target := strings.TrimSuffix(strings.TrimPrefix(m[1], "<"), ">")
				out = append(out, Link{Line: nums[i], Target: target})
			}
		}
	}
	return out
}

// Slug is the anchor GitHub gives a heading: its text as shown (links'
// text, no HTML tags), lower case, with every character but letters,
// digits, marks, '-', '_' and spaces dropped, and spaces as dashes.
func Slug(text string) string {
	text = markdownLink.ReplaceAllString(text, "$1")
	text = tag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Anchors returns the anchors of a Markdown text: one per ATX heading
// outside code fences (a repeated slug gets -1, -2, … as on GitHub), and
// the id or name of every <a> tag.
func Anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	_, ls := lines(text)
	for _, line := range ls {
		for _, m := range explicit.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
	}
	// Headings are read again with their code spans, which show as text.
	_, raw := unfenced(text)
	for _, line := range raw {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[1])
		if n := seen[slug]; n > 0 {
			seen[slug]++
			slug += "-" + strconv.Itoa(n)
		} else {
			seen[slug] = 1
		}
		out[slug] = true
	}
	return out
}

// Check checks the links of files (slash-separated paths relative to
// root). skip, if not nil, leaves out the relative links whose target (a
// slash-separated path relative to root) it reports true for.
func Check(root string, files []string, skip func(target string) bool) ([]Problem, error) {
	c := checker{root: root, anchors: map[string]map[string]bool{}}
	var out []Problem
	for _, file := range files {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		c.anchors[file] = Anchors(string(data))
		for _, l := range Links(string(data)) {
			why, err := c.check(file, l.Target, skip)
			if err != nil {
				return nil, err
			}
			if why != "" {
				out = append(out, Problem{File: file, Line: l.Line, Link: l.Target, Why: why})
			}
		}
	}
	return out, nil
}

type checker struct {
	root string
	// anchors of the Markdown files read so far, by root-relative path.
	anchors map[string]map[string]bool
}

// check says what is wrong with one link of file, "" when nothing is.
func (c checker) check(file, target string, skip func(string) bool) (string, error) {
	if target == "" {
		return "empty link", nil
	}
	if strings.HasPrefix(target, "//") {
		return "a link without a scheme to another host", nil
	}
	u, err := url.Parse(target)
	if err != nil {
		return "malformed link: " + err.Error(), nil
	}
	switch u.Scheme {
	case "":
	case "http", "https":
		if u.Host == "" {
			return "malformed URL: no host", nil
		}
		return "", nil
	case "mailto":
		return "", nil
	default:
		return fmt.Sprintf("unknown scheme %q", u.Scheme), nil
	}

	// A relative link: a path (or none, this file) and an anchor.
	rel := file
	if u.Path != "" {
		if strings.HasPrefix(u.Path, "/") {
			rel = path.Clean(strings.TrimPrefix(u.Path, "/"))
		} else {
			rel = path.Join(path.Dir(file), u.Path)
		}
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "the target is outside the repository", nil
	}
	if skip != nil && skip(rel) {
		return "", nil
	}
	info, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(rel)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("no such file: %s", rel), nil
		}
		return "", fmt.Errorf("link %s of %s: %w", target, file, err)
	}
	anchor := u.Fragment
	if anchor == "" {
		return "", nil
	}
	switch {
	case info.IsDir():
		return fmt.Sprintf("an anchor on a folder: %s", rel), nil
	case !isMarkdown(rel):
		if lineAnchor.MatchString(anchor) {
			return "", nil
		}
		return fmt.Sprintf("%s is not Markdown: only line anchors (#L10, #L10-L20) are checked", rel), nil
	}
	anchors, ok := c.anchors[rel]
	if !ok {
		data, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(rel)))
		if err != nil {
			return "", fmt.Errorf("read %s: %w", rel, err)
		}
		anchors = Anchors(string(data))
		c.anchors[rel] = anchors
	}
	if !anchors[anchor] {
		return fmt.Sprintf("%s has no heading or <a id> #%s", rel, anchor), nil
	}
	return "", nil
}

func isMarkdown(p string) bool {
	ext := strings.ToLower(path.Ext(p))
	return ext == ".md" || ext == ".markdown"
}
