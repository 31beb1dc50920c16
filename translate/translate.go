package translate

import (
	"errors"
	"maps"
	"slices"

	"github.com/claimbridge/claimbridge/translate/celgen"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/reason"
)

// Names claimbridge gives to what it creates or reads.
const (
	// mirrorPodAnnotation marks static pods mirrored by the kubelet; they
	// cannot use resource claims.
	mirrorPodAnnotation = "kubernetes.io/config.mirror"

	maxAlternatives = resourceapi.FirstAvailableDeviceRequestMaxSize
)

// Input is what [Pod] translates.
type Input struct {
	// Pod to translate; not modified. Required.
	Pod *corev1.Pod
	// Policy to apply. Required.
	Policy *Policy
	// Classes are the cluster's DeviceClasses, used to defer to classes that
	// already serve an extended resource (KEP-5004). Nil when not known.
	Classes []*resourceapi.DeviceClass
	// Quotas are the ResourceQuotas of the pod's namespace, with their
	// status (the usage the quota controller last recorded). Nil when not
	// known.
	Quotas []*corev1.ResourceQuota
	// Alternative chooses, when the pod's output profile is ExactlyOnly
	// (its scheduler or Kueue takes no firstAvailable), which
	// single-alternative translation to make: the index, in preference
	// order, of a combination of one alternative per request (see
	// Result.Combinations). 0, the default, is the most preferred. decide
	// tries them in order and keeps the first the placement check accepts.
	// Ignored for the Full profile.
	Alternative int
	// Shares says, by device family, how many shares each shared device of
	// the family publishes in the target cluster: devices that allow
	// multiple allocations and publish the family's share capacity
	// (PolicySpec.ShareCapacities), the distinct numbers, sorted; a family
	// whose devices are not shared is absent. decide reads it from the
	// fleet's devices (feasibility.Checker.Sharing). Nil when no fleet is
	// known: the policy's consumableShares say it then (shares.go).
	Shares map[string][]int64
	// Memory says, by device family, which of the family's devices in the
	// target cluster claims share by memory (feasibility.Checker.Sharing):
	// a share becomes 1/N of a device's memory (PolicySpec.MemoryShares,
	// memory.go). Nil when no fleet is known.
	Memory map[string]celgen.SharedMemory
	// Renamed are the share counts of Shares that only devices on nodes
	// whose device plugin renamed their shared resource publish
	// (Policy.SharesRenamed): no whole device is taken of those.
	Renamed map[string][]int64
	// Admitted says the pod has been through the cluster's admission chain
	// up to the webhooks: kube-apiserver runs its built-in mutating plugins
	// (ExtendedResourceToleration among them) before
	// MutatingAdmissionWebhook, so the pod already carries every toleration
	// the cluster gives it, and translation adds none, whatever
	// PolicySpec.ImplicitTolerations says. The webhook sets it; offline
	// (manifests that have not been admitted) it is false.
	Admitted bool
	// NoDeference, when set, says why the pod is not left to a class that
	// maps its extended resources (KEP-5004) even where translation would
	// add nothing: its pool's autoscaler provisions only for explicit
	// claims (decide reads it from the platform).
	NoDeference string
}

