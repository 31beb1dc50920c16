package webhook

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// policyOf is a policy of these profiles and onUnservable rule.
func policyOf(t *testing.T, rule v1alpha1.OnUnservable, profiles ...string) func(*fixture) {
	t.Helper()
	p, err := translate.NewPolicy(&v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
		Spec: v1alpha1.PolicySpec{Profiles: profiles, OnUnservable: rule}})
	if err != nil {
		t.Fatal(err)
	}
	return func(f *fixture) { f.handler.Policy = func() *translate.Policy { return p } }
}

// denyPolicy is the default policy with onUnservable: Deny.
func denyPolicy(t *testing.T) func(*fixture) {
	return policyOf(t, v1alpha1.OnUnservableDeny, v1alpha1.DefaultProfileNames()...)
}

// advertising gives the fleet's first node n of an extended resource in its
// allocatable, as a device plugin would.
func advertising(name corev1.ResourceName, n string) func(*fixture) {
	return func(f *fixture) {
		node := f.inv.Fleet.Nodes[0].DeepCopy()
		node.Status.Allocatable[name] = resource.MustParse(n)
		f.inv.Fleet.Nodes = append([]*corev1.Node{node}, f.inv.Fleet.Nodes[1:]...)
	}
}

// namespaceLabel sets a label on a namespace of the fixture.
func namespaceLabel(ns, key, value string) func(*fixture) {
	return func(f *fixture) {
		obj := f.inv.Namespaces[ns].DeepCopy()
		obj.Labels[key] = value
		f.inv.Namespaces[ns] = obj
	}
}

func all(mutations ...func(*fixture)) func(*fixture) {
	return func(f *fixture) {
		for _, m := range mutations {
			m(f)
		}
	}
}

