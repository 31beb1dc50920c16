// Command benchratio reads `go test -bench` output and prints, as a Markdown
// table, the ratios listed in a ratios file: each benchmark against its
// baseline measured in the same run, with its goal. It never fails on a
// missed goal: a benchmark is a measurement, not an assertion.
//
//	go test -run '^$' -bench . ./... | go run ./hack/benchratio -ratios hack/benchratio/ratios.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op`)

type ratio struct {
	title, num, den string
	goal            float64
}

func main() {
	ratiosPath := flag.String("ratios", "hack/benchratio/ratios.txt", "ratios file: title | benchmark | baseline | goal")
	flag.Parse()
	results, raw, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(1)
	}
	ratios, err := readRatios(*ratiosPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	defer func() {
		if err := w.Flush(); err != nil {
			fmt.Fprintln(os.Stderr, "benchratio:", err)
			os.Exit(1)
		}
	}()
	fmt.Fprintln(w, "| measurement | benchmark | baseline | ratio | goal | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range ratios {
		n, okN := results[r.num]
		d, okD := results[r.den]
		if !okN || !okD || d == 0 {
			fmt.Fprintf(w, "| %s | %s | %s | not measured | ≤ %g | – |\n", r.title, r.num, r.den, r.goal)
			continue
		}
		q := n / d
		met := "yes"
		if q > r.goal {
			met = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.3g× | ≤ %g× | %s |\n", r.title, human(n), human(d), q, r.goal, met)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "<details><summary>raw go test -bench output</summary>")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "```")
	for _, l := range raw {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, "```")
	fmt.Fprintln(w, "</details>")
}

func parse(r io.Reader) (map[string]float64, []string, error) {
	out := map[string]float64{}
	var raw []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l := sc.Text()
		m := line.FindStringSubmatch(l)
		if m == nil {
			if strings.HasPrefix(l, "goos") || strings.HasPrefix(l, "goarch") || strings.HasPrefix(l, "cpu") {
				raw = append(raw, l)
			}
			continue
		}
		raw = append(raw, l)
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, nil, err
		}
		out[m[1]] = v
	}
	return out, raw, sc.Err()
}

func readRatios(path string) ([]ratio, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []ratio
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		parts := strings.Split(l, "|")
		if len(parts) != 4 {
			return nil, fmt.Errorf("%s:%d: want 'title | benchmark | baseline | goal'", path, i+1)
		}
		g, err := strconv.ParseFloat(strings.TrimSpace(parts[3]), 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: goal: %w", path, i+1, err)
		}
		out = append(out, ratio{strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1]), strings.TrimSpace(parts[2]), g})
	}
	return out, nil
}

func human(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3g s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	}
	return fmt.Sprintf("%.3g ns", ns)
}
