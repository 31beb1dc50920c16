package translate

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// use is one (container, legacy resource) pair.
type use struct {
	path     *field.Path
	idx      int // index in its container list
	cname    string
	init     bool // a non-restartable init container
	sidecar  bool // a restartable init container
	resource corev1.ResourceName
	rule     *v1alpha1.ResourceRule
	suffix   string
	count    int64 // devices; 1 for capacity rules
	capacity int64 // for capacity rules
	// capacities are requested on each device of the use's request: the
	// container's capacityOf uses (capacity.go) or a sharing mode's.
	capacities map[resourceapi.QualifiedName]resource.Quantity
	req        *request
	// also are further uses whose requests an init container refers to
	// besides req's (shareInitRequests); extraOf marks the use that holds
	// the rest of an init container's devices.
	also    []*use
	extraOf *use
	// share: the use asks for shares of devices (shares.go): a shared
	// resource of sharing mode ConsumableShares, or any device use of a
	// family whose shared GPUs the pod selects by node label.
	share bool
}

type request struct {
	name string
	use  *use
	alts []*alt
}

// initExtra: the request holds the devices an init container needs beyond
// those it reuses; it takes no part in alignment across families.
func (r *request) initExtra() bool { return r.use.extraOf != nil }

func (r *request) maxCount() int64 {
	var m int64
	for _, a := range r.alts {
		m = max(m, a.count)
	}
	return m
}

// alt is one alternative of a request (a subrequest when there are several).
type alt struct {
	resource  corev1.ResourceName
	rule      *v1alpha1.ResourceRule
	class     string
	selectors []string
	count     int64
	// The requirements it was made for, and those of them that changed its
	// selectors or class: pointers into the scenario (or fallback) they
	// come from, which no stage changes once alternatives are made.
	labels    []*labelReq
	shown     []*labelReq
	optional  bool   // may be dropped to stay within 8 alternatives
	variantOf string // preferred-alignment rule this variant honours
	fallback  string // fallback rule that added it
	// shares of each device the alternative asks for, in the capacity
	// shareCap (its name as the driver publishes it): 1 for a share, all
	// of a shared device's for a whole one (shares.go); 0 for none.
	shares   int64
	shareCap string
	memory   bool // shares are bytes of the device's memory shareCap, 0 all of it (memory.go)
	name     string
	ref      string // "<request>/<name>", how constraints and reasons name a subrequest (nameAll)
}

// same says two alternatives ask the allocator for the same devices: the
// same class, selectors and count, the same alignment and shares. It
// compares the fields rather than a key made of them, which would copy
// every selector of every alternative.
func (a *alt) same(o *alt) bool {
	return a.class == o.class && a.count == o.count && a.variantOf == o.variantOf && a.shares == o.shares &&
		slices.Equal(a.selectors, o.selectors)
}

type scenario struct {
	reqs     []labelReq
	optional bool
}

type constraint struct {
	rule      *v1alpha1.AlignmentRule
	whole     []*request // requests named as a whole
	variantOf *request   // request whose variants are named
	variants  []*alt     // of variantOf
}
