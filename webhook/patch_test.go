package webhook

import (
	"encoding/json"
	"testing"

	evanphx "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/translate"
)

// TestTranslationPatchMakesTheTranslatedPod: the patch written from the
// fields a translation changes, applied to the request's JSON, gives the
// pod as translated; a pod changed anywhere else, or a request it could
// not add to, is left to the whole diff.
func TestTranslationPatchMakesTheTranslatedPod(t *testing.T) {
	withAnnotations := func(p *corev1.Pod) *corev1.Pod {
		p.Annotations = map[string]string{"team": "ml", "a/b~c": "x", api.AnnotationDecision: "stale"}
		return p
	}
	translated := func(t *testing.T, p *corev1.Pod) *corev1.Pod {
		t.Helper()
		res, err := translate.Pod(translate.Input{Pod: p, Policy: translate.DefaultPolicy(), Admitted: true})
		if err != nil {
			t.Fatal(err)
		}
		setDecision(res.Pod, api.DecisionTranslated, translate.ReasonTranslated, "translated")
		return res.Pod
	}
	tests := map[string]struct {
		pod         *corev1.Pod
		change      func(t *testing.T, submitted *corev1.Pod) *corev1.Pod
		wantWritten bool
	}{
		"a GPU asked for with a GFD selector loses both and gains the claim": {
			pod:         l4Pod("prod"),
			change:      translated,
			wantWritten: true,
		},
		"annotations the pod has are kept, changed one at a time, escaped": {
			pod:         withAnnotations(l4Pod("prod")),
			change:      translated,
			wantWritten: true,
		},
		"init containers and sidecars get their claims as the app containers": {
			pod: builders.MakePod("train", "prod").InitContainer("prep", false).Limit("nvidia.com/gpu", "1").InitContainer("log", true).Request("cpu", "1").
				Container("trainer").Limit("nvidia.com/gpu", "2").Request("cpu", "4").
				NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").NodeSelector("zone", "a").Obj(),
			change:      translated,
			wantWritten: true,
		},
		"a request without the namespace gets the request's": {
			pod: l4Pod(""),
			change: func(t *testing.T, p *corev1.Pod) *corev1.Pod {
				q := p.DeepCopy()
				q.Namespace = "prod"
				return translated(t, q)
			},
			wantWritten: true,
		},
		"affinity and tolerations removed": {
			pod: func() *corev1.Pod {
				p := l4Pod("prod")
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
				p.Spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}
				return p
			}(),
			change: func(_ *testing.T, p *corev1.Pod) *corev1.Pod {
				q := p.DeepCopy()
				q.Spec.Affinity, q.Spec.Tolerations = nil, nil
				return q
			},
			wantWritten: true,
		},
		"a change to a container beyond its resources is diffed whole": {
			pod: l4Pod("prod"),
			change: func(t *testing.T, p *corev1.Pod) *corev1.Pod {
				q := translated(t, p)
				q.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", Value: "1"}}
				return q
			},
		},
		"a change to the labels is diffed whole": {
			pod: l4Pod("prod"),
			change: func(t *testing.T, p *corev1.Pod) *corev1.Pod {
				q := translated(t, p)
				q.Labels = map[string]string{"x": "y"}
				return q
			},
		},
		"a change to the spec beyond the translated fields is diffed whole": {
			pod: l4Pod("prod"),
			change: func(t *testing.T, p *corev1.Pod) *corev1.Pod {
				q := translated(t, p)
				q.Spec.ActiveDeadlineSeconds = new(int64)
				return q
			},
		},
		"a request without metadata is diffed whole": {
			pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: intstr.FromInt(80).IntVal}}}}}},
			change: func(_ *testing.T, p *corev1.Pod) *corev1.Pod {
				q := p.DeepCopy()
				q.Namespace = "prod"
				return q
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.change(t, tc.pod.DeepCopy())
			ops, written := translationPatch(tc.pod, want)
			if written != tc.wantWritten {
				t.Fatalf("written = %v, want %v (ops %v)", written, tc.wantWritten, ops)
			}
			if !written {
				return
			}
			got := applyOps(t, raw, ops)
			if !equality.Semantic.DeepEqual(want, got) {
				t.Errorf("the patched request is not the translated pod (-want,+got):\n%s", cmp.Diff(want, got))
			}
			// The whole diff of the same pods gives the same pod.
			after, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := jsonpatch.CreatePatch(raw, after)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(applyOps(t, raw, whole), got); diff != "" {
				t.Errorf("the written patch and the diff disagree (-diff,+written):\n%s", diff)
			}
		})
	}
}

// applyOps applies a JSON patch to raw and decodes the pod.
func applyOps(t *testing.T, raw []byte, ops []jsonpatch.JsonPatchOperation) *corev1.Pod {
	t.Helper()
	patch, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	p, err := evanphx.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		t.Fatalf("apply %s: %v", patch, err)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(out, pod); err != nil {
		t.Fatalf("patched object is not a pod: %v: %s", err, out)
	}
	return pod
}

// BenchmarkTranslationPatch: the patch of a translated pod written from the
// fields a translation changes, against the diff of the two pods' JSON it
// replaces (the pod encoded, both decoded and compared).
func BenchmarkTranslationPatch(b *testing.B) {
	submitted := l4Pod("prod")
	res, err := translate.Pod(translate.Input{Pod: submitted, Policy: translate.DefaultPolicy(), Admitted: true})
	if err != nil {
		b.Fatal(err)
	}
	setDecision(res.Pod, api.DecisionTranslated, translate.ReasonTranslated, "translated")
	raw, err := json.Marshal(submitted)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("written", func(b *testing.B) {
		for b.Loop() {
			if _, ok := translationPatch(submitted, res.Pod); !ok {
				b.Fatal("not written")
			}
		}
	})
	b.Run("diffed", func(b *testing.B) {
		for b.Loop() {
			after, err := json.Marshal(res.Pod)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := jsonpatch.CreatePatch(raw, after); err != nil {
				b.Fatal(err)
			}
		}
	})
}
