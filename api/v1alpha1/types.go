package v1alpha1

import (
	"encoding/json"

	"github.com/claimbridge/claimbridge/api"
)

// PolicyAPIVersion and PolicyKind identify a TranslationPolicy document.
const (
	PolicyAPIVersion = api.GroupVersion
	PolicyKind       = "TranslationPolicy"
)

// TranslationPolicy says how legacy device requests (extended resources and
// node labels) map to DRA device requests. It is read from YAML or JSON:
// unknown and duplicate fields are rejected, and every error names the
// path of its field.
type TranslationPolicy struct {
	// APIVersion is "claimbridge.io/v1alpha1". Required.
	APIVersion string `json:"apiVersion"`
	// Kind is "TranslationPolicy". Required.
	Kind string `json:"kind"`
	// Metadata names the policy.
	Metadata PolicyMetadata `json:"metadata,omitempty"`
	// Spec holds the rules.
	Spec PolicySpec `json:"spec"`
}

// PolicyMetadata names a policy. Only the name is used (in reasons and logs).
type PolicyMetadata struct {
	// Name of the policy, as reasons and logs show it. Optional.
	Name string `json:"name,omitempty"`
}

// PolicySpec holds the rules. Rules of the named built-in profiles come first,
// then the rules written here; for a resource name or label key that two rules
// map, the later rule wins.
type PolicySpec struct {
	// Profiles are built-in profiles whose rules are included, in this order.
	// Default: none. A policy that names no profile and has no resource rule
	// is rejected. Without a policy at all, claimbridge uses every built-in
	// profile but the opt-in ones ("dra-cpu", "hami",
	// "nvidia-fabric-manager").
	Profiles []string `json:"profiles,omitempty"`

	// KeepTranslatedNodeLabels leaves node-label requirements in the pod after
	// they were turned into device selectors. Default false: they are removed,
	// because DRA nodes do not carry the labels of device plugins.
	KeepTranslatedNodeLabels bool `json:"keepTranslatedNodeLabels,omitempty"`

	// GFDFamilyScheme says which GPU Feature Discovery release labelled the
	// nodes, because nvidia.com/gpu.family changed meaning: "Current" (default)
	// labels compute capability 8.9 as "ada-lovelace", "Legacy" labels every
	// 8.x as "ampere".
	GFDFamilyScheme GFDFamilyScheme `json:"gfdFamilyScheme,omitempty"`

	// Resources map extended-resource names to device requests.
	Resources []ResourceRule `json:"resources,omitempty"`

	// NodeLabels map node-label keys to device attributes or capacities.
	NodeLabels []NodeLabelRule `json:"nodeLabels,omitempty"`

	// Alignment rules add "matchAttribute" constraints.
	Alignment []AlignmentRule `json:"alignment,omitempty"`

	// Fallbacks add prioritized alternatives after a matching one.
	Fallbacks []FallbackRule `json:"fallbacks,omitempty"`

	// Partitions say which devices come in fixed partitions that a claim
	// must match (Fabric Manager's GPU partitions; the opt-in
	// "nvidia-fabric-manager" profile).
	Partitions []PartitionRule `json:"partitions,omitempty"`

	// ShareCapacities say how a DRA driver marks the devices of some
	// families that several claims share: the device allows multiple
	// allocations and publishes a capacity that counts its shares, of which
	// each claim consumes a part (DRA consumable capacity, KEP-5075). The
	// nvidia profile names the NVIDIA DRA driver's (gpu.nvidia.com/shares,
	// published with its "ConsumableShares" feature gate). Vocabulary: with
	// it a shared resource of sharing mode [SharingConsumableShares] becomes
	// a share of a device, and a whole device a request for all of its
	// shares.
	ShareCapacities []ShareCapacityRule `json:"shareCapacities,omitempty"`

	// ConsumableShares says, for translating without a fleet (claimbridge
	// translate, explain, audit, krm and the post-renderer without
	// --fleet), that the DRA devices of these families will be shared, and
	// how many shares each will publish (the NVIDIA DRA driver's
	// --consumable-shares=N). With a fleet (the webhook, --fleet, the
	// cutover forecast) the devices say it themselves and this is not
	// read. Default: none, so that a share of a device is translated only
	// where something says the devices are shared.
	ConsumableShares []ConsumableSharesRule `json:"consumableShares,omitempty"`

	// MemoryShares says how many ways a share of a device splits its
	// memory, for devices that claims share by memory rather than by a
	// count of shares (the NVIDIA DRA driver's --consumable-shares=memory,
	// where a claim that asks for no memory takes all of it, and
	// --consumable-shares=unlimited, where it takes none): a share the pod
	// asks for becomes a request for 1/N of the device's memory
	// (ShareCapacityRule.Memory), rounded down to a MiB, one alternative
	// per memory size of the fleet's devices, so that at most N such
	// claims share one device, as N time-slicing replicas did. Default:
	// none; devices shared by memory then serve no share in memory mode
	// (the pod stays, SharesUnavailable), and in unlimited mode a share
	// asks for no memory and any number share a device.
	MemoryShares []MemorySharesRule `json:"memoryShares,omitempty"`

	// Schedulers lists the schedulerName values of the schedulers that
	// allocate DRA claims in this cluster, each with the output its pods
	// get ([SchedulerEntry]: a plain name takes claimbridge's built-in
	// profile for it); a pod for any other scheduler is not translated
	// (SchedulerNotListed), because nothing would allocate its claim. An
	// empty schedulerName is "default-scheduler", as API defaulting makes
	// it. Default: "[default-scheduler]".
	//
	// As of Kubernetes 1.37 (sources in the schedulers table,
	// docs/reference/policy.md#schedulers-queues-and-quota): Volcano ≥
	// v1.15 ("volcano") and KAI-Scheduler ("kai-scheduler") allocate
	// claims, and their built-in profiles are [OutputExactlyOnly]
	// (Volcano's queue quota skips firstAvailable; KAI's allocator runs
	// without it, without consumable capacity, and counts GPUs only on
	// classes named "…gpu…"); scheduler-plugins and Koordinator run the
	// upstream plugin but their shipped RBAC cannot write claim status, and
	// YuniKorn, kube-batch and HAMi's scheduler extender do not allocate
	// claims: their profiles are [OutputSkip]. None but "default-scheduler"
	// is listed by default.
	Schedulers []SchedulerEntry `json:"schedulers,omitempty"`

	// Kueue says how pods that Kueue manages (label
	// kueue.x-k8s.io/queue-name) are translated. Default: [OutputExactlyOnly],
	// and only to DeviceClasses that Kueue's deviceClassMappings list (none
	// known by default, so such pods stay as submitted).
	Kueue KueueRule `json:"kueue,omitempty"`

	// Deference says when a pod is left to KEP-5004 instead of translated.
	Deference DeferenceRule `json:"deference,omitempty"`

	// Preemption says what happens to pods that translation would keep from
	// preempting: in Kubernetes 1.37 a pod whose devices come from a claim
	// cannot preempt lower-priority pods to get them. Default: such pods are
	// translated with the warning PreemptionLost.
	Preemption PreemptionRule `json:"preemption,omitempty"`

	// ImplicitTolerations says that the target cluster runs the
	// ExtendedResourceToleration admission plugin (GKE does), which adds,
	// for each extended resource a container requests, the toleration
	// "{key: <resource>, operator: Exists, effect: NoSchedule}". When true,
	// translation offline (claimbridge translate, audit, explain, krm, the
	// post-renderer) adds that toleration for every extended resource it
	// removes from the pod (none when an equal or broader toleration is
	// there), so the pod still tolerates the taints of the nodes that have
	// those devices, and the placement check gives the pod as submitted the
	// plugin's tolerations. The webhook never adds one: the plugin runs
	// before it, and the pod it sees carries what the cluster gives. False
	// says the cluster does not run it. Default: true when the policy names
	// a profile that turns it on ("gke", "tpu"); else unset, as in the default
	// policy: then a pod whose required node selection names a label only
	// GKE nodes carry (cloud.google.com/gke-accelerator, gke-nodepool, …)
	// is taken to run on GKE, which runs the plugin, and any other pod to
	// run where it does not (a translation for it says the toleration is
	// left out: ImplicitTolerationsUnknown).
	ImplicitTolerations *bool `json:"implicitTolerations,omitempty"`

	// Placement is the rule of the placement check, which compares, over
	// the nodes that publish DRA devices, where a translated pod can land
	// with where the pod as submitted could: "Exact" (default) translates
	// only when the two sets of nodes are equal; "Subset" also when the
	// translation loses nodes but gains none; "Off" does not compare.
	Placement PlacementRule `json:"placement,omitempty"`

	// WhenDRABusy says what happens to a pod that DRA can serve only once
	// devices free up (they are in use, or held by pods admitted a moment
	// ago) while a device-plugin node has room for it now: "KeepLegacy"
	// (default) keeps it as submitted, so that it runs now on the device
	// plugin; "Wait" translates it, and its warning says it waits for DRA
	// devices (for a namespace that drains the device plugin). A namespace
	// may set its own with the label [api.LabelWhenDRABusy].
	WhenDRABusy WhenDRABusy `json:"whenDRABusy,omitempty"`

	// OnUnservable says what happens to a pod that is not translated and
	// asks for an extended resource that no node offers as much of as it
	// needs (once a cluster switched from the device plugin to DRA, no node
	// advertises nvidia.com/gpu any more, so such a pod would stay Pending
	// forever): "Admit" (default) admits it with a warning; "Deny" refuses
	// its creation in enforce namespaces (audit namespaces only say that it
	// would be refused). A namespace may set its own with the label
	// [api.LabelOnUnservable].
	OnUnservable OnUnservable `json:"onUnservable,omitempty"`

	// Autoscaling says which nodes belong to pools that an autoscaler
	// grows for the pods it sees Pending, and whether it grows them for
	// pods whose devices come from claims. Default: a node labelled
	// [KarpenterNodePoolLabel] is in such a pool, and its autoscaler does
	// not provision for claims.
	Autoscaling AutoscalingRule `json:"autoscaling,omitempty"`
}

