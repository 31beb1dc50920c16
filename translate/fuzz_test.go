package translate

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
)

// The seed corpora run in every `go test`; `make fuzz` explores further.

func FuzzLoadPolicy(f *testing.F) {
	for _, name := range v1alpha1.ProfileNames() {
		src, err := v1alpha1.ProfileSource(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte("apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nspec:\n  profiles: [nvidia]\n  fallbacks:\n  - name: f\n    match: {resource: nvidia.com/gpu}\n    alternatives: [{countMultiplier: 2}]\n"))
	f.Add([]byte("{\"apiVersion\":\"claimbridge.io/v1alpha1\",\"kind\":\"TranslationPolicy\",\"spec\":{\"resources\":[{\"name\":\"a.com/*\",\"family\":\"a\",\"deviceClassName\":\"a\",\"suffixAttribute\":\"a.com/x\"}]}}"))
	f.Add([]byte("spec: [1, 2"))
	pod := builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "2").Limit("a.com/x", "1").
		NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj()
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := LoadPolicy(data)
		if err != nil {
			if p != nil {
				t.Fatal("a policy and an error")
			}
			return
		}
		// Any accepted policy must translate without panicking and produce
		// selectors that compile.
		res, err := Pod(Input{Pod: pod, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		checkResultInvariants(t, Input{Pod: pod, Policy: p}, res)
	})
}

func FuzzTranslatePod(f *testing.F) {
	files, _ := filepath.Glob("testdata/cases/*.yaml")
	for _, file := range files {
		if strings.HasSuffix(file, ".golden.yaml") {
			continue
		}
		in, _ := loadCase(f, file)
		if data, err := json.Marshal(in.Pod); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1e6"}}}]}}`))
	f.Add([]byte(`{"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/mig-":"1"}}}]}}`))
	policy := DefaultPolicy()
	f.Fuzz(func(t *testing.T, data []byte) {
		var pod corev1.Pod
		if err := json.Unmarshal(data, &pod); err != nil {
			return
		}
		in := Input{Pod: &pod, Policy: policy}
		res, err := Pod(in)
		if err != nil {
			t.Fatal(err)
		}
		checkResultInvariants(t, in, res)
	})
}

func FuzzLabelValue(f *testing.F) {
	keys := []string{"nvidia.com/gpu.product", "nvidia.com/gpu.memory", "nvidia.com/gpu.family",
		"nvidia.com/cuda.driver-version.full", "cloud.google.com/gke-tpu-topology", "cloud.google.com/gke-accelerator",
		"cloud.google.com/gke-gpu-partition-size", "nvidia.com/gpu.compute.major"}
	for i := range keys {
		f.Add(uint8(i), "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", uint8(0))
		f.Add(uint8(i), `a" || true || "`, uint8(1))
		f.Add(uint8(i), "81920", uint8(4))
	}
	ops := []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
		corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt}
	policy := DefaultPolicy()
	f.Fuzz(func(t *testing.T, k uint8, value string, op uint8) {
		key := keys[int(k)%len(keys)]
		req := corev1.NodeSelectorRequirement{Key: key, Operator: ops[int(op)%len(ops)], Values: []string{value}}
		pod := builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "1").Limit("google.com/tpu", "4").
			RequiredTerm(req).NodeSelector(key, value).Obj()
		in := Input{Pod: pod, Policy: policy}
		res, err := Pod(in)
		if err != nil {
			t.Fatal(err)
		}
		checkResultInvariants(t, in, res)
	})
}

// checkResultInvariants holds for every translation: a pod that is not
// translated comes back unchanged; a translated one refers to a template
// whose selectors compile, and translating it again changes nothing.
func checkResultInvariants(t testing.TB, in Input, res *Result) {
	t.Helper()
	if res.Pod == nil {
		t.Fatal("no pod in the result")
	}
	if len(res.Reasons) == 0 {
		t.Error("no reason given")
	}
	if res.Outcome != reason.OutcomeTranslate {
		if diff := cmp.Diff(in.Pod, res.Pod); diff != "" {
			t.Fatalf("outcome %s changed the pod (-in,+out):\n%s", res.Outcome, diff)
		}
		return
	}
	checkTemplate(t, res)
	checkIdempotent(t, in, res)
}