// TestAPodNoNodeCanServeIsTold: a pod admitted without translation that
// asks for an extended resource no node advertises as much of as it needs
// (after the switch to DRA, none at all) gets the LegacyUnservable warning,
// a reason in its report row and claimbridge_unservable_pods_total; with
// onUnservable: Deny (policy or namespace label) an enforce namespace
// refuses it, with the same message and the field of the resource, while an
// audit namespace only says it would; a translated pod, a pod the device
// plugin can serve and a pod KEP-5004 serves are never unservable.
func TestAPodNoNodeCanServeIsTold(t *testing.T) {
	shared := func(ns string) *builders.PodWrapper {
		return builders.MakePod("shared", ns).Container("app").Limit("nvidia.com/gpu.shared", "1")
	}
	volcano := func(ns, gpus string) *builders.PodWrapper {
		return builders.MakePod("batch", ns).Container("app").Limit("nvidia.com/gpu", gpus).SchedulerName("volcano")
	}
	hami := policyOf(t, "", "nvidia", "hami")
	const (
		// Whole: within the 240 bytes a warning keeps.
		// Warnings lead with the code and the remedy.
		lu     = "LegacyUnservable: make the pod translatable (see why it is not), ask for what nodes offer, or restore the device plugin; "
		gone   = "claimbridge: " + lu + "no node offers nvidia.com/gpu.shared any more (DRA replaced the device plugin); this pod stays Pending"
		denied = "claimbridge: LegacyUnservable: no node offers nvidia.com/gpu.shared any more (DRA replaced the device plugin); this pod would stay Pending; denied ("
	)
	cases := map[string]struct {
		fleet  string
		mutate func(*fixture)
		pod    *corev1.Pod
		dryRun bool
		// wantWarnings are substrings of warnings, in order; wantNot must
		// be in none.
		wantWarnings []string
		wantNot      []string
		// wantDenied is a substring of the denial's message, with the
		// field its first cause names; empty: the pod is admitted.
		wantDenied, wantField string
		// wantUnservable is claimbridge_unservable_pods_total{mode,resource}.
		wantUnservable map[[2]string]float64
		// wantAdmission is the claimbridge_admissions_total sample.
		wantAdmission []string
	}{
		"a shared GPU pod kept legacy on a fleet where no node offers shares any more is told it stays Pending": {
			fleet: "l4-inference", pod: shared("prod").Obj(),
			wantWarnings:   []string{"SharesUnavailable: kept as submitted", gone},
			wantUnservable: map[[2]string]float64{{"enforce", "nvidia.com/gpu.shared"}: 1},
			wantAdmission:  []string{"enforce", "KeepLegacy", "SharesUnavailable"},
		},
		"the same pod where a device plugin still offers shares is not": {
			fleet: "l4-inference", mutate: advertising("nvidia.com/gpu.shared", "4"), pod: shared("prod").Obj(),
			wantWarnings:   []string{"SharesUnavailable: kept as submitted"},
			wantNot:        []string{"LegacyUnservable"},
			wantUnservable: map[[2]string]float64{{"enforce", "nvidia.com/gpu.shared"}: 0},
		},
		"a pod asking for 8 GPUs where nodes advertise at most 4 is unservable": {
			fleet: "l4-inference", mutate: advertising("nvidia.com/gpu", "4"), pod: volcano("prod", "8").Obj(),
			wantWarnings:   []string{"claimbridge: " + lu + "no node offers 8 nvidia.com/gpu (at most 4 on one node); this pod stays Pending"},
			wantUnservable: map[[2]string]float64{{"enforce", "nvidia.com/gpu"}: 1},
			wantAdmission:  []string{"enforce", "KeepLegacy", "SchedulerNotListed"},
		},
		"a pod whose node selector excludes the only node that still offers GPUs is unservable": {
			fleet: "l4-inference", mutate: advertising("nvidia.com/gpu", "4"),
			pod:            volcano("prod", "1").NodeSelector("nvidia.com/gpu.product", "Tesla-T4-SHARED").Obj(),
			wantWarnings:   []string{"claimbridge: " + lu + "no node this pod may run on offers nvidia.com/gpu: only l4-inference-0, which its node select"},
			wantUnservable: map[[2]string]float64{{"enforce", "nvidia.com/gpu"}: 1},
		},
		"a pod asking for the 4 GPUs a node advertises is not": {
			fleet: "l4-inference", mutate: advertising("nvidia.com/gpu", "4"), pod: volcano("prod", "4").Obj(),
			wantNot: []string{"LegacyUnservable"},
		},
		"with onUnservable: Deny an enforce namespace refuses the pod with the same message": {
			fleet: "l4-inference", mutate: denyPolicy(t), pod: shared("prod").Obj(),
			wantWarnings:   []string{"SharesUnavailable: kept as submitted"},
			wantNot:        []string{"LegacyUnservable"},
			wantDenied:     denied + "policy onUnservable: Deny): make the pod translatable",
			wantField:      "spec.containers[0].resources.limits[nvidia.com/gpu.shared]",
			wantUnservable: map[[2]string]float64{{"enforce", "nvidia.com/gpu.shared"}: 1},
			wantAdmission:  []string{"enforce", explain.OutcomeDeny, "LegacyUnservable"},
		},
		"a server-side dry run is refused alike and counts nothing": {
			fleet: "l4-inference", mutate: denyPolicy(t), pod: shared("prod").Obj(), dryRun: true,
			wantDenied:     denied + "policy onUnservable: Deny)",
			wantField:      "spec.containers[0].resources.limits[nvidia.com/gpu.shared]",
			wantUnservable: map[[2]string]float64{{"enforce", "nvidia.com/gpu.shared"}: 0},
		},
		"with onUnservable: Deny an audit namespace only says it would refuse the pod": {
			fleet: "l4-inference", mutate: denyPolicy(t), pod: shared("staging").Obj(),
			wantWarnings:   []string{"claimbridge (audit): " + lu + "no node offers nvidia.com/gpu.shared any more (DRA replaced the device plugin); this"},
			wantUnservable: map[[2]string]float64{{"audit", "nvidia.com/gpu.shared"}: 1},
			wantAdmission:  []string{"audit", "KeepLegacy", "SharesUnavailable"},
		},
		"the namespace label Deny overrides the policy's Admit": {
			fleet: "l4-inference", mutate: namespaceLabel("prod", api.LabelOnUnservable, "Deny"), pod: shared("prod").Obj(),
			wantDenied: denied + "namespace label claimbridge.io/on-unservable=Deny)",
			wantField:  "spec.containers[0].resources.limits[nvidia.com/gpu.shared]",
		},
		"the namespace label Admit overrides the policy's Deny": {
			fleet: "l4-inference", mutate: all(denyPolicy(t), namespaceLabel("prod", api.LabelOnUnservable, "Admit")), pod: shared("prod").Obj(),
			wantWarnings: []string{gone},
			wantNot:      []string{"denied"},
		},
		"a namespace the cache does not have yet is read for its label": {
			fleet: "l4-inference", pod: shared("fresh").Obj(),
			mutate: func(f *fixture) {
				f.handler.LookupNamespace = func(_ context.Context, name string) (*corev1.Namespace, error) {
					return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
						Labels: map[string]string{api.LabelMode: string(api.ModeEnforce), api.LabelOnUnservable: "Deny"}}}, nil
				}
			},
			wantDenied: denied + "namespace label claimbridge.io/on-unservable=Deny)",
			wantField:  "spec.containers[0].resources.limits[nvidia.com/gpu.shared]",
		},
		"a pod that opted out is told but never refused": {
			fleet: "l4-inference", mutate: denyPolicy(t), pod: volcano("prod", "1").Annotation(api.AnnotationSkip, "true").Obj(),
			wantWarnings: []string{"claimbridge: " + lu + "no node offers nvidia.com/gpu any more (DRA replaced the device plugin); this pod stays Pend"},
		},
		"a translated pod is never unservable": {
			fleet: "l4-inference", mutate: denyPolicy(t), pod: l4Pod("prod"),
			wantWarnings:   []string{"claimbridge: Translated: uses ResourceClaimTemplate"},
			wantNot:        []string{"LegacyUnservable"},
			wantUnservable: map[[2]string]float64{{"enforce", "nvidia.com/gpu"}: 0},
			wantAdmission:  []string{"enforce", "Translate", "Translated"},
		},
		"a pod that would be translated in audit mode is never unservable": {
			fleet: "l4-inference", mutate: denyPolicy(t), pod: l4Pod("staging"),
			wantWarnings: []string{"claimbridge (audit): Translated: would use"},
			wantNot:      []string{"LegacyUnservable"},
		},
		"a pod that a DeviceClass serves through extendedResourceName (KEP-5004) is not unservable": {
			fleet: "hami-t4", mutate: policyOf(t, v1alpha1.OnUnservableDeny, "nvidia", "hami"),
			pod:           builders.MakePod("plain", "prod").Container("app").Limit("nvidia.com/gpu", "1").Obj(),
			wantNot:       []string{"LegacyUnservable"},
			wantAdmission: []string{"enforce", "KeepLegacy", "DeferToExtendedResource"},
		},
		"a capacity of a device (HAMi's gpumem with the hami profile) is no node's allocatable and not judged": {
			fleet: "l4-inference", mutate: hami, pod: volcano("prod", "1").Limit("nvidia.com/gpumem", "4000").Obj(),
			wantWarnings: []string{"claimbridge: " + lu + "no node offers nvidia.com/gpu any more"},
			wantNot:      []string{"gpumem"},
		},
		"an inventory not synced yet says nothing": {
			fleet: "", mutate: denyPolicy(t), pod: shared("prod").Obj(),
			wantNot: []string{"LegacyUnservable"},
		},
		"a mirror pod is never judged": {
			fleet: "l4-inference", mutate: denyPolicy(t),
			pod:     volcano("prod", "1").Annotation(corev1.MirrorPodAnnotationKey, "abc").NodeName("l4-inference-0").Obj(),
			wantNot: []string{"LegacyUnservable"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.fleet, tc.mutate)
			req := request(t, admissionv1.Create, tc.pod, tc.dryRun)
			resp := f.handler.Handle(t.Context(), req)
			if tc.wantDenied == "" {
				if !resp.Allowed {
					t.Fatalf("pod denied: %+v", resp.Result)
				}
			} else {
				if resp.Allowed {
					t.Fatalf("pod admitted (warnings %q), want it denied", resp.Warnings)
				}
				if resp.Result.Code != 422 || !strings.Contains(resp.Result.Message, tc.wantDenied) {
					t.Errorf("denial %d %q, want 422 with %q", resp.Result.Code, resp.Result.Message, tc.wantDenied)
				}
				if resp.Result.Details == nil || len(resp.Result.Details.Causes) == 0 || resp.Result.Details.Causes[0].Field != tc.wantField {
					t.Fatalf("denial details %+v, want a cause on %s", resp.Result.Details, tc.wantField)
				}
				// kubectl prints the causes, not the message: each says who
				// refused, the code and what chose Deny.
				_, chose, _ := strings.Cut(tc.wantDenied, "; denied (")
				chose, _, _ = strings.Cut(chose, ")")
				for _, c := range resp.Result.Details.Causes {
					for _, want := range []string{"claimbridge LegacyUnservable: no node offers", "; denied (" + chose + ")"} {
						if !strings.Contains(c.Message, want) {
							t.Errorf("cause %q lacks %q", c.Message, want)
						}
					}
				}
				if len(resp.Patches) > 0 || len(templates(t, f, tc.pod.Namespace)) > 0 {
					t.Error("a denied pod was patched or got a template")
				}
			}
			next := 0
			for _, w := range tc.wantWarnings {
				i := slices.IndexFunc(resp.Warnings[next:], func(s string) bool { return strings.Contains(s, w) })
				if i < 0 {
					t.Errorf("no warning containing %q in order in %q", w, resp.Warnings)
					continue
				}
				next += i + 1
			}
			for _, w := range tc.wantNot {
				if slices.ContainsFunc(resp.Warnings, func(s string) bool { return strings.Contains(s, w) }) {
					t.Errorf("a warning contains %q: %q", w, resp.Warnings)
				}
			}
			for labels, want := range tc.wantUnservable {
				if got := testutil.ToFloat64(f.metrics.Unservable.WithLabelValues(labels[0], labels[1])); got != want {
					t.Errorf("claimbridge_unservable_pods_total%v = %g, want %g", labels, got, want)
				}
			}
			if tc.wantAdmission != nil {
				if got := testutil.ToFloat64(f.metrics.Admissions.WithLabelValues(tc.wantAdmission...)); got != 1 {
					t.Errorf("claimbridge_admissions_total%v = %g, want 1", tc.wantAdmission, got)
				}
			}
			rows := f.store.Report(t.Context(), tc.pod.Namespace, "p").Items
			told := slices.ContainsFunc(rows, func(r report.Row) bool {
				return slices.ContainsFunc(r.Reasons, func(r reason.Reason) bool { return r.Code == explain.ReasonLegacyUnservable })
			})
			// The row says what the warning or the denial said; a dry run
			// leaves no row.
			wantTold := !tc.dryRun && (tc.wantDenied != "" || slices.ContainsFunc(tc.wantWarnings, func(w string) bool { return strings.Contains(w, "LegacyUnservable") }))
			if told != wantTold {
				t.Errorf("report row carries LegacyUnservable = %v, want %v (rows %+v)", told, wantTold, rows)
			}
		})
	}
}
