package webhook

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/claimbridge/claimbridge/api"
)

// apiCalls counts the fake API's actions of a verb on a resource.
func apiCalls(f *fixture, verb, resource string) int {
	n := 0
	for _, a := range f.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

// TestABurstIntoANewNamespaceCallsTheAPIOnce: the pods of a burst into a
// namespace the cache does not have yet, each translated to the same
// template the cache does not have yet either, read the namespace once
// and create the template once; a while later (the cache should have
// both by then) the next pod asks the API again.
func TestABurstIntoANewNamespaceCallsTheAPIOnce(t *testing.T) {
	var lookups atomic.Int32
	clock := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	f := newFixture(t, "l4-inference", func(f *fixture) {
		f.handler.Now = now
		f.handler.LookupNamespace = func(_ context.Context, name string) (*corev1.Namespace, error) {
			lookups.Add(1)
			// As slow as a read under load, so that the burst overlaps it.
			time.Sleep(20 * time.Millisecond)
			return namespaces(map[string]api.Mode{name: api.ModeEnforce})[name], nil
		}
	})
	admit := func(n int) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				req := request(t, admissionv1.Create, l4Pod("fresh"), false)
				req.UID = types.UID(fmt.Sprintf("uid-%d", i))
				if resp := f.handler.Handle(t.Context(), req); len(resp.Patches) == 0 {
					t.Errorf("pod %d not translated: %s", i, resp.Result.Message)
				}
			})
		}
		wg.Wait()
	}
	admit(16)
	if got := lookups.Load(); got != 1 {
		t.Errorf("namespace read %d times for a burst of 16, want once", got)
	}
	if c, g := apiCalls(f, "create", "resourceclaimtemplates"), apiCalls(f, "get", "resourceclaimtemplates"); c != 1 || g != 0 {
		t.Errorf("template created %d times and read %d times for a burst of 16, want created once", c, g)
	}
	mu.Lock()
	clock = clock.Add(ensuredTTL + lookupTTL)
	mu.Unlock()
	admit(1)
	if got := lookups.Load(); got != 2 {
		t.Errorf("namespace read %d times in all, want a second read once the first is old", got)
	}
	// The template exists: the second create finds it and reads it.
	if c, g := apiCalls(f, "create", "resourceclaimtemplates"), apiCalls(f, "get", "resourceclaimtemplates"); c != 2 || g != 1 {
		t.Errorf("template created %d and read %d times in all, want 2 and 1", c, g)
	}
}

// TestASlowAdmissionSaysWhereItsTimeWent: over the threshold, an
// admission is logged with its stages and counted by its slowest; under
// it, or with the threshold 0, it is only observed.
func TestASlowAdmissionSaysWhereItsTimeWent(t *testing.T) {
	for name, tc := range map[string]struct {
		threshold time.Duration
		wantSlow  bool
	}{
		"every admission is slow": {threshold: time.Nanosecond, wantSlow: true},
		"none is":                 {threshold: time.Hour},
		"never logged":            {threshold: 0},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "l4-inference", func(f *fixture) { f.handler.SlowAdmission = tc.threshold })
			var lines []string
			logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
			ctx := log.IntoContext(t.Context(), logger)
			if resp := f.handler.Handle(ctx, request(t, admissionv1.Create, l4Pod("prod"), false)); len(resp.Patches) == 0 {
				t.Fatalf("not translated: %s", resp.Result.Message)
			}
			slow := 0
			for _, s := range Stages() {
				slow += int(testutil.ToFloat64(f.metrics.SlowAdmissions.WithLabelValues(s.String())))
			}
			var logged []string
			for _, l := range lines {
				if strings.Contains(l, `"slow admission"`) {
					logged = append(logged, l)
				}
			}
			if !tc.wantSlow {
				if slow != 0 || len(logged) != 0 {
					t.Errorf("counted %d and logged %v, want neither", slow, logged)
				}
			} else {
				if slow != 1 || len(logged) != 1 {
					t.Fatalf("counted %d and logged %d lines, want one of each", slow, len(logged))
				}
				for _, want := range []string{`"outcome"="Translate"`, `"total"=`, `"slowest"=`, `"translate"=`, `"template"=`, `"gcCycles"=`} {
					if !strings.Contains(logged[0], want) {
						t.Errorf("the slow admission's line lacks %s: %s", want, logged[0])
					}
				}
			}
			// Every admission's stages are observed, whatever the threshold.
			for _, s := range []Stage{StageLookup, StageDecode, StageTranslate, StageTemplate, StageRespond} {
				var m dto.Metric
				if err := f.metrics.AdmissionStages.WithLabelValues(s.String()).(prometheus.Metric).Write(&m); err != nil {
					t.Fatal(err)
				}
				if m.GetHistogram().GetSampleCount() != 1 {
					t.Errorf("stage %s observed %d times, want once", s, m.GetHistogram().GetSampleCount())
				}
			}
			// And the whole admission, by its namespace's mode.
			for mode, want := range map[string]uint64{"enforce": 1, "audit": 0} {
				var m dto.Metric
				if err := f.metrics.AdmissionDuration.WithLabelValues(mode).(prometheus.Metric).Write(&m); err != nil {
					t.Fatal(err)
				}
				if got := m.GetHistogram().GetSampleCount(); got != want {
					t.Errorf("admissions in %s mode observed %d times, want %d", mode, got, want)
				}
			}
		})
	}
}
