// Package platform is what claimbridge knows of the platform it decides
// for: the Kubernetes release and its DRA gates; per device family, how the
// DRA driver is installed, which DeviceClasses that creates and which
// extended resources they map, and the driver's modes (consumable shares,
// dynamic MIG, MPS); per node pool, the autoscaler and whether it adds
// nodes for pods whose devices come from claims.
//
// The same pod has different right answers on different platforms, so
// every fact carries where it came from: detected from the cluster
// (Detect, over objects listed read-only), declared in a Platform document
// (api/v1alpha1, `--platform FILE`, its presets), or the driver's or the
// autoscaler's own default. What none of them says is Unknown, and is said
// so — never guessed. The package is pure: objects in, facts out, no client.
package platform

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// Source is where a fact came from.
type Source string

// Sources of a fact.
const (
	// Detected: read from the cluster (an object, a flag or an environment
	// variable of a driver's or an autoscaler's workload).
	Detected Source = "detected"
	// Declared: the Platform document, or a preset it names.
	Declared Source = "declared"
	// Default: the driver's or the autoscaler's own default, which applies
	// where nothing else says.
	Default Source = "default"
	// Unknown: nothing says, and there is no default to assume.
	Unknown Source = "unknown"
)

// Fact is one thing known of the platform.
type Fact struct {
	Value  string `json:"value,omitempty"`
	Source Source `json:"source"`
	// From names what said it: the object and field, the preset, or whose
	// default it is.
	From string `json:"from,omitempty"`
}

// Known reports whether anything says the fact.
func (f Fact) Known() bool { return f.Source != Unknown && f.Source != "" }

func fact(value string, source Source, from string) Fact {
	return Fact{Value: value, Source: source, From: from}
}

func unknown(why string) Fact { return Fact{Source: Unknown, From: why} }

// Platform is what is known of a cluster's platform.
type Platform struct {
	// Name says what the platform was built from ("driver defaults",
	// "presets nvidia-dra-driver", "detected from the cluster", a file).
	Name string `json:"name"`
	// Kubernetes is the cluster's minor release after the switch ("1.37").
	Kubernetes Fact     `json:"kubernetes"`
	Drivers    []Driver `json:"drivers,omitempty"`
	Pools      []Pool   `json:"pools,omitempty"`
}

// Driver is what is known of one device family's DRA driver.
type Driver struct {
	// Family is the policy's device family ("nvidia-gpu").
	Family  string `json:"family"`
	Install Fact   `json:"install"`
	Release Fact   `json:"release"`
	// Classes are the DeviceClasses the install creates.
	Classes []Class `json:"classes,omitempty"`
	// Shares is the NVIDIA DRA driver's --consumable-shares ("disabled",
	// "memory", "unlimited" or N).
	Shares Fact `json:"shares"`
	// DynamicMIG and MPS are the NVIDIA driver's gates ("true", "false").
	DynamicMIG Fact `json:"dynamicMIG"`
	MPS        Fact `json:"mps"`
	// WholeNode: the driver prepares only claims that take every device of
	// the node ("true"; the Google TPU DRA driver).
	WholeNode Fact `json:"wholeNode"`
}

// Class is a DeviceClass an install creates.
type Class struct {
	Name string `json:"name"`
	// Maps is the extended resource the class maps (extendedResourceName),
	// "" for none; Fact says who said so.
	Maps string `json:"maps,omitempty"`
	Fact Fact   `json:"fact"`
	// HelmRelease is the Helm release that owns the class on the cluster
	// ("namespace/name"), when detected: uninstalling it deletes the class.
	HelmRelease string `json:"helmRelease,omitempty"`
}

// Pool is a pool of nodes and its autoscaler.
type Pool struct {
	// Label is the node-label key whose value names the pool, Name that
	// value ("" for every pool of the label).
	Label string `json:"label"`
	Name  string `json:"name,omitempty"`
	// Autoscaler is one of api/v1alpha1's AutoscalerKind values.
	Autoscaler Fact `json:"autoscaler"`
	// DRA says whether the autoscaler adds nodes for pods whose devices
	// come from claims ("true", "false").
	DRA      Fact `json:"dra"`
	Release  Fact `json:"release"`
	Provider Fact `json:"provider"`
	MinNodes Fact `json:"minNodes"`
}

