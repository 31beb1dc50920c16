// Package cutover is what the switch to DRA does to each workload of a
// cluster, and what a forecast of it assumed and produced: the result of
// one workload (Effect), the forecast's summary, and what a rehearsal on the
// real scheduler saw. The forecast (package forecast) fills these; the
// report renders them beside the decision records. It is plain data and
// imports nothing of this module: whatever shows a report may read it
// without the forecast's machinery.
package cutover

import "fmt"

// Result is what the switch to DRA does to a workload.
type Result string

// Cutover results.
const (
	// Moves: translated, and the forecast fleet's DRA devices serve
	// every pod of it once the whole cluster is placed.
	Moves Result = "Moves"
	// ServedByClass: stays as submitted, and a DeviceClass that maps
	// its extended resource (extendedResourceName, KEP-5004) serves every
	// pod of it.
	ServedByClass Result = "ServedByClass"
	// StaysLegacy: stays on the device plugin, on nodes the switch
	// leaves alone, which hold every pod of it.
	StaysLegacy Result = "StaysLegacy"
	// Partial: some pods are served, not all, and placed alone it
	// gets no more: the fleet after the switch is too small for it.
	Partial Result = "Partial"
	// OrderDependent: placed alone it gets more pods served than
	// after the workloads placed before it: it competes with them for the
	// same devices, and kube-scheduler, which does not place in
	// claimbridge's order, may serve it more or less.
	OrderDependent Result = "OrderDependent"
	// Breaks: runs today, and after the switch no pod of it is
	// served, placed alone or not: Pending until someone acts.
	Breaks Result = "Breaks"
	// NotServedToday: no node serves it before the switch either:
	// the switch does not break it.
	NotServedToday Result = "NotServedToday"
	// Unjudged: asks for devices the switch replaces, and the
	// forecast cannot judge it: no pod template can be located (a custom
	// resource's own field), or whether its translation is served depends
	// on attributes the nodes' labels do not tell (the devices will publish
	// them; Why names them).
	Unjudged Result = "Unjudged"
	// NotAffected: asks for nothing the switch replaces.
	NotAffected Result = "NotAffected"
	// NotCreatable: kube-apiserver refuses to create its pods, before
	// the switch and after (a request of an extended resource that differs
	// from its limit, a request without a limit, a fraction of a device,
	// hugepages without cpu or memory); Why quotes what it says. No node
	// serves it, and no DeviceClass or translation will.
	NotCreatable Result = "NotCreatable"
)

// Results in the order the page shows them: what needs a person
// first.
var Results = []Result{Breaks, NotCreatable, OrderDependent, Partial, Unjudged, NotServedToday,
	Moves, ServedByClass, StaysLegacy, NotAffected}

// Effect is what the switch does to one workload (one pod template).
type Effect struct {
	Result Result `json:"result"`
	// Today counts the nodes where the pod as submitted can run before the
	// switch: they advertise the extended resources it asks for, pass its
	// selectors and taints, and have room in their allocatable for every
	// resource it requests (cpu, memory, ephemeral-storage, hugepages: what
	// the verdict compares). 0 for a pod kube-apiserver refuses. After
	// counts those where it — its translation, when it moves — can run
	// after.
	Today int `json:"today"`
	After int `json:"after"`
	// Pods the workload stands for (replicas counted); Served those the
	// whole-cluster placement serves after the switch; Alone those it
	// serves when placed alone on the forecast fleet (only computed when
	// Served falls short).
	Pods   int64 `json:"pods,omitempty"`
	Served int64 `json:"served,omitempty"`
	Alone  int64 `json:"alone,omitempty"`
	// Least and Most bound the pods served over the orders kube-scheduler
	// may place the cluster in (OrderDependent and Partial): at least
	// Least, when the workloads it competes with take what they can
	// first, at most Most, placed alone or in claimbridge's order. A
	// rehearsal that binds outside them contradicts the forecast. Both
	// are Served for the other results.
	Least int64 `json:"least,omitempty"`
	Most  int64 `json:"most,omitempty"`
	// Competes names the workloads placed before it that hold devices (or
	// device-plugin resources) on the nodes it would take alone
	// ("namespace/Kind/name").
	Competes []string `json:"competes,omitempty"`
	// CompetesMore counts the workloads it competes with that Competes
	// does not name (it names 10 at most).
	CompetesMore int `json:"competesMore,omitempty"`
	// Class is the DeviceClass that serves a ServedByClass workload.
	Class string `json:"class,omitempty"`
	// Why says what it lacks after the switch (Breaks, Partial,
	// OrderDependent, Unjudged); the row's Decisive reason says why
	// claimbridge keeps it as submitted.
	Why string `json:"why,omitempty"`
	// AutoscalingLost, when set, says that it moves to claims with more
	// pods than the fleet after the switch serves, and that today its pods
	// as submitted may run in a pool an autoscaler grows for the pods that
	// do not fit, which after the switch adds no node for them: their
	// devices come from claims, which it does not provision for
	// (AutoscalerIgnoresClaims; the policy's autoscaling rule). Why starts
	// with it.
	AutoscalingLost *AutoscaledPool `json:"autoscalingLost,omitempty"`
}

