package v1alpha1

// The built-in profiles of the schedulers and queues, the defaults of a
// SchedulerEntry's fields. What a scheduler does with claims decides what a
// translation for its pods may contain: a request it cannot allocate strands
// the pod; one its queue accounting does not count lets the pod escape a
// quota. The profiles below are read from the schedulers' source as of
// Kubernetes 1.37 (the schedulers table of docs/reference/policy.md cites
// file and commit); a policy's entry replaces any field it sets.

// knownScheduler is the built-in profile of one scheduler and why.
type knownScheduler struct {
	entry SchedulerEntry
	// why says, in one line with its source, what makes the profile.
	why string
}

var (
	noConsumableCapacity = false

	// kaiGPUResources are the legacy resources KAI-Scheduler accounts as
	// GPUs of a queue.
	kaiGPUResources = []string{"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*"}
)

// knownSchedulers are the built-in profiles, by schedulerName.
var knownSchedulers = map[string]knownScheduler{
	DefaultScheduler: {
		entry: SchedulerEntry{Output: OutputFull},
		why:   "kube-scheduler's DynamicResources plugin allocates every request claimbridge makes",
	},
	"volcano": {
		entry: SchedulerEntry{Output: OutputExactlyOnly},
		why:   "Volcano (v1.15+) allocates claims with the upstream plugin, but its queue quota skips firstAvailable and allocationMode All requests (pkg/scheduler/cache/cache.go)",
	},
	"kai-scheduler": {
		entry: SchedulerEntry{
			Output:             OutputExactlyOnly,
			ClassNameContains:  []ClassNameRule{{Resources: kaiGPUResources, Value: "gpu"}},
			ConsumableCapacity: &noConsumableCapacity,
		},
		why: "KAI-Scheduler's allocator runs with every DRA feature off (structured.Features{}: no firstAvailable, consumable capacity or device taints), and its queue accounting counts GPUs only on classes whose name contains \"gpu\" (pkg/common/resources/dra.go)",
	},
	"yunikorn": {
		entry: SchedulerEntry{Output: OutputSkip},
		why:   "YuniKorn runs only the DRA PreFilter and Filter and never allocates a claim (yunikorn-k8shim pkg/plugin/predicates/predicate_manager.go)",
	},
	"kube-batch": {
		entry: SchedulerEntry{Output: OutputSkip},
		why:   "kube-batch has no DRA code",
	},
	"koord-scheduler": {
		entry: SchedulerEntry{Output: OutputSkip},
		why:   "Koordinator's scheduler role cannot write resourceclaims/binding (config/rbac/scheduler_role.yaml), and its node agents do not support DRA (koordinator#2855)",
	},
	"scheduler-plugins-scheduler": {
		entry: SchedulerEntry{Output: OutputSkip},
		why:   "the scheduler-plugins chart's ClusterRole can only read claims, not write their status or binding (manifests/install/charts/as-a-second-scheduler/templates/rbac.yaml)",
	},
	"hami-scheduler": {
		entry: SchedulerEntry{Output: OutputSkip},
		why:   "HAMi's scheduler extender places device-plugin resources and does not allocate claims",
	},
}

// BuiltinScheduler is claimbridge's built-in profile of a scheduler, by
// schedulerName, and why, in one line with its source; ok is false for a
// scheduler it has no row for.
func BuiltinScheduler(name string) (entry SchedulerEntry, why string, ok bool) {
	k, ok := knownSchedulers[name]
	return k.entry, k.why, ok
}

// Resolved is the entry with the fields it leaves unset filled from the
// built-in profile of its scheduler (Full, no class rules, consumable
// capacity when there is none).
func (e SchedulerEntry) Resolved() SchedulerEntry {
	k := knownSchedulers[e.Name].entry
	if e.Output == "" {
		e.Output = k.Output
	}
	if e.Output == "" {
		e.Output = OutputFull
	}
	if e.ClassNameContains == nil {
		e.ClassNameContains = k.ClassNameContains
	}
	if e.ConsumableCapacity == nil {
		e.ConsumableCapacity = k.ConsumableCapacity
	}
	return e
}
