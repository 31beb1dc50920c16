// Package inventory is what a decision reads of the cluster, kept in
// informer caches so that admission never calls the API: the fleet (Nodes,
// ResourceSlices with DeviceTaintRules applied, DeviceClasses, allocated
// ResourceClaims, bound pods) as feasibility snapshots, Namespaces and
// their rules, ResourceQuotas and claimbridge's ResourceClaimTemplates. It
// also holds the devices of translated pods whose claims are not allocated
// yet (Reservations), and takes over those another replica admitted.
//
// What the caches hold is read-only: the devices of the slices hold their
// identities apart (package feasibility/identity) and share their
// attribute maps, values and capacity maps, pods and nodes their resource
// lists (CompactSlice, sharedResources); read a slice whole with
// identity.Whole, and change that copy.
package inventory