// AutoscaledPool is a pool of nodes that an autoscaler grows for Pending
// pods and not for pods with claims.
type AutoscaledPool struct {
	// Label is the node-label key that puts a node in the pool, and Name
	// its value ("karpenter.sh/nodepool", "gpu").
	Label string `json:"label"`
	Name  string `json:"name"`
	// Nodes counts the nodes of such pools where the workload's pods as
	// submitted may run today.
	Nodes int `json:"nodes"`
	// Remedy says how the pool's autoscaler would provision for claims,
	// where the platform knows it ("turn on Karpenter's DRA support …").
	Remedy string `json:"remedy,omitempty"`
}

// Summary is what the cutover forecast assumed and produced.
type Summary struct {
	// Platform names the platform the forecast assumed ("driver
	// defaults", "presets nvidia-dra-driver", a Platform file), and
	// PlatformFacts says it fact by fact, each with its source (detected,
	// declared, default or unknown).
	Platform      string   `json:"platform,omitempty"`
	PlatformFacts []string `json:"platformFacts,omitempty"`
	// GFDLabels: whether GPU Feature Discovery's labels stay on the nodes
	// that switch ("keep") or go ("drop").
	GFDLabels string `json:"gfdLabels"`
	// Nodes of the fleet; Switched those the switch covers.
	Nodes    int `json:"nodes"`
	Switched int `json:"switched"`
	// Order in which the whole-cluster placement placed the workloads.
	Order string `json:"order,omitempty"`
	// Left: nodes with accelerators the switch leaves alone, and why.
	Left []NodeNote `json:"left,omitempty"`
	// Devices forecast, by driver.
	Devices map[string]int `json:"devices,omitempty"`
	// NotForecast: drivers whose devices are not forecast, and why.
	NotForecast []NodeNote `json:"notForecast,omitempty"`
	// Unknown: the attributes the labels cannot tell (left out of the
	// forecast devices, never invented).
	Unknown []string `json:"unknown,omitempty"`
	// Notes of the forecast (how a value was derived where a label does not
	// say it exactly).
	Notes []string `json:"notes,omitempty"`
	// Classes: the DeviceClasses the forecast assumes, and Suggested those
	// that a re-run of the forecast with each shows to serve workloads
	// that are not served.
	Classes   []string         `json:"classes,omitempty"`
	Suggested []SuggestedClass `json:"suggested,omitempty"`
	// Pools are the node pools of the fleet the platform knows an
	// autoscaler of (or names, unknown), and whether each adds a first node
	// for a pod with claims after the switch.
	Pools []PoolScale `json:"pools,omitempty"`
	// Caveats a platform team must plan for, each with its source.
	Caveats []Caveat `json:"caveats,omitempty"`
	// YAML of the forecast fleet (Nodes after the switch, ResourceSlices,
	// DeviceClasses), to review, edit and feed back with --fleet.
	YAML string `json:"yaml,omitempty"`
}

// PoolScale is what the autoscaler of one node pool does for pods whose
// devices come from claims, once the switch is done.
type PoolScale struct {
	// Pool names it ("karpenter.sh/nodepool=gpu"; "every node" for the
	// Cluster Autoscaler's), Nodes counts the fleet's nodes in it.
	Pool  string `json:"pool"`
	Nodes int    `json:"nodes"`
	// Autoscaler is the platform's fact, with its source.
	Autoscaler string `json:"autoscaler"`
	// FromZero: "yes" when it adds a first node for such a pod where the
	// pool has none, "no", or "unknown"; Remedy says how to make it, where
	// known (GKE: a minimum of 1 node; the Cluster Autoscaler: the flag and
	// the provider; Karpenter: its DRA setting).
	FromZero string `json:"fromZero"`
	Remedy   string `json:"remedy,omitempty"`
}

