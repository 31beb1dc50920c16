package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestCheckFloorFailsARunThatMeasuresSomethingElse: the floor measures
// enforce's pods written by hand only when every pod of both namespaces'
// batches refers to the translation's template and got its claim during
// its batch, and the floor's carry nothing of claimbridge.
func TestCheckFloorFailsARunThatMeasuresSomethingElse(t *testing.T) {
	const template = "claimbridge-abc"
	translated := legacyPod("warmup-0", "enforce")
	translated.Spec.NodeSelector = nil
	translated.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "claimbridge", ResourceClaimTemplateName: ptr.To(template)}}
	translated.Spec.Containers[0].Resources = corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "claimbridge", Request: "app-gpu"}}}
	pods := func(ns string, n int, mk func(name, ns string) *corev1.Pod) []corev1.Pod {
		out := []corev1.Pod{*mk("warmup-b-0", ns)} // not of a batch: not counted
		for i := range n {
			out = append(out, *mk("b0-"+string(rune('a'+i)), ns))
		}
		return out
	}
	floorPod := func(name, ns string) *corev1.Pod { return handWritten(name, ns, translated) }
	enforcePod := func(name, ns string) *corev1.Pod {
		p := handWritten(name, ns, translated)
		p.Annotations = map[string]string{"claimbridge.io/decision": "Translated"}
		return p
	}
	run := func(claims int) *apiserverResult {
		r := &apiserverResult{}
		for _, cr := range []*creation{&r.floor, &r.enforce} {
			cr.latency.latencies = make([]time.Duration, 3)
			cr.claims = claims
		}
		return r
	}
	tests := map[string]struct {
		r               *apiserverResult
		floor, enforced []corev1.Pod
		wantErr         string
	}{
		"both namespaces' pods refer to the template and got their claims": {
			r: run(3), floor: pods("floor", 3, floorPod), enforced: pods("enforce", 3, enforcePod),
		},
		"floor pods written without the claim": {
			r: run(3), floor: pods("floor", 3, legacyPod), enforced: pods("enforce", 3, enforcePod),
			wantErr: "floor: 0 of the 3 pods of the batches refer to template claimbridge-abc",
		},
		"enforce pods kept as submitted": {
			r: run(3), floor: pods("floor", 3, floorPod), enforced: pods("enforce", 3, legacyPod),
			wantErr: "enforce: 0 of the 3 pods",
		},
		"a floor pod the webhook changed": {
			r: run(3), floor: pods("floor", 3, enforcePod), enforced: pods("enforce", 3, enforcePod),
			wantErr: "carries claimbridge.io/decision",
		},
		"claims created after their batch": {
			r: run(2), floor: pods("floor", 3, floorPod), enforced: pods("enforce", 3, enforcePod),
			wantErr: "floor: kube-controller-manager created 2 ResourceClaims during the batches of 3 pods",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := checkFloor(tc.r, template, tc.floor, tc.enforced)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("checkFloor: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("checkFloor error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