// AutoscalingRule says where the cluster's node autoscalers add nodes for
// pods, and whether they do for pods whose devices come from claims.
//
// A pod that waits Pending for DRA devices in a pool whose autoscaler
// ignores claims gets no new node, while the same pod as submitted, asking
// for an extended resource, would make the autoscaler add one. As of
// Kubernetes 1.37 (sources in docs/concepts/dra-busy.md): Karpenter v1.14
// does not provision for a pod with resource claims unless it runs with
// --ignore-dra-requests=false (default true), and even then only from the
// devices its cloud provider says an instance type has; Cluster Autoscaler
// handles claims from 1.35 on (before, only with
// --enable-dynamic-resource-allocation) for a node group it can copy a
// live node of.
type AutoscalingRule struct {
	// DRAAware says that the autoscalers of the cluster add nodes for
	// pods whose devices come from claims. Then no pool is treated as
	// autoscaled: a pod waits for DRA devices there as anywhere
	// ([PolicySpec.WhenDRABusy]), and the cutover forecast marks no
	// workload "autoscaling lost". Default false; with it, poolLabels must
	// be empty.
	DRAAware bool `json:"draAware,omitempty"`

	// PoolLabels are the node-label keys that put a node in a pool an
	// autoscaler grows without provisioning for claims: a node that carries
	// one of them (whatever its value, which names the pool). Listing keys
	// replaces the default, [KarpenterNodePoolLabel] alone, which Karpenter
	// sets on every node it launches. Node-group labels that clouds set on every
	// node of a group (eks.amazonaws.com/nodegroup,
	// cloud.google.com/gke-nodepool, kubernetes.azure.com/agentpool) say
	// nothing of whether the group is autoscaled, nor by what: list them
	// only where a Cluster Autoscaler older than 1.35 without
	// --enable-dynamic-resource-allocation grows those groups.
	PoolLabels []string `json:"poolLabels,omitempty"`
}

