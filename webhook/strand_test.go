package webhook

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/translate"
)

// TestHandlerNeverStrandsAPod: pods that a translation would leave Pending
// with an unallocated claim are admitted exactly as submitted in an enforce
// namespace, with the reason in the metrics (and a warning when the pod is
// kept legacy); the HAMi profile translates HAMi's gpumem on a HAMi fleet.
func TestHandlerNeverStrandsAPod(t *testing.T) {
	hami := func(f *fixture) {
		p, err := translate.ProfilePolicy("nvidia", "hami")
		if err != nil {
			t.Fatal(err)
		}
		f.handler.Policy = func() *translate.Policy { return p }
	}
	keepAbove := func(f *fixture) {
		p, err := translate.LoadPolicy([]byte("apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nspec:\n  profiles: [nvidia]\n  preemption: {keepLegacyAbovePriority: 0}\n"))
		if err != nil {
			t.Fatal(err)
		}
		f.handler.Policy = func() *translate.Policy { return p }
	}
	gpu := func(name string) *builders.PodWrapper {
		return builders.MakePod(name, "prod").Container("app").Limit("nvidia.com/gpu", "1")
	}
	cases := map[string]struct {
		fleet        string
		mutate       func(*fixture)
		pod          *corev1.Pod
		wantPatched  bool
		wantWarnings []string // substrings, in order
		wantMetric   []string // mode, outcome, reason
		check        func(t *testing.T, pod *corev1.Pod)
	}{
		"a GPU pod bound at creation (spec.nodeName) is kept legacy, and told that its node will refuse it": {
			fleet: "l4-inference", pod: gpu("pinned").NodeName("l4-inference-0").Obj(),
			wantWarnings: []string{"NodeNamePreset: kept as submitted", "LegacyUnservable: make the pod translatable (see why it is not), ask for what nodes offer, or restore the device plugin; no node offers nvidia.com/gpu any more (DRA replaced the device plugin); the kubelet"},
			wantMetric:   []string{"enforce", "KeepLegacy", "NodeNamePreset"},
		},
		"a GPU pod for a scheduler the policy does not list is kept legacy, and told that it stays Pending": {
			fleet: "l4-inference", pod: gpu("batch").SchedulerName("volcano").Obj(),
			wantWarnings: []string{"SchedulerNotListed: kept as submitted", "LegacyUnservable: make the pod translatable (see why it is not), ask for what nodes offer, or restore the device plugin; no node offers nvidia.com/gpu any more (DRA replaced the device plugin); this pod stays Pending"},
			wantMetric:   []string{"enforce", "KeepLegacy", "SchedulerNotListed"},
		},
		"HAMi's gpumem without the hami profile keeps the pod legacy": {
			fleet: "l4-inference", pod: gpu("hami").Limit("nvidia.com/gpumem", "4000").Obj(),
			wantWarnings: []string{"UnmappedCompanionResource: kept as submitted"},
			wantMetric:   []string{"enforce", "KeepLegacy", "UnmappedCompanionResource"},
		},
		"a time-sliced GPU replica keeps the pod legacy where no GPU publishes shares": {
			fleet:        "l4-inference",
			pod:          builders.MakePod("shared", "prod").Container("app").Limit("nvidia.com/gpu.shared", "1").Obj(),
			wantWarnings: []string{"SharesUnavailable: kept as submitted"},
			wantMetric:   []string{"enforce", "KeepLegacy", "SharesUnavailable"},
		},
		"a -SHARED product keeps the pod legacy where no GPU publishes shares": {
			fleet: "l4-inference", pod: gpu("shared-product").NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4-SHARED").Obj(),
			wantWarnings: []string{"SharesUnavailable: kept as submitted"},
			wantMetric:   []string{"enforce", "KeepLegacy", "SharesUnavailable"},
		},
		"a shared RDMA NIC keeps the pod legacy": {
			fleet: "dgx-h100", pod: gpu("mpi").Limit("rdma/hca_shared_devices_a", "1").Obj(),
			wantWarnings: []string{"SharedDeviceNotMapped: kept as submitted"},
			wantMetric:   []string{"enforce", "KeepLegacy", "SharedDeviceNotMapped"},
		},
		"a pod that may preempt is translated with the warning": {
			fleet: "l4-inference", pod: gpu("urgent").Priority(1000).Obj(), wantPatched: true,
			wantWarnings: []string{"claimbridge: Translated: uses ResourceClaimTemplate", "PreemptionLost"},
			wantMetric:   []string{"enforce", "Translate", "Translated"},
		},
		"a pod that may preempt is kept legacy above keepLegacyAbovePriority": {
			fleet: "l4-inference", mutate: keepAbove, pod: gpu("urgent").Priority(1000).Obj(),
			wantWarnings: []string{"PreemptionLost: kept as submitted"},
			wantMetric:   []string{"enforce", "KeepLegacy", "PreemptionLost"},
		},
		"HAMi's gpumem with the hami profile on a HAMi fleet is translated to capacity requests": {
			fleet: "hami-t4", mutate: hami, pod: gpu("hami").Limit("nvidia.com/gpumem", "4000").Obj(), wantPatched: true,
			wantWarnings: []string{"claimbridge: Translated: uses ResourceClaimTemplate", "ExtendedResourceMappedByClass"},
			wantMetric:   []string{"enforce", "Translate", "Translated"},
			check: func(t *testing.T, pod *corev1.Pod) {
				if _, ok := pod.Spec.Containers[0].Resources.Limits["nvidia.com/gpumem"]; ok {
					t.Error("nvidia.com/gpumem is still in the limits")
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.fleet, tc.mutate)
			req := request(t, admissionv1.Create, tc.pod, false)
			resp := f.handler.Handle(t.Context(), req)
			if !resp.Allowed {
				t.Fatalf("pod denied: %+v", resp.Result)
			}
			if got := mutated(t, req, resp); got != tc.wantPatched {
				t.Fatalf("patched = %v, want %v (patches %v, warnings %q)", got, tc.wantPatched, resp.Patches, resp.Warnings)
			}
			if !tc.wantPatched {
				// Admitted as submitted: only its decision is added.
				if ann, only := annotationsOnly(t, req.Object.Raw, mustJSON(t, resp.Patches)); !only || ann[api.AnnotationDecision] != api.DecisionKeptLegacy {
					t.Errorf("the pod was changed beyond its decision (%v): %v", ann, resp.Patches)
				}
				if len(templates(t, f, "prod")) != 0 {
					t.Error("a template was created for a pod kept as submitted")
				}
			}
			if tc.wantWarnings == nil && len(resp.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", resp.Warnings)
			}
			next := 0
			for _, w := range tc.wantWarnings {
				found := false
				for next < len(resp.Warnings) {
					next++
					if strings.Contains(resp.Warnings[next-1], w) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("no warning containing %q in order in %q", w, resp.Warnings)
				}
			}
			if tc.wantMetric != nil {
				if got := testutil.ToFloat64(f.metrics.Admissions.WithLabelValues(tc.wantMetric...)); got != 1 {
					t.Errorf("claimbridge_admissions_total%v = %v, want 1", tc.wantMetric, got)
				}
			}
			if tc.check != nil {
				tc.check(t, applied(t, req, resp))
			}
		})
	}
}
