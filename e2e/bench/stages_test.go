package main

import (
	"bytes"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestSlowAdmissionsReadsServesLog: the lines claimbridge serve writes
// (controller-runtime's zap, JSON, as --log-format json) read back with
// their total, slowest stage, GC cycles and stages.
func TestSlowAdmissionsReadsServesLog(t *testing.T) {
	var buf bytes.Buffer
	logger := zap.New(zap.JSONEncoder(), zap.WriteTo(&buf))
	logger.Info("slow admission", "namespace", "ml", "name", "p", "total", 131*time.Millisecond, "slowest", "template",
		"gcCycles", uint64(2), "lookup", 12*time.Microsecond, "template", 127*time.Millisecond)
	logger.Info("something else", "total", time.Second)
	got := slowAdmissions(buf.String())
	if len(got) != 1 {
		t.Fatalf("read %d slow admissions from %q, want 1", len(got), buf.String())
	}
	s := got[0]
	if s.total != 131*time.Millisecond || s.slowest != "template" || s.gc != 2 ||
		s.stages["template"] != 127*time.Millisecond || s.stages["lookup"] != 12*time.Microsecond || len(s.stages) != 2 {
		t.Errorf("read %+v from %q", s, buf.String())
	}
}

// TestHistogramTail: quantiles are interpolated inside the bucket that
// holds the rank, the max is the bound of the highest bucket reached, and a
// histogram without samples (or with the rank past the last finite bound)
// gives none.
func TestHistogramTail(t *testing.T) {
	h := histogram{bounds: []string{"0.001", "0.002", "0.004", "+Inf"}, counts: []float64{50, 90, 100, 100}}
	for q, want := range map[float64]time.Duration{0.5: time.Millisecond, 0.7: 1500 * time.Microsecond, 0.95: 3 * time.Millisecond, 1: 4 * time.Millisecond} {
		if got, ok := h.quantile(q); !ok || got != want {
			t.Errorf("quantile(%v) = %v %v, want %v", q, got, ok, want)
		}
	}
	if got, ok := h.maxBound(); !ok || got != 4*time.Millisecond {
		t.Errorf("maxBound = %v %v, want 4ms", got, ok)
	}
	over := histogram{bounds: h.bounds, counts: []float64{50, 90, 99, 100}}
	if _, ok := over.quantile(0.999); ok {
		t.Error("a rank in the +Inf bucket has a quantile")
	}
	if _, ok := over.maxBound(); ok {
		t.Error("a sample in the +Inf bucket has a finite max")
	}
	if _, ok := (histogram{}).quantile(0.5); ok {
		t.Error("an empty histogram has a quantile")
	}
}