// KarpenterNodePoolLabel is the label Karpenter sets on every node it
// launches, naming its NodePool (kubernetes-sigs/karpenter
// pkg/apis/v1/labels.go, NodePoolLabelKey): the default of
// AutoscalingRule.PoolLabels.
const KarpenterNodePoolLabel = "karpenter.sh/nodepool"

// OnUnservable is the rule for a pod kept as submitted that no node can
// serve: the policy's [PolicySpec.OnUnservable], or a namespace's own with
// the label [api.LabelOnUnservable], which wins over the policy's.
type OnUnservable string

// OnUnservable rules.
const (
	// OnUnservableAdmit admits the pod with a warning (LegacyUnservable);
	// the policy's default.
	OnUnservableAdmit OnUnservable = "Admit"
	// OnUnservableDeny refuses the pod's creation in an enforce namespace;
	// an audit namespace only says that it would.
	OnUnservableDeny OnUnservable = "Deny"
)

// ParseOnUnservable reads a rule; ok is false for anything else, "" is not
// a rule either.
func ParseOnUnservable(s string) (OnUnservable, bool) {
	switch r := OnUnservable(s); r {
	case OnUnservableAdmit, OnUnservableDeny:
		return r, true
	}
	return "", false
}

// WhenDRABusy is the rule for a pod that DRA can serve only once devices
// free up while a device-plugin node has room for it now: the policy's
// [PolicySpec.WhenDRABusy], or a namespace's own with the label
// [api.LabelWhenDRABusy], which wins over the policy's.
type WhenDRABusy string

// WhenDRABusy rules.
const (
	// WhenDRABusyKeepLegacy keeps the pod as submitted, so that it runs now
	// on the device plugin; the policy's default.
	WhenDRABusyKeepLegacy WhenDRABusy = "KeepLegacy"
	// WhenDRABusyWait translates the pod, and its warning says that it
	// waits for DRA devices: for a namespace that drains the device plugin.
	WhenDRABusyWait WhenDRABusy = "Wait"
)

