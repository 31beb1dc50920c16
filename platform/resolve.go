package platform

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// KarpenterPoolLabel is the label Karpenter sets on every node it
// launches, naming its NodePool.
const KarpenterPoolLabel = v1alpha1.KarpenterNodePoolLabel

// builtFor is the Kubernetes minor claimbridge is built against, the
// release assumed where none is detected or declared.
const builtFor = "1.37"

// Defaults is what is known when nothing is detected or declared: the
// drivers' own defaults (exclusive GPUs, classes that map nothing, the
// TPU driver's rule), Kubernetes at the release claimbridge is built
// against, and Karpenter's pools (every node it launches carries
// karpenter.sh/nodepool) with Karpenter's default of ignoring claims.
func Defaults() *Platform {
	return &Platform{
		Name:       "driver defaults",
		Kubernetes: fact(builtFor, Default, "the release claimbridge is built against"),
		Drivers:    defaults(),
		Pools: []Pool{{
			Label:      KarpenterPoolLabel,
			Autoscaler: fact(string(v1alpha1.AutoscalerKarpenter), Default, "Karpenter labels every node it launches with "+KarpenterPoolLabel),
			DRA:        boolFact(false, Default, "Karpenter's default: --ignore-dra-requests=true"),
			Release:    unknown("no Karpenter release detected or declared"),
			Provider:   unknown(""),
			MinNodes:   unknown(""),
		}},
	}
}

// Declare applies a Platform document over base: its presets in order,
// then its own drivers and pools, each replacing what base says of the
// same family or pool. from names the document in the facts
// ("platform.yaml"); "" declares its presets alone.
func Declare(base *Platform, doc *v1alpha1.Platform, from string) *Platform {
	p := base.clone()
	names := []string{}
	for _, name := range doc.Spec.Presets {
		pr := presets[name]
		for _, pd := range pr.drivers {
			d := p.driverFor(pd.family)
			d.Install = fact(string(pr.install), Declared, pr.from)
			d.Classes = nil
			for _, c := range pd.classes {
				cl := Class{Name: c.Name, Maps: c.ExtendedResourceName, Fact: fact(c.ExtendedResourceName, Declared, pr.from)}
				if pd.mapsUnknown {
					cl.Fact = unknown(pr.from + ": whether the class maps an extended resource is not published; declare its classes")
				}
				d.Classes = append(d.Classes, cl)
			}
			if pd.wholeNode {
				d.WholeNode = boolFact(true, Declared, pr.from)
			}
		}
		names = append(names, name)
	}
	if v := doc.Spec.Kubernetes; v != "" {
		p.Kubernetes = fact(minorOf(v), Declared, from)
	}
	for _, dd := range doc.Spec.Drivers {
		declareDriver(p.driverFor(dd.Family), dd, from)
	}
	for _, dp := range doc.Spec.Pools {
		p.setPool(declaredPool(dp, from))
	}
	if doc.Metadata.Name != "" {
		from = doc.Metadata.Name
	}
	switch {
	case from == "":
		p.Name = "presets " + strings.Join(names, ", ")
	case len(names) > 0:
		p.Name = from + " (presets " + strings.Join(names, ", ") + ")"
	default:
		p.Name = from
	}
	if base.Name != "" && base.Name != Defaults().Name {
		p.Name = base.Name + ", then " + p.Name
	}
	return p
}

func declareDriver(d *Driver, dd v1alpha1.DriverPlatform, from string) {
	if dd.Install != "" {
		d.Install = fact(string(dd.Install), Declared, from)
	}
	if dd.Release != "" {
		d.Release = fact(dd.Release, Declared, from)
	}
	if len(dd.Classes) > 0 {
		d.Classes = nil
		for _, c := range dd.Classes {
			d.Classes = append(d.Classes, Class{Name: c.Name, Maps: c.ExtendedResourceName, Fact: fact(c.ExtendedResourceName, Declared, from)})
		}
	}
	if dd.ConsumableShares != "" {
		s, _ := ParseShares(dd.ConsumableShares)
		d.Shares = fact(s.String(), Declared, from)
	}
	if dd.DynamicMIG != nil {
		d.DynamicMIG = boolFact(*dd.DynamicMIG, Declared, from)
	}
	if dd.MPS != nil {
		d.MPS = boolFact(*dd.MPS, Declared, from)
	}
}

