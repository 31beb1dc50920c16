package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/claimbridge/claimbridge/metrics"
)

const goodPolicy = `apiVersion: claimbridge.io/v1alpha1
kind: TranslationPolicy
metadata:
  name: %s
spec:
  profiles: [nvidia]
`

func TestPolicyFileReloadsValidVersionsAndKeepsTheLastGoodOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(strings.Replace(goodPolicy, "%s", "first", 1))
	pf, err := NewPolicyFiles(path, "")
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.NewMetrics()
	if err := m.RegisterWith(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	pf.Metrics = m
	var rejected []error
	pf.OnReject = func(err error) { rejected = append(rejected, err) }

	pf.Reload(t.Context()) // unchanged file: nothing happens
	if pf.Get().Name() != "first" || testutil.ToFloat64(m.PolicyReloads.WithLabelValues("applied")) != 0 {
		t.Fatalf("an unchanged file was reloaded")
	}

	write(strings.Replace(goodPolicy, "%s", "second", 1))
	pf.Reload(t.Context())
	if pf.Get().Name() != "second" {
		t.Fatalf("valid new policy not applied: %s", pf.Get().Name())
	}

	write(strings.Replace(strings.Replace(goodPolicy, "%s", "third", 1), "profiles: [nvidia]", "profiles: [nvidia]\n  bogus: 1", 1))
	pf.Reload(t.Context())
	if pf.Get().Name() != "second" {
		t.Errorf("an invalid policy replaced the good one: %s", pf.Get().Name())
	}
	if len(rejected) != 1 || !strings.Contains(rejected[0].Error(), "spec.bogus") {
		t.Errorf("rejection not reported with the field: %v", rejected)
	}
	if got := testutil.ToFloat64(m.PolicyReloads.WithLabelValues("rejected")); got != 1 {
		t.Errorf("rejected reloads = %v", got)
	}
	if got := testutil.ToFloat64(m.PolicyReloads.WithLabelValues("applied")); got != 1 {
		t.Errorf("applied reloads = %v", got)
	}

	os.Remove(path)
	pf.Reload(t.Context())
	if pf.Get().Name() != "second" {
		t.Errorf("a missing file dropped the policy")
	}
}

func TestPolicyFileRefusesAnInvalidFirstVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte("kind: Nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPolicyFiles(path, ""); err == nil || !strings.Contains(err.Error(), "kind") {
		t.Errorf("err = %v", err)
	}
	pf, err := NewPolicyFiles("", "")
	if err != nil || pf.Get() == nil {
		t.Fatalf("default policy: %v", err)
	}
}

func TestPolicyFileAddsAndReloadsKueuesDeviceClassMappings(t *testing.T) {
	dir := t.TempDir()
	policy, kueue := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "kueue.yaml")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config := func(classes string) string {
		return "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nresources:\n  deviceClassMappings:\n  - name: nvidia.com/gpu\n    deviceClassNames: [" + classes + "]\n"
	}
	mapped := func(pf *PolicyFile) string {
		var out []string
		for _, m := range pf.Get().Spec().Kueue.DeviceClassMappings {
			out = append(out, m.DeviceClassNames...)
		}
		return strings.Join(out, ",")
	}
	write(policy, strings.Replace(goodPolicy, "%s", "site", 1))
	write(kueue, config("gpu.nvidia.com"))
	pf, err := NewPolicyFiles(policy, kueue)
	if err != nil {
		t.Fatal(err)
	}
	if got := mapped(pf); got != "gpu.nvidia.com" {
		t.Fatalf("mappings %q, want gpu.nvidia.com", got)
	}
	var rejected []error
	pf.OnReject = func(err error) { rejected = append(rejected, err) }
	write(kueue, config("gpu.nvidia.com, mig.nvidia.com"))
	pf.Reload(t.Context())
	if got := mapped(pf); got != "gpu.nvidia.com,mig.nvidia.com" {
		t.Errorf("after the Kueue configuration changed: mappings %q", got)
	}
	write(kueue, "apiVersion: v1\nkind: Secret\n")
	pf.Reload(t.Context())
	if got := mapped(pf); got != "gpu.nvidia.com,mig.nvidia.com" || len(rejected) != 1 || !strings.Contains(rejected[0].Error(), "not a Kueue Configuration") {
		t.Errorf("an invalid Kueue configuration: mappings %q, rejections %v", got, rejected)
	}
	if _, err := NewPolicyFiles("", filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing Kueue configuration was accepted at start")
	}
}