// ParseWhenDRABusy reads a rule; ok is false for anything else, "" is
// not a rule either.
func ParseWhenDRABusy(s string) (WhenDRABusy, bool) {
	switch r := WhenDRABusy(s); r {
	case WhenDRABusyKeepLegacy, WhenDRABusyWait:
		return r, true
	}
	return "", false
}

// DefaultScheduler is the schedulerName of kube-scheduler, the default of
// PolicySpec.Schedulers.
const DefaultScheduler = "default-scheduler"

// PreemptionRule says which pods stay legacy because translation would keep
// them from preempting.
type PreemptionRule struct {
	// KeepLegacyAbovePriority, when set, keeps a pod as submitted
	// (PreemptionLost) when its spec.priority is greater than this value
	// and its preemptionPolicy is not "Never"; a pod whose priority is not
	// resolved (a priorityClassName without spec.priority, as in a
	// manifest) counts as above. Unset (default): such pods are translated
	// with the warning PreemptionLost, because most GPU workloads are not
	// scheduled by preemption and keeping them all legacy would stop the
	// migration.
	KeepLegacyAbovePriority *int32 `json:"keepLegacyAbovePriority,omitempty"`

	// DRAPreemption says that the cluster's scheduler preempts for devices
	// of claims (KEP-5690, feature gate "DRAPreemption" of kube-scheduler):
	// then translation costs no pod its preemption, so there is no
	// PreemptionLost warning and KeepLegacyAbovePriority is not applied.
	// Default false: Kubernetes 1.37 has no such gate (its
	// DynamicResources plugin implements no PreFilterExtensions), and the
	// KEP, off by default where it lands, excludes pods of a PodGroup.
	DRAPreemption bool `json:"draPreemption,omitempty"`
}

// PlacementRule says when a translation's placement is acceptable.
type PlacementRule string

// Placement rules.
const (
	PlacementExact  PlacementRule = "Exact"
	PlacementSubset PlacementRule = "Subset"
	PlacementOff    PlacementRule = "Off"
)

// UnmarshalJSON reads a rule. YAML 1.1, which policies are read as, turns
// an unquoted Off into false; it is read as Off. True, which names no rule,
// is kept as "true" for validation to refuse with the field path.
func (r *PlacementRule) UnmarshalJSON(data []byte) error {
	switch string(data) {
	case "false":
		*r = PlacementOff
		return nil
	case "true":
		*r = "true"
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	*r = PlacementRule(s)
	return nil
}

// GFDFamilyScheme selects how nvidia.com/gpu.family values map to compute capabilities.
type GFDFamilyScheme string

// GFD family schemes.
const (
	GFDFamilyCurrent GFDFamilyScheme = "Current"
	GFDFamilyLegacy  GFDFamilyScheme = "Legacy"
)

// ShareCapacityRule names the capacity by which a DRA driver counts the
// shares of the devices of some families.
type ShareCapacityRule struct {
	// Families whose devices may be shared. Required.
	Families []string `json:"families"`
	// Capacity is "<domain>/<name>" of the capacity that counts a device's
	// shares ("gpu.nvidia.com/shares"). A device that allows multiple
	// allocations and publishes it is shared; a claim asks for a share by
	// the capacity's name as the driver publishes it in its own domain
	// ("shares"), for the whole device by all of them. Required.
	Capacity string `json:"capacity"`
	// Memory is "<domain>/<name>" of the capacity that holds a device's
	// memory ("gpu.nvidia.com/memory"), by which devices that publish no
	// share count are shared (PolicySpec.MemoryShares). Default: none, and
	// devices shared by memory serve no share.
	Memory string `json:"memory,omitempty"`
}

// MemorySharesRule says into how many shares a device shared by memory
// splits its memory.
type MemorySharesRule struct {
	// Families whose devices are shared by memory; each must have a memory
	// capacity ([ShareCapacityRule.Memory]). Required.
	Families []string `json:"families"`
	// Shares is how many claims share one device: each asks for this
	// fraction of its memory. Set it to the time-slicing replicas the
	// workloads ran with. 1 to 64. Required.
	Shares int64 `json:"shares"`
}

// ConsumableSharesRule says that the DRA devices of some families will be
// shared, and how many shares each will publish.
type ConsumableSharesRule struct {
	// Families whose devices are shared; each must have a share capacity
	// ([PolicySpec.ShareCapacities]). Required.
	Families []string `json:"families"`
	// Shares are the numbers of shares a device publishes: one per DRA
	// driver installation (the NVIDIA driver takes one --consumable-shares
	// for all its devices; nodes shared N ways and M ways need two
	// installations). At least one, at most 7, each at least 1. Required.
	Shares []int64 `json:"shares"`
}
