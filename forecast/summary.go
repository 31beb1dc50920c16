package forecast

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/translate"
)

// summaryOf is what the report says of the forecast (Suggested aside).
func summaryOf(opts Options, j *CutoverForecast) (*cutover.Summary, error) {
	fc := j.Forecast
	s := &cutover.Summary{GFDLabels: string(cmp.Or(opts.GFDLabels, GFDLabelsDrop)), Nodes: len(fc.Nodes), Devices: map[string]int{}, Order: placementOrder}
	if fc.Platform != nil {
		s.Platform, s.PlatformFacts = fc.Platform.Name, fc.Platform.Lines()[1:]
	}
	switched := map[string]bool{}
	unknown, notes := map[string]bool{}, map[string]bool{}
	for _, n := range fc.Nodes {
		if n.Switched {
			s.Switched++
		} else if len(n.Drivers) > 0 || n.Why != "" && !strings.HasPrefix(n.Why, "no accelerator") {
			s.Left = append(s.Left, cutover.NodeNote{Name: n.Name, Why: n.Why})
		}
		for _, d := range n.Drivers {
			if d.NotForecast != "" {
				s.NotForecast = append(s.NotForecast, cutover.NodeNote{Name: n.Name + " " + d.Driver, Why: d.NotForecast})
				continue
			}
			if n.Switched {
				s.Devices[d.Driver] += d.Devices
				switched[d.Driver] = true
			}
			for _, u := range d.Unknown {
				unknown[u] = true
			}
			for _, x := range d.Notes {
				notes[x] = true
			}
		}
	}
	s.Unknown, s.Notes = slices.Sorted(maps.Keys(unknown)), slices.Sorted(maps.Keys(notes))
	s.Caveats = caveatsFor(switched)
	if c, ok := autoscalingCaveat(opts.Policy, j); ok {
		s.Caveats = append(s.Caveats, c)
	}
	s.Caveats = append(s.Caveats, switchCaveats(j, fc.Platform)...)
	s.Pools = poolScales(j, fc.Platform)
	for _, c := range fc.After.Classes {
		s.Classes = append(s.Classes, c.Name)
	}
	var b bytes.Buffer
	if err := fc.WriteYAML(&b); err != nil {
		return nil, fmt.Errorf("forecast fleet: %w", err)
	}
	s.YAML = b.String()
	return s, nil
}

// autoscalingCaveat is the caveat of a fleet with nodes in pools that an
// autoscaler grows and does not grow for pods with claims (the policy's
// autoscaling rule): the workloads that move keep the nodes the pools have
// at the switch, and no scale-up adds to them.
func autoscalingCaveat(p *translate.Policy, j *CutoverForecast) (cutover.Caveat, bool) {
	if p == nil {
		return cutover.Caveat{}, false
	}
	labels := p.AutoscaledPoolLabels()
	pools := map[string]int{}
	remedies := map[string]bool{}
	for _, n := range j.Before.Inventory.Nodes {
		if k, v, ok := ignoringPool(n, labels, j.Forecast.Platform); ok {
			pools[k+"="+v]++
			if pool := j.Forecast.Platform.PoolOf(n.Labels); pool != nil {
				if _, remedy, _ := pool.FromZero(); remedy != "" {
					remedies[remedy] = true
				}
			}
		}
	}
	if len(pools) == 0 {
		return cutover.Caveat{}, false
	}
	names := slices.Sorted(maps.Keys(pools))
	nodes := 0
	for _, n := range pools {
		nodes += n
	}
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("%d more", len(pools)-3))
	}
	return cutover.Caveat{
		Text: fmt.Sprintf("Autoscaling: %d of the nodes are in autoscaled pools (%s) whose autoscaler adds no node for a pod whose devices come from a claim. "+
			"The workloads that move keep the nodes these pools have at the switch, and a scale-up past them stays Pending; the rows marked autoscaling lost need more already. "+
			"Scale the pools for every replica before the switch, or set autoscaling.draAware: true in the policy once the autoscaler provisions for claims%s.", nodes, strings.Join(names, ", "), remedyText(remedies)),
		Source: "kubernetes-sigs/karpenter v1.14.1: --ignore-dra-requests defaults to true (pkg/operator/options/options.go), and a pod with resource claims is then not provisioned for " +
			"(pkg/controllers/provisioning/scheduling/scheduler.go); kubernetes-sigs/karpenter#3228 tracks DRA support",
	}, true
}

// remedyText is "; to make it provision for them: …" of the pools'
// autoscalers, "" when none is known.
func remedyText(remedies map[string]bool) string {
	if len(remedies) == 0 {
		return ""
	}
	return "; to make it provision for them: " + strings.Join(slices.Sorted(maps.Keys(remedies)), "; ")
}

// unserved: the whole-cluster placement serves fewer pods than the
// workload asks for, and it runs today (or would run alone).
func unserved(c cutover.Effect) bool {
	switch c.Result {
	case cutover.Breaks, cutover.OrderDependent, cutover.Partial:
		return true
	}
	return false
}