// NodeNote names a node (or a driver on it) and why.
type NodeNote struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// SuggestedClass is a DeviceClass with extendedResourceName that serves
// pods asking for the resource as they are (the scheduler makes their
// claims, KEP-5004), with what a re-run of the whole forecast with it
// added showed.
type SuggestedClass struct {
	Resource string `json:"resource"`
	// Rows and Devices it serves of the workloads not served without it
	// (Breaks, OrderDependent, Partial): the pods served more, times their
	// devices.
	Rows    int64 `json:"rows"`
	Devices int64 `json:"devices"`
	// Changes are every workload whose result or pods served differ in the
	// re-run, the whole forecast run again with the class added (the same
	// as audit --forecast --forecast-classes with the forecast's classes
	// and this one), each named by its file and object.
	Changes []Change `json:"changes,omitempty"`
	YAML    string   `json:"yaml"`
}

// Change is what a suggested class changes of one workload.
type Change struct {
	// Object names the workload as the report's rows do
	// ("namespace/Kind/name", with ": <path>" for a template inside an
	// object), Source the file (and document) it was read from: two
	// workloads of one name in different files are two workloads.
	Object string `json:"object"`
	Source string `json:"source,omitempty"`
	// Was and Now are its result and the pods served, without the class
	// and with it; Pods the pods it stands for.
	Was       Result `json:"was"`
	Now       Result `json:"now"`
	WasServed int64  `json:"wasServed"`
	NowServed int64  `json:"nowServed"`
	Pods      int64  `json:"pods"`
}

// String is "ns/Kind/name (file): Was → Now (served → served of pods)".
func (c Change) String() string {
	name := c.Object
	if c.Source != "" {
		name += " (" + c.Source + ")"
	}
	return fmt.Sprintf("%s: %s → %s (%d → %d of %d pods)", name, c.Was, c.Now, c.WasServed, c.NowServed, c.Pods)
}

// ChangeLines are the changes as String says them.
func (s SuggestedClass) ChangeLines() []string {
	out := make([]string, 0, len(s.Changes))
	for _, c := range s.Changes {
		out = append(out, c.String())
	}
	return out
}

// Caveat is something the switch changes that no row shows.
type Caveat struct {
	Text   string `json:"text"`
	Source string `json:"source"`
}

// Rehearsed is what a rehearsal on the real scheduler saw of one workload:
// its pods created at once on a control plane holding the forecast fleet,
// through claimbridge, until kube-scheduler settled.
type Rehearsed struct {
	// Pods created, and Bound those kube-scheduler bound (a pod bound at
	// creation counts when its node offers what it asks for, as its
	// kubelet would admit it).
	Pods  int64 `json:"pods"`
	Bound int64 `json:"bound"`
	// Agrees: Bound is the forecast's Served or, where the forecast said
	// the order decides (OrderDependent) or the fleet is too small
	// (Partial), within the range it gave (Effect.Least to Effect.Most).
	Agrees bool `json:"agrees"`
}

// Rehearsal is what a rehearsal ran on: the Kubernetes release of its control plane (the
// cluster's own when it read one), and where those binaries came from.
type Rehearsal struct {
	// Kubernetes is the release of kube-apiserver, kube-controller-manager and
	// kube-scheduler, vMAJOR.MINOR.PATCH ("" when a directory given did not say).
	Kubernetes string `json:"kubernetes,omitempty"`
	// Binaries: "--k8s-bin", "$KUBEBUILDER_ASSETS", "$CLAIMBRIDGE_K8S_BIN", "cache",
	// "download" or "build".
	Binaries string `json:"binaries,omitempty"`
	// Workloads rehearsed, and those Disagree bound otherwise than forecast.
	Workloads int `json:"workloads"`
	Disagree  int `json:"disagree"`
}

// Range is the fewest and the most pods the forecast says are served
// over the orders kube-scheduler may place the cluster in; a report of an
// older forecast (no Least or Most) has Served for both.
func (c *Effect) Range() (least, most int64) {
	least, most = c.Served, c.Served
	if c.Least > 0 || c.Most > 0 {
		least, most = min(c.Least, c.Served), max(c.Most, c.Served)
	}
	return least, most
}
