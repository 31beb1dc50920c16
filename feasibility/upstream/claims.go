package upstream

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// What kube-apiserver does to a claim before the allocator sees it, and
// how kube-scheduler scores what the allocator answers.

// DefaultClaims turns the specs into claims and applies the apiserver's defaults
// (k8s.io/kubernetes/pkg/apis/resource/v1/defaults.go): "an empty AllocationMode becomes
// ExactCount; ExactCount with Count == 0 becomes Count = 1"; toleration operator Equal.
// The allocator does not default: an empty mode is a fatal error and count 0 "succeeds".
func DefaultClaims(pod *corev1.Pod, specs []*resourceapi.ResourceClaimSpec) ([]*resourceapi.ResourceClaim, error) {
	out := make([]*resourceapi.ResourceClaim, 0, len(specs))
	for i, spec := range specs {
		if spec == nil {
			return nil, fmt.Errorf("claim %d: nil spec", i)
		}
		claim := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: pod.Namespace,
				Name:      pod.Name + "-claim-" + strconv.Itoa(i),
				UID:       types.UID("claimbridge-feasibility-" + strconv.Itoa(i)),
			},
			Spec: *spec.DeepCopy(),
		}
		for ri := range claim.Spec.Devices.Requests {
			r := &claim.Spec.Devices.Requests[ri]
			switch {
			case r.Exactly != nil && len(r.FirstAvailable) == 0:
				defaultExact(&r.Exactly.AllocationMode, &r.Exactly.Count, r.Exactly.Tolerations)
			case r.Exactly == nil && len(r.FirstAvailable) > 0:
				for si := range r.FirstAvailable {
					s := &r.FirstAvailable[si]
					defaultExact(&s.AllocationMode, &s.Count, s.Tolerations)
				}
			default:
				return nil, fmt.Errorf("claim %d, request %q: exactly one of exactly or firstAvailable must be set", i, r.Name)
			}
		}
		out = append(out, claim)
	}
	return out, nil
}

func defaultExact(mode *resourceapi.DeviceAllocationMode, count *int64, tolerations []resourceapi.DeviceToleration) {
	if *mode == "" {
		*mode = resourceapi.DeviceAllocationModeExactCount
	}
	if *mode == resourceapi.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
	for i := range tolerations {
		if tolerations[i].Operator == "" {
			tolerations[i].Operator = resourceapi.DeviceTolerationOpEqual
		}
	}
}

// TopScore is the score of an allocation that gets the first alternative of
// every firstAvailable request.
func TopScore(claims []*resourceapi.ResourceClaim) int64 {
	var s int64
	for _, c := range claims {
		for _, r := range c.Spec.Devices.Requests {
			if len(r.FirstAvailable) > 0 {
				s += resourceapi.FirstAvailableDeviceRequestMaxSize
			}
		}
	}
	return s
}

// Score mirrors kube-scheduler's computeScore: each firstAvailable request
// adds 8 minus the index of the alternative it got.
func Score(claims []*resourceapi.ResourceClaim, out []resourceapi.AllocationResult) int64 {
	var s int64
	for ci, c := range claims {
		if ci >= len(out) {
			break
		}
		got := map[string]bool{}
		for _, r := range out[ci].Devices.Results {
			got[r.Request] = true
		}
		for _, r := range c.Spec.Devices.Requests {
			for i, sub := range r.FirstAvailable {
				if got[r.Name+"/"+sub.Name] {
					s += int64(resourceapi.FirstAvailableDeviceRequestMaxSize - i)
				}
			}
		}
	}
	return s
}
