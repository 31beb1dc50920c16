package feasibility

import "github.com/claimbridge/claimbridge/reason"

// ReasonCode classifies a verdict; stable, usable as a metrics label. Each
// code has an entry in the catalog below (see translate's catalog.go).
type ReasonCode string

// Verdict codes.
const (
	// ReasonFits: FitsNow, the node is named.
	ReasonFits ReasonCode = "Fits"
	// ReasonDevicesInUse: FitsWhenFree, the fleet has the devices, all in use.
	ReasonDevicesInUse ReasonCode = "DevicesInUse"
	// ReasonNoCandidateNodes: no DRA node passes the pod's node selector,
	// affinity and taints.
	ReasonNoCandidateNodes ReasonCode = "NoCandidateNodes"
	// ReasonNoMatchingDevices: nodes pass, none publishes matching devices.
	ReasonNoMatchingDevices ReasonCode = "NoMatchingDevices"
	// ReasonDeviceClassNotFound: the claim names a DeviceClass the fleet lacks.
	ReasonDeviceClassNotFound ReasonCode = "DeviceClassNotFound"
	// ReasonInvalidClaim: the claim does not pass validation or defaulting.
	ReasonInvalidClaim ReasonCode = "InvalidClaim"
	// ReasonAllocatorError: the allocator failed on the claim.
	ReasonAllocatorError ReasonCode = "AllocatorError"
	// ReasonDeadlineExceeded: the check did not finish in time (Unknown).
	ReasonDeadlineExceeded ReasonCode = "DeadlineExceeded"
	// ReasonInventoryNotSynced: the inventory is not synced yet (Unknown).
	ReasonInventoryNotSynced ReasonCode = "InventoryNotSynced"
	// ReasonBusy: no search slot was free in time (Unknown).
	ReasonBusy ReasonCode = "Busy"
	// ReasonAttributesUnknown: the claims are served on no node, and would
	// be on one whose devices leave attributes the claims read unknown (a
	// forecast's) if those were what they ask for (Unknown).
	ReasonAttributesUnknown ReasonCode = "AttributesUnknown"
)

// Reasons is the catalog of verdict codes, keyed by the code as a
// translate.ReasonCode. A verdict reaches a pod's reasons as decide's
// Feasible or Infeasible with the verdict's code; %[1]s in a remedy stands
// for the kind of hardware of the rows.
func Reasons() reason.Catalog { return verdictCatalog }

// docVerdict is the section of the docs that explains verdicts.
const docVerdict = "docs/concepts/placement.md#the-verdict"

var verdictCatalog = reason.Catalog{
	code(ReasonFits):                reason.NewEntry(reason.SeverityInfo, reason.OutcomeTranslate, "nothing to do: the fleet can serve the pod now", docVerdict),
	code(ReasonDevicesInUse):        reason.NewEntry(reason.SeverityInfo, reason.OutcomeTranslate, "free DRA devices for %[1]s or add some: the fleet has them, all in use", docVerdict),
	code(ReasonNoCandidateNodes):    reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "no DRA node passes the pod's node selector, affinity and taints — label or untaint DRA nodes for %[1]s, or add tolerations", docVerdict),
	code(ReasonNoMatchingDevices):   reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "no DRA node has the %[1]s the pod asks for (model, count or attributes) — add DRA nodes that do, or relax the node labels or the count", docVerdict),
	code(ReasonDeviceClassNotFound): reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "install the DeviceClass the policy maps %[1]s to (the DRA driver's chart ships it), or point the policy at the class you have", docVerdict),
	code(ReasonInvalidClaim):        reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "the translated claim is invalid: check the policy's rules for %[1]s (claimbridge explain shows the claim)", docVerdict),
	code(ReasonAllocatorError):      reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "the allocator failed on the claim for %[1]s: check the DeviceClass selectors and the driver's attributes", docVerdict),
	code(ReasonDeadlineExceeded):    reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "rerun with a longer --timeout (--feasibility-timeout on the webhook): the check for %[1]s did not finish", docVerdict),
	code(ReasonInventoryNotSynced):  reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "wait for the webhook's inventory to sync, then look again", docVerdict),
	code(ReasonAttributesUnknown):   reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "check the pod once the DRA driver publishes its devices: whether they serve it depends on attributes the forecast cannot tell from the nodes' labels (named); or label the nodes with them", docVerdict),
	code(ReasonBusy):                reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "raise --feasibility-max-searches or give the webhook more CPU: checks found no free slot in time", docVerdict),
}

// code is a verdict code as a catalog key.
func code(c ReasonCode) reason.Code { return reason.Code(c) }