// Driver returns the driver of a family, nil when none is known.
func (p *Platform) Driver(family string) *Driver {
	for i := range p.Drivers {
		if p.Drivers[i].Family == family {
			return &p.Drivers[i]
		}
	}
	return nil
}

// Minor is the Kubernetes minor release (37), 0 when unknown.
func (p *Platform) Minor() int {
	m, err := v1alpha1.KubernetesMinor(p.Kubernetes.Value)
	if err != nil {
		return 0
	}
	return m
}

// ServesExtendedResources reports whether kube-scheduler serves a class's
// extendedResourceName (DRAExtendedResource: beta and on by default from
// 1.36, GA from 1.37); an unknown release counts as claimbridge's own.
func (p *Platform) ServesExtendedResources() bool {
	m := p.Minor()
	return m == 0 || m >= 36
}

// Maps is the extended resource the class of this name maps once the
// switch is done: "" when no class of the platform by that name maps one,
// whether it is not known, or kube-scheduler does not serve the mapping at
// this release.
func (p *Platform) Maps(class string) string {
	if !p.ServesExtendedResources() {
		return ""
	}
	for _, d := range p.Drivers {
		for _, c := range d.Classes {
			if c.Name == class && c.Fact.Known() {
				return c.Maps
			}
		}
	}
	return ""
}

// Shares is a family's consumable-shares mode, with the fact that says it;
// a family no driver is known for is the driver's default, disabled.
func (p *Platform) Shares(family string) (Shares, Fact) {
	d := p.Driver(family)
	if d == nil || !d.Shares.Known() {
		return Shares{Mode: v1alpha1.SharesDisabled}, fact(v1alpha1.SharesDisabled, Default, "the NVIDIA DRA driver's default (--consumable-shares=disabled)")
	}
	s, err := ParseShares(d.Shares.Value)
	if err != nil {
		return Shares{Mode: v1alpha1.SharesDisabled}, d.Shares
	}
	return s, d.Shares
}

// PoolOf is the pool a node with these labels belongs to: the first pool
// whose label the node carries with its name (or any value, for a pool of
// no name), else a pool of no label (the Cluster Autoscaler's: any node it
// may grow); nil for none.
func (p *Platform) PoolOf(labels map[string]string) *Pool {
	var any *Pool
	for i := range p.Pools {
		pool := &p.Pools[i]
		if pool.Label == "" {
			any = cmpOr(any, pool)
			continue
		}
		v, ok := labels[pool.Label]
		if ok && (pool.Name == "" || pool.Name == v) {
			return pool
		}
	}
	return any
}

func cmpOr(a, b *Pool) *Pool {
	if a != nil {
		return a
	}
	return b
}

// IgnoresClaims reports whether the pool's autoscaler grows it for pods as
// submitted but adds no node for a pod whose devices come from claims; ok
// is false when that is not known (no autoscaler known, or its DRA
// setting unknown and no default).
func (pool *Pool) IgnoresClaims() (ignores, ok bool) {
	switch v1alpha1.AutoscalerKind(pool.Autoscaler.Value) {
	case v1alpha1.AutoscalerNone:
		return false, pool.Autoscaler.Known()
	case v1alpha1.AutoscalerKarpenter, v1alpha1.AutoscalerClusterAutoscaler:
		if !pool.DRA.Known() {
			return false, false
		}
		return pool.DRA.Value != "true", true
	case v1alpha1.AutoscalerGKE:
		return false, true
	}
	return false, false
}