func declaredPool(dp v1alpha1.PoolPlatform, from string) Pool {
	pool := Pool{Label: dp.Label, Name: dp.Name, Autoscaler: fact(string(dp.Autoscaler), Declared, from),
		Release: unknown("no release declared"), Provider: unknown("no provider declared"), MinNodes: unknown("no minimum declared")}
	switch {
	case dp.DRA != nil:
		pool.DRA = boolFact(*dp.DRA, Declared, from)
	case dp.Autoscaler == v1alpha1.AutoscalerKarpenter:
		pool.DRA = boolFact(false, Default, "Karpenter's default: --ignore-dra-requests=true")
	case dp.Autoscaler == v1alpha1.AutoscalerClusterAutoscaler:
		pool.DRA = boolFact(false, Default, "the Cluster Autoscaler's default: --enable-dynamic-resource-allocation=false")
	default:
		pool.DRA = unknown("")
	}
	if dp.Release != "" {
		pool.Release = fact(dp.Release, Declared, from)
	}
	if dp.Provider != "" {
		pool.Provider = fact(dp.Provider, Declared, from)
	}
	if dp.MinNodes != nil {
		pool.MinNodes = fact(strconv.Itoa(int(*dp.MinNodes)), Declared, from)
	}
	return pool
}

// driverFor is the driver of a family, added with nothing known when the
// platform has none.
func (p *Platform) driverFor(family string) *Driver {
	if d := p.Driver(family); d != nil {
		return d
	}
	none := unknown("")
	p.Drivers = append(p.Drivers, Driver{Family: family, Install: none, Release: none, Shares: none, DynamicMIG: none, MPS: none, WholeNode: none})
	slices.SortFunc(p.Drivers, func(a, b Driver) int { return strings.Compare(a.Family, b.Family) })
	return p.Driver(family)
}

// setPool replaces the pool of the same label and name, or adds it; pools
// of a name come before the pool of every name of their label.
func (p *Platform) setPool(pool Pool) {
	i := slices.IndexFunc(p.Pools, func(o Pool) bool { return o.Label == pool.Label && o.Name == pool.Name })
	if i >= 0 {
		p.Pools[i] = pool
		return
	}
	p.Pools = append(p.Pools, pool)
	slices.SortStableFunc(p.Pools, func(a, b Pool) int {
		if a.Label == b.Label && (a.Name == "") != (b.Name == "") {
			if a.Name == "" {
				return 1
			}
			return -1
		}
		return 0
	})
}

func (p *Platform) clone() *Platform {
	out := *p
	out.Drivers = slices.Clone(p.Drivers)
	for i := range out.Drivers {
		out.Drivers[i].Classes = slices.Clone(out.Drivers[i].Classes)
	}
	out.Pools = slices.Clone(p.Pools)
	return &out
}

// minorOf is "1.37" of "1.37.2" or "v1.37".
func minorOf(v string) string {
	m, err := v1alpha1.KubernetesMinor(v)
	if err != nil {
		return v
	}
	return fmt.Sprintf("1.%d", m)
}

// Load is the platform a run assumes: base (detected from the cluster;
// nil for the drivers' own defaults, Defaults), then the presets named
// (`--platform-preset`), then the document (`--platform FILE`, nil for
// none) named from. An unknown preset is an error that names it and the
// presets there are.
func Load(base *Platform, presetNames []string, doc *v1alpha1.Platform, from string) (*Platform, error) {
	p := base
	if p == nil {
		p = Defaults()
	}
	if len(presetNames) > 0 {
		pre := &v1alpha1.Platform{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PlatformKind, Spec: v1alpha1.PlatformSpec{Presets: presetNames}}
		if errs := v1alpha1.ValidatePlatform(pre); len(errs) > 0 {
			return nil, errs.ToAggregate()
		}
		p = Declare(p, pre, "")
	}
	if doc != nil {
		p = Declare(p, doc, from)
	}
	return p, nil
}