// Result is the outcome of translating one pod.
type Result struct {
	Outcome reason.Outcome
	// Pod is the translated pod for OutcomeTranslate, else an unchanged copy.
	Pod *corev1.Pod
	// Template is the ResourceClaimTemplate the pod refers to, only for
	// OutcomeTranslate. Its name is derived from its spec.
	Template *resourceapi.ResourceClaimTemplate
	// Reasons explain every decision, in a stable order.
	Reasons []reason.Reason
	// ImplicitTolerations are the tolerations added to the translated pod
	// because the policy says the target cluster's admission adds them
	// (PolicySpec.ImplicitTolerations: the ExtendedResourceToleration
	// plugin) for the extended resources translation removed, in the order
	// they were added to Pod.Spec.Tolerations; only for OutcomeTranslate,
	// never for an Input.Admitted pod. The pod as submitted would have
	// received them at admission.
	ImplicitTolerations []corev1.Toleration

	// Output is the output profile the pod was translated under (its
	// scheduler's, made stricter by Kueue's for a Kueue-managed pod);
	// empty when the pod was skipped before it was known.
	Output v1alpha1.OutputProfile
	// Combinations is, for the ExactlyOnly profile, how many
	// single-alternative translations the pod has (Input.Alternative
	// ranges over 0..Combinations-1): the product of the alternatives of
	// its requests, ordered as the allocator tries them, the first
	// request's preference first. 0 when the translation did not get that
	// far or the profile is Full.
	Combinations int
	// FaithfulCombination is the combination that takes, for each request,
	// its only mandatory alternative (the one made from the pod's required
	// node constraints, without preferences, fallbacks or aligned
	// variants), which means what the pod as submitted asks for; -1 when a
	// request has several (ORed terms, In lists): then no single
	// alternative does, and only the placement check can choose one.
	FaithfulCombination int
	// Chosen says, for the ExactlyOnly profile, which alternative each
	// request with several kept ("app/nvidia.com/gpu: 1× gpu.nvidia.com
	// (nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3)"), in request order.
	Chosen []string
	// Charge is what the claim would be charged against ResourceQuota when
	// the resourceclaim controller creates it, per quota resource name
	// (quota.go); nil when the translation did not get that far.
	Charge map[corev1.ResourceName]int64
}

// Pod translates a pod that asks for devices the legacy way into a pod that
// refers to a ResourceClaimTemplate. It is pure and deterministic. An error
// means the input itself was unusable (no pod, no policy); a pod that cannot
// or should not be translated is a Result with OutcomeKeepLegacy or
// OutcomeSkip and the reasons.
func Pod(in Input) (*Result, error) {
	if in.Pod == nil {
		return nil, errors.New("no pod")
	}
	if in.Policy == nil {
		return nil, errors.New("no policy")
	}
	t := &translation{in: in, p: in.Policy, pod: in.Pod}
	return t.run(), nil
}

// translation holds the state of one call. Each field is written by the
// stage named in its comment and only read by the stages after it (see the
// package documentation for the order).
type translation struct {
	in  Input
	p   *Policy
	pod *corev1.Pod
	// saidWholeNode: the resources WholeNodeOnly was said of.
	saidWholeNode map[corev1.ResourceName]bool
	reasons       []reason.Reason // appended to by every stage, in pipeline order

	uses         []*use          // collectUses (device uses); shareInitRequests, buildRequests set req
	companions   []*use          // collectUses (companion uses); addCompanions sets req
	capacityUses []*use          // collectUses (capacityOf uses); attachCapacities copies them onto device uses
	families     map[string]bool // run, from uses; addCompanions adds companion families
	familyList   []string        // sortedFamilies: the keys of families, sorted; addCompanions clears it
	required     []labelReq      // requiredLabelReqs: the pod's required node-label requirements

	// label handling (analyzeLabels, unless noted)
	base        []labelReq
	scenarios   []scenario
	translated  map[reqLoc]bool     // requirements turned into selectors; keepDroppedPreferences prunes it
	ambiguous   map[reqLoc][]string // translated requirements that stay on the pod: values the devices cannot tell apart
	pinned      reqLoc              // a translated requirement that stays on the pod: the node selector KServe's pod webhook adds
	multiTerm   bool                // ORed required terms became alternatives
	prefsUsed   bool                // preferred terms became alternatives
	affinityOut *corev1.Affinity    // rewriteNodeConstraints
	selectorOut map[string]string   // rewriteNodeConstraints
	fromLabels  bool                // a label changed a request (selector or class); alternative, applyFallbacks

	requests    []*request    // buildRequests, addCompanions; align adds variants, limitAlternatives drops
	constraints []*constraint // align; limitAlternatives prunes
	crossAlign  bool          // align: a constraint ties requests together

	effects []effectOf // memo of convert, by family and requirement

	cardSel map[*v1alpha1.ResourceRule]string // cardTypes: the card-type selector of a rule's alternatives

	out          output                        // resolveOutput: what the scheduler and Kueue accept
	combinations int                           // singleAlternative
	faithful     int                           // singleAlternative
	chosen       []string                      // singleAlternative
	charge       map[corev1.ResourceName]int64 // quotaCovered
}

