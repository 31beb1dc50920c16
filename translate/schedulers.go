package translate

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// Output profiles of the schedulers and queues. What a scheduler does with
// claims decides what a translation for its pods may contain: a request it
// cannot allocate strands the pod; one its queue accounting does not count
// lets the pod escape a quota. The built-in profiles are the API's
// (v1alpha1.BuiltinScheduler); a policy's entry replaces any field it sets.

// SchedulerProfile returns the resolved entry of a schedulerName ("" is
// default-scheduler) and whether the policy lists it.
func (p *Policy) SchedulerProfile(name string) (v1alpha1.SchedulerEntry, bool) {
	if name == "" {
		name = v1alpha1.DefaultScheduler
	}
	for _, e := range p.spec.Schedulers {
		if e.Name == name {
			return e.Resolved(), true
		}
	}
	return v1alpha1.SchedulerEntry{Name: name}, false
}

// Schedulers returns the schedulerName values whose pods may be translated:
// those the policy lists whose output is not Skip.
func (p *Policy) Schedulers() []string {
	var out []string
	for _, e := range p.spec.Schedulers {
		if e.Resolved().Output != v1alpha1.OutputSkip {
			out = append(out, e.Name)
		}
	}
	return out
}

// Kueue (kubernetes-sigs/kueue, DRA integration beta since v0.18). Kueue
// admits a workload whose pod sets use claims only when it can count them:
// countDevicesPerClass (pkg/dra/claims.go) rejects a request with
// firstAvailable ("FirstAvailable device selection is not supported") or
// allocationMode All, and a DeviceClass that resources.deviceClassMappings
// of its Configuration does not list ("DeviceClass %s is not mapped in DRA
// configuration"). Kueue-managed pods therefore get at most ExactlyOnly
// (resolveOutput) and only mapped classes (output.go); the mappings are the
// policy's spec.kueue, or Kueue's own Configuration
// (v1alpha1.ParseKueueConfiguration, [Policy.WithKueueMappings]).

// QueueLabel is the label that makes a pod (or a workload, for its pod
// templates) Kueue-managed.
const QueueLabel = "kueue.x-k8s.io/queue-name"

// Labels Kueue puts on the pods it manages that may lack QueueLabel: the
// pod template of a workload Kueue admitted carries its PodSet's name
// (the Job's pods do not carry the Job's queue-name), and a plain pod of
// Kueue's pod integration is marked managed.
const (
	KueuePodSetLabel  = "kueue.x-k8s.io/podset"
	KueueManagedLabel = "kueue.x-k8s.io/managed"
)

// kueueManaged says how a pod shows that Kueue manages it ("queue
// \"research\""), and the label that shows it; "" when it does not.
func kueueManaged(pod *corev1.Pod) (who, label string) {
	if q, ok := pod.Labels[QueueLabel]; ok {
		return fmt.Sprintf("queue %q", q), QueueLabel
	}
	if ps, ok := pod.Labels[KueuePodSetLabel]; ok {
		return fmt.Sprintf("podset %q of a workload it admitted", ps), KueuePodSetLabel
	}
	if pod.Labels[KueueManagedLabel] == "true" {
		return "label " + KueueManagedLabel, KueueManagedLabel
	}
	return "", ""
}

// output is what the rest of the stack allows a translation of one pod.
type output struct {
	profile   v1alpha1.OutputProfile
	scheduler v1alpha1.SchedulerEntry // resolved
	kueue     string                  // how the pod shows Kueue manages it (kueueManaged), "" when not
	kueueKey  string                  // the label that shows it
}

// single reports whether requests get one alternative each.
func (o *output) single() bool { return o.profile == v1alpha1.OutputExactlyOnly }

// takesNo says who takes no firstAvailable, for reasons:
// "scheduler volcano takes", "Kueue (queue research) takes".
func (o *output) takesNo() string {
	var who []string
	if o.scheduler.Output == v1alpha1.OutputExactlyOnly {
		who = append(who, "scheduler "+o.scheduler.Name)
	}
	if o.kueue != "" {
		who = append(who, "Kueue ("+o.kueue+")")
	}
	if len(who) == 2 {
		return strings.Join(who, " and ") + " take"
	}
	return strings.Join(who, "") + " takes"
}

// resolveOutput finds the pod's output: its scheduler's profile, made
// stricter by Kueue's for a Kueue-managed pod. It returns false, with the
// reason, when the pod is skipped.
func (t *translation) resolveOutput() bool {
	name := schedulerName(t.pod)
	entry, listed := t.p.SchedulerProfile(name)
	if !listed {
		msg := "scheduler %q is not one the policy lists as allocating DRA claims (spec.schedulers: %s); the pod keeps its device-plugin resources (add the scheduler to spec.schedulers if it allocates claims)"
		args := []any{name, strings.Join(t.p.schedulerNames(), ", ")}
		if k, why, ok := v1alpha1.BuiltinScheduler(name); ok {
			msg += "; claimbridge's built-in profile for it is %s: %s"
			args = append(args, k.Output, why)
		}
		t.add(say(ReasonSchedulerNotListed, field.NewPath("spec", "schedulerName"), msg, args...))
		return false
	}
	if entry.Output == v1alpha1.OutputSkip {
		why := "the policy says so"
		if _, k, ok := v1alpha1.BuiltinScheduler(name); ok && slices.ContainsFunc(t.p.spec.Schedulers, func(e v1alpha1.SchedulerEntry) bool { return e.Name == name && e.Output == "" }) {
			why = "claimbridge's built-in profile: " + k
		}
		t.add(say(ReasonSchedulerSkipped, field.NewPath("spec", "schedulerName"),
			"pods of scheduler %q are not translated (spec.schedulers output Skip; %s); the pod keeps its device-plugin resources", name, why))
		return false
	}
	t.out = output{profile: entry.Output, scheduler: entry}
	if who, key := kueueManaged(t.pod); who != "" {
		t.out.kueue, t.out.kueueKey = who, key
		kq := t.p.spec.Kueue.Output
		if kq == "" {
			kq = v1alpha1.OutputExactlyOnly
		}
		if kq == v1alpha1.OutputSkip {
			t.add(say(ReasonSchedulerSkipped, field.NewPath("metadata", "labels").Key(key),
				"the pod is managed by Kueue (%s) and the policy does not translate such pods (spec.kueue.output: Skip); it keeps its device-plugin resources", who))
			return false
		}
		t.out.profile = t.out.profile.Stricter(kq)
	}
	return true
}

func (p *Policy) schedulerNames() []string {
	var out []string
	for _, e := range p.spec.Schedulers {
		out = append(out, e.Name)
	}
	return out
}

// matchesResource reports whether a resource name matches one of the names
// or trailing-"*" patterns.
func matchesResource(patterns []string, n corev1.ResourceName) bool {
	for _, p := range patterns {
		if base, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(string(n), base) && string(n) != base {
				return true
			}
		} else if p == string(n) {
			return true
		}
	}
	return false
}
