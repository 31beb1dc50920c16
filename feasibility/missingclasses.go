package feasibility

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// A claim that names a DeviceClass the fleet lacks can never be allocated,
// on any node: the allocator refuses the whole claim when any request or
// firstAvailable subrequest names a class its lister does not have ("could
// not retrieve device class", validateDeviceRequest in
// k8s.io/dynamic-resource-allocation/structured/internal/*/allocator_*.go),
// and kube-scheduler reports the pod unschedulable everywhere. That is a
// fact about the fleet, not about a node, so it is said once, plainly.

// MissingClasses checks that the snapshot has every DeviceClass the claims
// name. It returns nil when it does; otherwise a NeverFits verdict with code
// DeviceClassNotFound and one reason per missing class, in name order,
// naming the requests that use it.
func (s *Snapshot) MissingClasses(claims []*resourceapi.ResourceClaimSpec) *Verdict {
	reasons := missingClassReasons(s.classes, claims)
	if len(reasons) == 0 {
		return nil
	}
	return &Verdict{Kind: NeverFits, Code: ReasonDeviceClassNotFound, Reasons: reasons,
		NodesConsidered: len(s.nodes), NodesPruned: len(s.nodes)}
}

// missingClassReasons says, for each class the claims name that is not in
// classes: "the fleet has no DeviceClass gpu.amd.com (request app-gpu):
// install the DRA driver's DeviceClasses".
func missingClassReasons(classes map[string]*resourceapi.DeviceClass, claims []*resourceapi.ResourceClaimSpec) []string {
	missing := map[string][]string{}
	note := func(class, request string) {
		if _, ok := classes[class]; ok {
			return
		}
		if !slices.Contains(missing[class], request) {
			missing[class] = append(missing[class], request)
		}
	}
	for _, c := range claims {
		if c == nil {
			continue
		}
		for _, req := range c.Devices.Requests {
			if req.Exactly != nil {
				note(req.Exactly.DeviceClassName, req.Name)
			}
			for _, sub := range req.FirstAvailable {
				note(sub.DeviceClassName, req.Name+"/"+sub.Name)
			}
		}
	}
	var out []string
	for _, class := range slices.Sorted(maps.Keys(missing)) {
		reqs := missing[class]
		noun := "request"
		if len(reqs) > 1 {
			noun = "requests"
		}
		out = append(out, fmt.Sprintf("the fleet has no DeviceClass %s (%s %s): install the DRA driver's DeviceClasses, or add the class to the fleet's or the workload's files",
			class, noun, strings.Join(reqs, ", ")))
	}
	return out
}