// run is the pipeline. The order of the stages is the design: each stage may
// rely on what the stages before it decided (doc.go spells this out). A stage
// that returns false (or true, for defer5004) ends the translation with the
// pod unchanged and its reasons. The stages come in five groups, each a
// method: skipped, collect, shape, check and emit.
func (t *translation) run() *Result {
	t.faithful = -1
	if t.skipped() {
		return t.kept(reason.OutcomeSkip)
	}
	if o := t.collect(); o != "" {
		return t.kept(o)
	}
	if !t.shape() || !t.check() {
		return t.kept(reason.OutcomeKeepLegacy)
	}
	return t.emit()
}

// kept is the result of a translation that ends with the pod unchanged.
func (t *translation) kept(o reason.Outcome) *Result {
	return &Result{Outcome: o, Pod: t.pod.DeepCopy(), Reasons: t.reasons, Output: t.out.profile,
		Combinations: t.combinations, FaithfulCombination: t.faithful, Chosen: t.chosen, Charge: t.charge}
}

// skipped runs the skip checks: the pod opted out, is a mirror pod, or was
// translated already.
func (t *translation) skipped() bool {
	pod := t.pod
	switch {
	case pod.Annotations[api.AnnotationSkip] == "true":
		t.add(say(ReasonOptedOut, field.NewPath("metadata", "annotations").Key(api.AnnotationSkip), "the pod opted out"))
		return true
	case pod.Annotations[mirrorPodAnnotation] != "":
		t.add(say(ReasonMirrorPod, field.NewPath("metadata", "annotations").Key(mirrorPodAnnotation), "mirror pods cannot use resource claims"))
		return true
	case pod.Annotations[api.AnnotationTemplate] != "":
		t.add(say(ReasonAlreadyTranslated, field.NewPath("metadata", "annotations").Key(api.AnnotationTemplate), "the pod was translated already"))
		return true
	}
	for i, c := range pod.Spec.ResourceClaims {
		if c.Name == api.ClaimName {
			t.add(say(ReasonAlreadyTranslated, field.NewPath("spec", "resourceClaims").Index(i), "the pod already has a claim named %q", api.ClaimName))
			return true
		}
	}
	return false
}

// collect finds the devices the pod asks for and whether they can move:
// stages 1 and 2 after the skip checks. It returns the outcome of a pod
// that stays as it is, "" to go on.
func (t *translation) collect() reason.Outcome {
	// scheduling.go: a scheduler that allocates claims will place the pod.
	// A pod kept for its scheduler or nodeName asks for devices and stays
	// on the device plugin: KeepLegacy, not Skip.
	if !t.scheduledWithClaims() {
		return reason.OutcomeKeepLegacy
	}
	// uses.go, capacity.go, shared.go: which containers ask for which mapped
	// devices, how many, with which capacities, and whether they are shares.
	if invalid := t.collectUses(); invalid {
		return reason.OutcomeKeepLegacy
	}
	if len(t.uses) == 0 {
		t.add(say(ReasonNoLegacyResources, nil, "no container asks for an extended resource the policy maps"))
		return reason.OutcomeSkip
	}
	// The device families of the pod decide which label rules apply.
	t.families = make(map[string]bool, 4)
	for _, u := range t.uses {
		t.families[u.rule.Family] = true
	}
	// shared.go: a node label that selects shared GPUs is a sharing intent.
	// shares.go: a share of a device needs devices that something says are shared.
	// cardtype.go: HAMi's card-type annotations become selectors.
	if !t.sharedProductIntent() || !t.sharesAvailable() || !t.cardTypes() {
		return reason.OutcomeKeepLegacy
	}
	return ""
}