// FromZero says whether the pool's autoscaler adds a first node for a pod
// whose devices come from claims when the pool has none, and if not, the
// remedy: GKE never does (a minimum of 1 node keeps it growing); the
// Cluster Autoscaler does with --enable-dynamic-resource-allocation for
// providers that can tell a new node's devices (clusterapi; externalgrpc
// cannot); Karpenter does with its DRA setting on, from what its cloud
// provider says of an instance type. ok is false when it is not known.
func (pool *Pool) FromZero() (yes bool, remedy string, ok bool) {
	switch v1alpha1.AutoscalerKind(pool.Autoscaler.Value) {
	case v1alpha1.AutoscalerGKE:
		return false, "set the node pool's minimum to 1 node: GKE's autoscaler never scales a pool up from zero for a pod with claims", true
	case v1alpha1.AutoscalerKarpenter:
		if !pool.DRA.Known() {
			return false, "", false
		}
		if pool.DRA.Value != "true" {
			return false, "turn on Karpenter's DRA support (--ignore-dra-requests=false; on AWS settings.enableDRA)", true
		}
		return true, "", true
	case v1alpha1.AutoscalerClusterAutoscaler:
		if !pool.DRA.Known() {
			return false, "", false
		}
		if pool.DRA.Value != "true" {
			return false, "run the Cluster Autoscaler with --enable-dynamic-resource-allocation", true
		}
		switch pool.Provider.Value {
		case "externalgrpc":
			return false, "the Cluster Autoscaler's externalgrpc provider cannot scale a node group up from zero for claims: keep a minimum of 1 node", true
		case "":
			return false, "", false
		}
		return true, "", true
	case v1alpha1.AutoscalerNone:
		return false, "", pool.Autoscaler.Known()
	}
	return false, "", false
}

func boolFact(b bool, source Source, from string) Fact {
	return fact(strconv.FormatBool(b), source, from)
}

// Shares is a consumable-shares mode: one of api/v1alpha1's Shares*
// modes, with N the shares per GPU in mode SharesCount.
type Shares struct {
	Mode string
	N    int
}

// ParseShares reads a --consumable-shares value.
func ParseShares(s string) (Shares, error) {
	mode, n, err := v1alpha1.ParseConsumableShares(s)
	return Shares{Mode: mode, N: n}, err
}

func (s Shares) String() string {
	if s.Mode == v1alpha1.SharesCount {
		return strconv.Itoa(s.N)
	}
	return s.Mode
}

// karpenterKnows are the device attributes, by domain, that Karpenter's DRA
// support knows of an instance type before it launches one (its AWS
// provider's docs, website/content/en/preview/tasks/dra.md): of the NVIDIA
// DRA driver's, productName, architecture, brand, cudaComputeCapability
// and type (and the memory and shares capacities); driverVersion,
// cudaDriverVersion and pcieRoot work only in matchAttribute. No provider
// knows resource.kubernetes.io's standard attributes (pcieRoot) before
// launch.
var karpenterKnows = map[string][]string{
	"gpu.nvidia.com":         {"productName", "architecture", "brand", "cudaComputeCapability", "type"},
	"resource.kubernetes.io": nil,
}

// UnknownBeforeLaunch reports whether a CEL selector on the attribute
// ("<domain>/<name>") matches no node Karpenter has yet to launch: an
// attribute of a domain Karpenter reads that is not among those it knows.
func UnknownBeforeLaunch(attribute string) bool {
	domain, name, ok := strings.Cut(attribute, "/")
	if !ok {
		return false
	}
	known, read := karpenterKnows[domain]
	return read && !slices.Contains(known, name)
}

// ProvisionsForClaims reports whether the autoscaler of the pool a node
// with these labels is in is known to add nodes for pods whose devices
// come from claims (detected or declared, or the autoscaler's default);
// false where it is known not to, or not known.
func (p *Platform) ProvisionsForClaims(labels map[string]string) bool {
	pool := p.PoolOf(labels)
	if pool == nil {
		return false
	}
	ignores, known := pool.IgnoresClaims()
	return known && !ignores
}

// PoolsKey identifies what the platform says of its pools' autoscalers,
// for caches of answers that read them.
func (p *Platform) PoolsKey() string {
	var b strings.Builder
	for _, pool := range p.Pools {
		fmt.Fprintf(&b, "%s=%s:%s:%s;", pool.Label, pool.Name, pool.Autoscaler.Value, pool.DRA.Value)
	}
	return b.String()
}
