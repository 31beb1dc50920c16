package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/claimbridge/claimbridge/webhook"
)

// stageTimes is where claimbridge's admissions spent their time, from its
// claimbridge_admission_stage_seconds (seconds per stage, summed) and
// claimbridge_slow_admissions_total (by slowest stage).
type stageTimes struct {
	spent, slow map[string]float64
}

func scrapeStages(text string) stageTimes {
	out := stageTimes{spent: map[string]float64{}, slow: map[string]float64{}}
	for _, line := range strings.Split(text, "\n") {
		var into map[string]float64
		switch {
		case strings.HasPrefix(line, "claimbridge_admission_stage_seconds_sum{"):
			into = out.spent
		case strings.HasPrefix(line, "claimbridge_slow_admissions_total{"):
			into = out.slow
		default:
			continue
		}
		_, rest, _ := strings.Cut(line, `stage="`)
		stage, rest, _ := strings.Cut(rest, `"`)
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			into[stage] += v
		}
	}
	return out
}

// plus adds the difference after - before to s.
func (s stageTimes) plus(after, before stageTimes) stageTimes {
	out := stageTimes{spent: maps.Clone(s.spent), slow: maps.Clone(s.slow)}
	if out.spent == nil {
		out.spent, out.slow = map[string]float64{}, map[string]float64{}
	}
	for k, v := range after.spent {
		out.spent[k] += v - before.spent[k]
	}
	for k, v := range after.slow {
		out.slow[k] += v - before.slow[k]
	}
	return out
}

// slowAdmission is one "slow admission" line of claimbridge's log.
type slowAdmission struct {
	total   time.Duration
	slowest string
	gc      int
	stages  map[string]time.Duration
}

// slowAdmissions reads the "slow admission" lines of claimbridge's JSON log.
func slowAdmissions(log string) []slowAdmission {
	var out []slowAdmission
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"slow admission"`) {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		s := slowAdmission{total: logDuration(m["total"]), stages: map[string]time.Duration{}}
		s.slowest, _ = m["slowest"].(string)
		if g, ok := m["gcCycles"].(float64); ok {
			s.gc = int(g)
		}
		for _, st := range webhook.Stages() {
			if d := logDuration(m[st.String()]); d > 0 {
				s.stages[st.String()] = d
			}
		}
		out = append(out, s)
	}
	return out
}

// logDuration reads a duration as zap writes it: seconds as a number, or
// Go's notation.
func logDuration(v any) time.Duration {
	switch x := v.(type) {
	case float64:
		return time.Duration(x * float64(time.Second))
	case string:
		d, _ := time.ParseDuration(x)
		return d
	}
	return 0
}

// writeStages writes where the admissions of the audit and enforce batches
// spent their time, and the slow ones.
func writeStages(w io.Writer, r apiserverResult) {
	fmt.Fprintln(w, "Where claimbridge's admissions spent their time (`claimbridge_admission_stage_seconds`, mean per pod admitted "+
		"in the namespace's batches), and the admissions over 100 ms (`--slow-admission`) by their slowest stage:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| stage | audit | enforce |")
	fmt.Fprintln(w, "|---|---|---|")
	per := func(cr creation, stage string) string {
		n := len(cr.latency.latencies)
		if n == 0 {
			return "–"
		}
		return dur(time.Duration(cr.stages.spent[stage] / float64(n) * float64(time.Second)))
	}
	for _, s := range webhook.Stages() {
		fmt.Fprintf(w, "| %s | %s | %s |\n", s, per(r.audit, s.String()), per(r.enforce, s.String()))
	}
	slowOf := func(cr creation) string {
		var parts []string
		n := 0.0
		for _, k := range slices.Sorted(maps.Keys(cr.stages.slow)) {
			if v := cr.stages.slow[k]; v > 0 {
				parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
				n += v
			}
		}
		if n == 0 {
			return "none"
		}
		return fmt.Sprintf("%.0f (%s)", n, strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "| **over 100 ms** | %s | %s |\n\n", slowOf(r.audit), slowOf(r.enforce))
	for _, c := range []struct {
		name string
		cr   creation
	}{{"audit", r.audit}, {"enforce", r.enforce}} {
		if len(c.cr.slow) == 0 {
			continue
		}
		worst := slices.SortedFunc(slices.Values(c.cr.slow), func(a, b slowAdmission) int { return int(b.total - a.total) })
		fmt.Fprintf(w, "The slowest %s admissions, from claimbridge's log:\n\n", c.name)
		for _, s := range worst[:min(len(worst), 5)] {
			var parts []string
			for _, st := range webhook.Stages() {
				if d := s.stages[st.String()]; d > 0 {
					parts = append(parts, st.String()+" "+dur(d))
				}
			}
			fmt.Fprintf(w, "- %s, slowest %s, %d GC cycles meanwhile: %s\n", dur(s.total), s.slowest, s.gc, strings.Join(parts, ", "))
		}
		fmt.Fprintln(w)
	}
}

// writeTail writes the tail of the admissions inside claimbridge
// (claimbridge_admission_duration_seconds, buckets ×1.5 apart: a quantile
// is interpolated inside its bucket, the max is its bucket's bound or, over
// --slow-admission, the slowest logged) beside the client's create latency.
func writeTail(w io.Writer, o options, r apiserverResult) {
	fmt.Fprintf(w, "The tail at %s nodes: the admissions inside claimbridge (`claimbridge_admission_duration_seconds`, quantiles "+
		"interpolated in buckets ×1.5 apart; the max is the bound of the highest bucket reached, or the slowest admission "+
		"claimbridge logged over 100 ms) and the pod creations as the bench client saw them (kube-apiserver, etcd and the "+
		"webhook call):\n\n", human(o.nodes))
	fmt.Fprintln(w, "| admissions | p50 | p99 | p99.9 | max |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, c := range []struct {
		name string
		cr   creation
	}{{"audit", r.audit}, {"enforce", r.enforce}} {
		q := func(p float64) string {
			if d, ok := c.cr.whole.quantile(p); ok {
				return dur(d)
			}
			return "–"
		}
		most := "–"
		if d, ok := c.cr.whole.maxBound(); ok {
			most = "≤ " + dur(d)
		}
		for _, s := range c.cr.slow {
			if s.total > 100*time.Millisecond {
				most = dur(slices.MaxFunc(c.cr.slow, func(a, b slowAdmission) int { return int(a.total - b.total) }).total)
				break
			}
		}
		fmt.Fprintf(w, "| claimbridge, %s | %s | %s | %s | %s |\n", c.name, q(0.5), q(0.99), q(0.999), most)
		l := c.cr.latency
		fmt.Fprintf(w, "| pod creation, %s | %s | %s | %s | %s |\n", c.name, dur(l.quantile(0.5)), dur(l.quantile(0.99)), dur(l.quantile(0.999)), dur(l.max()))
	}
	fmt.Fprintln(w)
}
