package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	sigsjson "sigs.k8s.io/json"
)

// The policy's types for the rest of the stack: which schedulers and queues
// get which output (schedulers.go, output.go), how deference to KEP-5004 is
// weighed (deference.go). The defaults are documented on each field; the
// built-in table of known schedulers is in schedulers.go.

// OutputProfile says what a translation may produce for the pods of one
// scheduler or queue.
type OutputProfile string

// Output profiles, from the most to the least that a translation may use.
const (
	// OutputFull: everything the translator makes, firstAvailable
	// alternatives included. kube-scheduler's profile.
	OutputFull OutputProfile = "Full"
	// OutputExactlyOnly: no firstAvailable (and no allocationMode All,
	// which claimbridge never makes): each request is one `exactly`
	// request, the best single alternative that the placement check
	// accepts (tried in their order of preference), or the pod stays as
	// submitted.
	OutputExactlyOnly OutputProfile = "ExactlyOnly"
	// OutputSkip: the pods are not translated (SchedulerSkipped).
	OutputSkip OutputProfile = "Skip"
)

// Stricter is the profile of the two that allows less, in the order above
// (an empty or unknown profile allows as much as Full).
func (o OutputProfile) Stricter(other OutputProfile) OutputProfile {
	rank := func(o OutputProfile) int {
		switch o {
		case OutputSkip:
			return 2
		case OutputExactlyOnly:
			return 1
		}
		return 0
	}
	if rank(other) > rank(o) {
		return other
	}
	return o
}

var outputProfiles = []OutputProfile{OutputFull, OutputExactlyOnly, OutputSkip}

// SchedulerEntry is one scheduler of PolicySpec.Schedulers. In YAML it is
// the schedulerName alone ("volcano"), which takes claimbridge's built-in
// profile for that scheduler (OutputFull for "default-scheduler" and for
// any scheduler claimbridge has no row for; see the schedulers table,
// docs/reference/policy.md#schedulers-queues-and-quota), or an object
// whose fields, when set, replace the built-in ones.
type SchedulerEntry struct {
	// Name is the schedulerName. Required, a DNS subdomain.
	Name string `json:"name"`

	// Output is what translation may produce for the scheduler's pods:
	// OutputFull, OutputExactlyOnly or OutputSkip. Default: the built-in
	// profile of the scheduler, OutputFull when there is none.
	Output OutputProfile `json:"output,omitempty"`

	// ClassNameContains constrains the DeviceClasses that requests for some
	// legacy resources may use: the scheduler accounts those resources only
	// on classes whose name contains a string (KAI-Scheduler counts GPUs of
	// a claim only on classes whose name contains "gpu", case-insensitive).
	// A translation to another class keeps the pod as submitted
	// (ClassNotCountedByScheduler). Unset: the built-in profile's; an
	// empty list ("[]"): none.
	ClassNameContains []ClassNameRule `json:"classNameContains,omitempty"`

	// ConsumableCapacity says whether the scheduler's allocator honours
	// capacity requests and devices that allow multiple allocations (DRA
	// consumable capacity). When false, a translation that requests
	// capacities or shares a device keeps the pod as submitted
	// (CapacityNotSupported): the allocator would ignore the capacities and
	// hand the device out whole. Unset: the built-in profile's, true when
	// there is none.
	ConsumableCapacity *bool `json:"consumableCapacity,omitempty"`
}

// ClassNameRule: requests for these legacy resources must use a class whose
// name contains [ClassNameRule.Value] (compared case-insensitively).
type ClassNameRule struct {
	// Resources are extended-resource names or patterns with one trailing
	// "*" (nvidia.com/mig-*), matched against the resource a container asks
	// for. Required.
	Resources []string `json:"resources"`
	// Value the class name must contain. Required.
	Value string `json:"value"`
}

// schedulerEntryJSON is SchedulerEntry's object form; ClassNameContains is
// a pointer so that `classNameContains: []` survives a round trip.
type schedulerEntryJSON struct {
	Name               string           `json:"name"`
	Output             OutputProfile    `json:"output,omitempty"`
	ClassNameContains  *[]ClassNameRule `json:"classNameContains,omitempty"`
	ConsumableCapacity *bool            `json:"consumableCapacity,omitempty"`
}

