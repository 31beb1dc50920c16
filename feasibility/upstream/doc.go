// Package upstream mirrors, on plain API objects, what Kubernetes does with
// a pod, its claims, the fleet's ResourceSlices and the allocated devices
// before and around the structured allocator — what feasibility must do
// the same way for its verdicts to be kube-scheduler's:
//
//   - kube-apiserver's defaults: a claim's requests ([DefaultClaims]: an
//     empty AllocationMode is ExactCount, a count of 0 is 1), a container's
//     requests from its limits ([WithDefaultRequests]), and list-type
//     attributes kept only where the cluster has DRAListTypeAttributes
//     ([PublishesListAttributes]);
//   - kube-scheduler's node filters NodeUnschedulable, NodeAffinity and
//     TaintToleration ([NodeRejects]), and NodeResourcesFit: the requests
//     it counts ([PodRequests]) against a node's allocatable after what its
//     pods request ([Requests.Short]);
//   - the DynamicResources plugin's score of prioritized alternatives
//     ([Score], [TopScore]) and its allocated state, collected like
//     foreachAllocatedDevice ([AllocatedState], [WithAllocations]);
//   - DeviceTaintRules applied to the slices as the resourceslice tracker
//     does ([ApplyTaintRules]), the slices the allocator gathers for one
//     node ([SliceIndex], as GatherPools), and DeviceClasses listed to the
//     allocator ([ClassLister]).
//
// Each function quotes or names the upstream code it follows. The package
// is pure: no API client, no allocator, no state; inputs are not modified.
// An error (DefaultClaims) means the input is invalid.
package upstream
