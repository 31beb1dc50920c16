// Package feasibility answers, before a translated Pod is admitted, whether the fleet can serve
// its ResourceClaims: it runs the upstream structured allocator
// (k8s.io/dynamic-resource-allocation/structured) over an inventory snapshot, node by node, the
// way kube-scheduler's DynamicResources plugin does.
//
// API:
//
//	type Inventory struct{ Nodes; Slices; Classes; Claims; TaintRules }   // what the cluster lists
//	func LoadInventory(paths ...string) (*Inventory, error)               // YAML files or directories
//	func (inv *Inventory) WithClasses(classes ...*DeviceClass) *Inventory  // plus the input's own classes
//	type Features = structured.Features; func DefaultFeatures() Features  // Kubernetes 1.37 default gates
//	func NewSnapshot(inv *Inventory, generation uint64, features Features) (*Snapshot, error)
//	func NewChecker(opts Options) *Checker                                 // Options{Parallelism, Timeout, CacheSize}
//	func (c *Checker) Check(ctx, snap *Snapshot, pod *corev1.Pod, claims []*resourceapi.ResourceClaimSpec) Verdict
//	func (c *Checker) Placement(ctx, snap *Snapshot, in PlacementInput) Placement  // the placement check
//	func (s *Snapshot) MissingClasses(claims []*resourceapi.ResourceClaimSpec) *Verdict  // NeverFits: a class the fleet lacks
//	func (s *Snapshot) LegacyOffers(pod) (want, []LegacyOffer); LegacyUnservable(pod) []Unservable // the device plugin's side
//	func NewFleet(inv *Inventory, opts Options) (*Fleet, error)           // Fleet{Inventory, Snapshot, Checker}, for the CLI
//
// A [Verdict] is FitsNow (node and devices named; a firstAvailable request shows the winning
// alternative as "<request>/<subrequest>"), FitsWhenFree (some node could serve the claims if
// its devices were free), NeverFits (with reasons aggregated per cause), or Unknown (deadline
// hit, inventory not synced, or — AttributesUnknown, unknown.go — the answer depends on
// attributes a forecast's slices leave unknown, named in their claimbridge.io/unknown-attributes:
// never NeverFits then). The check is advisory: the allocator cannot reserve devices and
// kube-scheduler may see claims in flight that the inventory does not.
//
// Mirrored scheduler behaviour (package upstream): DeviceTaintRules are applied to the slices
// (resourceslice/tracker), the allocated state follows foreachAllocatedDevice (adminAccess
// results do not count, shared allocations with consumable capacity), claims are defaulted like
// the apiserver does (the allocator does not default), and candidate nodes pass the
// NodeUnschedulable, NodeAffinity (nodeSelector + required affinity) and TaintToleration
// filters, using k8s.io/component-helpers.
//
// Speed: a node is first checked against an index of the devices it can see; the class and
// request selectors are evaluated once per snapshot and distinct device signature (the
// attributes and capacities a selector reads: package signature), and the answers serve every check
// on the snapshot and its placement proofs, so a fleet of identical nodes costs a handful of CEL
// evaluations. A node, or a node class of the placement proof, is pruned only when some request
// has no alternative with enough matching devices, which the allocator could never satisfy
// either; the allocator judges every node it is not pruned from. The remaining nodes run through the
// allocator in parallel with a deadline; verdicts are cached by (claims and node constraints
// hash, inventory generation), and concurrent identical checks share one search.
//
// The placement check ([Checker.Placement], placement.go) compares, over the nodes that publish
// DRA devices, where a pod as submitted could land on each node's legacy view (package legacy:
// the labels and extended resources its devices stand for, from the policy's vocabulary read
// backwards) with where its translation lands on the real node. It runs once per node class
// (classes.go: nodes with the same devices, labels, taints and allocatable) and caches its
// answers per pod shape. Node fit for what a pod asks besides its claims (CPU, memory,
// hugepages, extended resources) follows kube-scheduler's NodeResourcesFit (fit.go).
//
// Its sub-packages sit below it and know nothing of snapshots or checkers:
//
//   - upstream: what kube-apiserver and kube-scheduler do with a pod, its claims, the slices
//     and the allocated devices, mirrored on plain API objects (it imports nothing of
//     claimbridge);
//   - signature: when two devices or two nodes answer alike — the fields a selector reads, the
//     memo of its answers per device and signature, a node's class key (it imports translate);
//   - legacy: the device plugin's side — the legacy view of a DRA node, the pod as submitted
//     and as the policy's fallbacks widen it, what the device plugins offer over the fleet's
//     nodes (it imports translate and upstream).
//
// feasibility keeps what needs a snapshot: the devices each node sees (deviceindex.go), the
// node classes, the allocators, the search and its lineage, the placement check and the
// verdicts.
//
// What may import it: decide, report, webhook, internal and cmd; it imports translate, api and
// its sub-packages only.
//
// The package is pure: no API client, no logger, no global state. An error from LoadInventory,
// NewSnapshot or NewFleet means invalid input; "does not fit" is a Verdict, never an
// error, and fatal allocator errors (CEL runtime errors, unknown classes) become NeverFits with a
// reason.
package feasibility