// UnmarshalJSON reads a schedulerName string or an object, rejecting
// unknown fields.
func (e *SchedulerEntry) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var name string
		if err := json.Unmarshal(data, &name); err != nil {
			return err
		}
		*e = SchedulerEntry{Name: name}
		return nil
	}
	var o schedulerEntryJSON
	strict, err := sigsjson.UnmarshalStrict(data, &o, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if err := errors.Join(strict...); err != nil {
		return fmt.Errorf("scheduler %q: %w", o.Name, err)
	}
	*e = SchedulerEntry{Name: o.Name, Output: o.Output, ConsumableCapacity: o.ConsumableCapacity}
	if o.ClassNameContains != nil {
		// An explicit empty list (none) is not nil (the built-in rules).
		e.ClassNameContains = append([]ClassNameRule{}, *o.ClassNameContains...)
	}
	return nil
}

// MarshalJSON writes the name alone when nothing else is set.
func (e SchedulerEntry) MarshalJSON() ([]byte, error) {
	if e.Output == "" && e.ClassNameContains == nil && e.ConsumableCapacity == nil {
		return json.Marshal(e.Name)
	}
	o := schedulerEntryJSON{Name: e.Name, Output: e.Output, ConsumableCapacity: e.ConsumableCapacity}
	if e.ClassNameContains != nil {
		list := e.ClassNameContains
		o.ClassNameContains = &list
	}
	return json.Marshal(o)
}

// SchedulerNames are entries for plain schedulerNames, each taking its
// built-in profile.
func SchedulerNames(names ...string) []SchedulerEntry {
	out := make([]SchedulerEntry, 0, len(names))
	for _, n := range names {
		out = append(out, SchedulerEntry{Name: n})
	}
	return out
}

// KueueRule says how pods that Kueue manages are translated. A pod is
// Kueue-managed when it carries the label kueue.x-k8s.io/queue-name (for a
// workload's pod template, when the workload object carries it), or one of
// the labels Kueue puts on the pods it manages: kueue.x-k8s.io/podset (on
// the pod template of a workload it admitted) or kueue.x-k8s.io/managed.
type KueueRule struct {
	// Output for Kueue-managed pods: OutputExactlyOnly (default) or
	// OutputSkip. Kueue rejects a pod set whose claims use firstAvailable
	// or allocationMode All, so OutputFull is not accepted. The stricter of
	// this and the pod's scheduler's output applies.
	Output OutputProfile `json:"output,omitempty"`

	// DeviceClassMappings are Kueue's resources.deviceClassMappings (its
	// Configuration), or the part of them that matters here: a
	// Kueue-managed pod is translated only when every DeviceClass of its
	// claim is in one of the mappings' deviceClassNames, else Kueue would
	// find the workload inadmissible (KueueClassNotMapped). `claimbridge
	// serve --kueue-config` (and the offline commands' flag) adds the
	// mappings of a Kueue Configuration file. Default: none, so that
	// Kueue-managed pods stay as submitted until the mappings are known.
	DeviceClassMappings []KueueDeviceClassMapping `json:"deviceClassMappings,omitempty"`
}

// KueueDeviceClassMapping is one entry of Kueue's deviceClassMappings.
type KueueDeviceClassMapping struct {
	// Name is the resource name the ClusterQueue quota uses. Required.
	Name string `json:"name"`
	// DeviceClassNames are the DeviceClasses counted as that resource.
	// Required.
	DeviceClassNames []string `json:"deviceClassNames"`
}

// DeferenceRule says when a pod is left to KEP-5004 (a DeviceClass whose
// extendedResourceName serves the legacy resource).
type DeferenceRule struct {
	// PreferExtendedResource also leaves the pod to KEP-5004 when the only
	// change translation would make beyond the device count is to remove
	// node-label requirements that the device request implies or that no
	// device attribute expresses (nvidia.com/gpu.present,
	// nvidia.com/gpu.count). KEP-5004 keeps the resource in the pod, so the
	// scheduler's NodeResourcesFit scoring (bin-packing) still sees it,
	// and admission still gives the pod its tolerations; the labels stay
	// on the pod, so the DRA nodes must carry them. Default false: such pods
	// are translated, because DRA nodes often lack GPU Feature Discovery's
	// labels.
	PreferExtendedResource bool `json:"preferExtendedResource,omitempty"`
}