// suggest proposes, per extended resource of the workloads not served that
// no class of the forecast maps, the DeviceClass with extendedResourceName
// that would let the scheduler serve them as submitted (KEP-5004), and
// keeps it only for what a re-run of the whole forecast with that class
// added shows: the pods of those workloads served more, and every result
// it changes. The re-run is the forecast itself, judged as fully as the
// first run, so what it lists is what audit --forecast says with the
// class.
func suggest(ctx context.Context, in CutoverInput, j *CutoverForecast) ([]cutover.SuggestedClass, error) {
	mapped := map[string]bool{}
	for _, c := range j.Forecast.After.Classes {
		if c.Spec.ExtendedResourceName != nil {
			mapped[*c.Spec.ExtendedResourceName] = true
		}
	}
	wanted := map[string]bool{}
	for i, c := range j.Cutovers {
		if !unserved(c) || j.Workloads[i].Decision == nil {
			continue
		}
		for res := range j.Workloads[i].Decision.Requested {
			if !mapped[string(res)] {
				wanted[string(res)] = true
			}
		}
	}
	var out []cutover.SuggestedClass
	for _, res := range slices.Sorted(maps.Keys(wanted)) {
		class, ok := classServing(in.Options.Policy, j.Forecast.After.Classes, res)
		if !ok {
			continue
		}
		opts := in.Options
		opts.Classes = append(slices.Clone(j.Forecast.After.Classes), class)
		again, err := forecastAndPlace(ctx, in, opts)
		if err != nil {
			return nil, err
		}
		s := confirmed(j, again, res)
		if s.Rows == 0 {
			continue // the re-run serves none of them more: nothing to promise
		}
		y, err := yaml.Marshal(class)
		if err != nil {
			return nil, err
		}
		s.YAML = string(y)
		out = append(out, s)
	}
	return out, nil
}

// confirmed compares the re-run with the class with the first run,
// workload by workload, each named by its file and object (two workloads
// of one name in different files are two; the same object twice in one
// file is matched in its order): Rows and Devices count the workloads not
// served without the class that it serves more, Changes every workload
// whose result or pods served differ.
func confirmed(j, again *CutoverForecast, res string) cutover.SuggestedClass {
	s := cutover.SuggestedClass{Resource: res}
	byID := map[workloadID]int{}
	for i, id := range workloadIDs(again.Workloads) {
		byID[id] = i
	}
	for i, id := range workloadIDs(j.Workloads) {
		k, ok := byID[id]
		if !ok {
			continue
		}
		w, was, now := j.Workloads[i], j.Cutovers[i], again.Cutovers[k]
		if unserved(was) && now.Served > was.Served {
			s.Rows++
			s.Devices += (now.Served - was.Served) * perPod(w)
		}
		if was.Result != now.Result || was.Served != now.Served {
			s.Changes = append(s.Changes, cutover.Change{Object: w.Key, Source: w.Source, Was: was.Result, Now: now.Result,
				WasServed: was.Served, NowServed: now.Served, Pods: max(was.Pods, now.Pods)})
		}
	}
	return s
}

// workloadID names a workload by its file, its object and, for the same
// object read twice from one file, which time.
type workloadID struct {
	source, key string
	nth         int
}

// workloadIDs are the workloads' IDs, in their order.
func workloadIDs(ws []Workload) []workloadID {
	seen := map[workloadID]int{}
	out := make([]workloadID, len(ws))
	for i, w := range ws {
		id := workloadID{source: w.Source, key: w.Key}
		out[i] = workloadID{source: w.Source, key: w.Key, nth: seen[id]}
		seen[id]++
	}
	return out
}

// perPod is the devices one pod of the workload asks for.
func perPod(w Workload) int64 {
	var n int64
	if w.Decision != nil {
		for _, c := range w.Decision.Requested {
			n += c
		}
	}
	return n
}

// classServing is the DeviceClass that would serve the extended resource
// as submitted: a copy of the class the policy maps the resource to (with
// the rule's selectors), with extendedResourceName set.
func classServing(p *translate.Policy, classes []*resourceapi.DeviceClass, res string) (*resourceapi.DeviceClass, bool) {
	rule, ok := p.LegacyResource(corev1.ResourceName(res), nil)
	if !ok || rule.Shared {
		return nil, false
	}
	for _, c := range classes {
		if c.Name != rule.DeviceClassName {
			continue
		}
		out := &resourceapi.DeviceClass{TypeMeta: metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "DeviceClass"},
			ObjectMeta: metav1.ObjectMeta{Name: c.Name + "-extended"}, Spec: *c.Spec.DeepCopy()}
		for _, sel := range rule.Selectors {
			out.Spec.Selectors = append(out.Spec.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: sel}})
		}
		r := res
		out.Spec.ExtendedResourceName = &r
		return out, true
	}
	return nil, false
}