// shape makes the claim's requests, alternatives and constraints and names
// them: stages 3 to 11. It returns false when the pod stays as it is.
func (t *translation) shape() bool {
	// nodelabels.go: node-label requirements become scenarios (one per alternative).
	if !t.analyzeLabels() {
		return false
	}
	// initcontainers.go: which init containers reuse the devices of another container.
	t.shareInitRequests()
	// requests.go, fallbacks.go: one request per owning use, one alternative per scenario, plus fallbacks.
	// shares.go: shares ask for a share of a shared device.
	if !t.buildRequests() || !t.shares() {
		return false
	}
	// companions.go: companion requests (CPUs) tied to the devices by alignment.
	t.addCompanions()
	// alignment.go: matchAttribute constraints and aligned variants.
	t.align()
	// partitions.go: on partitioned devices, a claim's devices are one partition.
	if !t.partition() {
		return false
	}
	// shares.go: where devices are shared, whole devices take all their shares.
	t.exclusive()
	// limits.go: at most 8 alternatives per request, dropping optional ones from the end.
	// output.go: one alternative per request where the scheduler or Kueue takes no firstAvailable.
	if !t.limitAlternatives() || !t.singleAlternative() {
		return false
	}
	// nodelabels.go: preferred terms no alternative expresses any more stay on the pod.
	t.keepDroppedPreferences()
	// nodeconstraints.go: the pod's nodeSelector and affinity without what was translated.
	t.rewriteNodeConstraints(t.multiTerm, t.prefsUsed)
	// naming.go: deterministic DNS-label names for requests and subrequests.
	t.nameAll()
	return true
}

// check holds the finished claim against the API's limits, KEP-5004, the
// scheduler and Kueue, quota and preemption: stages 12 to 14. It returns
// false when the pod stays as it is.
func (t *translation) check() bool {
	// limits.go: the claim fits the API's limits and every selector compiles.
	// deference.go: a DeviceClass already serves the resources and translation adds nothing (KEP-5004).
	// output.go: the classes and capacities the scheduler and Kueue can serve and count.
	// quota.go: translation must not let the pod escape a ResourceQuota, nor its claim be refused by one.
	// scheduling.go: a pod that could preempt cannot preempt for claims.
	return t.checkLimits() && !t.defer5004() && t.stackAccepts() && t.quotaCovered() && t.keepsPreemption()
}

// emit makes the template and the translated pod, and says what the pod
// got: stages 15 to 17.
func (t *translation) emit() *Result {
	// template.go: the content-addressed template and the pod that refers to it.
	tmpl := t.template()
	out := t.mutate(tmpl.Name)
	t.stripCapacities(out)
	// tolerations.go: the tolerations the target cluster's admission would
	// add for the removed resources (offline, when the policy says it runs
	// ExtendedResourceToleration).
	tolerations := t.addImplicitTolerations(out)
	// risks.go: what the translation risks that no check decides, said out loud.
	t.sayRisks(out)
	// summary.go: one reason that says what the pod got.
	t.add(say(ReasonTranslated, nil, "%s", t.summary(tmpl.Name)))
	return &Result{Outcome: reason.OutcomeTranslate, Pod: out, Template: tmpl, Reasons: t.reasons, ImplicitTolerations: tolerations,
		Output: t.out.profile, Combinations: t.combinations, FaithfulCombination: t.faithful, Chosen: t.chosen, Charge: t.charge}
}

func (t *translation) add(r ...reason.Reason) {
	if t.reasons == nil && len(r) > 0 {
		// Room for the reasons of a translated pod, which has several.
		t.reasons = make([]reason.Reason, 0, max(12, len(r)))
	}
	t.reasons = append(t.reasons, r...)
}

// sortedFamilies lists the pod's device families in order, sorted once
// rather than by every stage that walks them.
func (t *translation) sortedFamilies() []string {
	if t.familyList == nil {
		t.familyList = slices.Sorted(maps.Keys(t.families))
	}
	return t.familyList
}
