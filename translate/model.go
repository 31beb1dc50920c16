package translate

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// use is one (container, legacy resource) pair.
type use struct {
	path     *field.Path
	idx      int // index in its container list
	cname    string
	init     bool // a non-restartable init container
	sidecar  bool // a restartable init container
	resource corev1.ResourceName
	rule     *ResourceRule
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
	rule      *ResourceRule
	class     string
	selectors []string
	count     int64
	labels    []labelReq // the requirements it was made for
	shown     []labelReq // those of labels that changed its selectors or class
	optional  bool       // may be dropped to stay within 8 alternatives
	variantOf string     // preferred-alignment rule this variant honours
	fallback  string     // fallback rule that added it
	// shares of each device the alternative asks for, in the capacity
	// shareCap (its name as the driver publishes it): 1 for a share, all
	// of a shared device's for a whole one (shares.go); 0 for none.
	shares   int64
	shareCap string
	name     string
	ref      string // "<request>/<name>", how constraints and reasons name a subrequest (nameAll)
	k        string // key(), once computed
}

// key identifies what the allocator would see; alternatives are complete
// when it is first asked for.
func (a *alt) key() string {
	if a.k == "" {
		a.k = a.computeKey()
	}
	return a.k
}

func (a *alt) computeKey() string {
	return a.class + "\x00" + strings.Join(a.selectors, "\x00") + "\x00" + strconv.FormatInt(a.count, 10) + "\x00" + a.variantOf +
		"\x00" + strconv.FormatInt(a.shares, 10)
}

type scenario struct {
	reqs     []labelReq
	optional bool
}

type constraint struct {
	rule      *AlignmentRule
	whole     []*request // requests named as a whole
	variantOf *request   // request whose variants are named
	variants  []*alt     // of variantOf
}
