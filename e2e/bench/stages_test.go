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
