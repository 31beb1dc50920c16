// Package legacy is the device plugin's side of the fleet: a pod as
// submitted, asking for extended resources, and the nodes as it meets them.
//
//   - The legacy view of a DRA node ([View]): the labels and extended
//     resources the device plugins and GPU Feature Discovery, Node Feature
//     Discovery or GKE would have shown on it, derived from the devices it
//     publishes ([Devices]) with the policy's vocabulary read backwards.
//     Labels the node really carries win over derived ones.
//   - The pod as submitted in the canonical form the view derives
//     ([CanonicalPod]), and as the policy's fallbacks widen it
//     ([FallbackVariants]): the legacy side of feasibility's placement
//     check.
//   - What the device plugins offer over a fleet's nodes ([Nodes]): where
//     the pod could run at all ([Nodes.Offers]), and the extended resources
//     no node it may run on advertises enough of ([Nodes.Unservable]). This
//     is capacity: what runs on the nodes does not count.
//
// The package is pure and deterministic: no API client, no allocator, no
// global state; inputs are not modified. It imports translate (the policy
// and its vocabulary) and upstream (kube-scheduler's node filters and
// requests); feasibility gives it a node's devices and its fleet's nodes.
package legacy
