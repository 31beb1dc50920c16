package platform

import (
	"fmt"
	"strings"
)

// Lines say the platform fact by fact, for the text output and the page:
// "nvidia-gpu: class gpu.nvidia.com maps nvidia.com/gpu (declared: preset
// nvidia-dra-driver …)".
func (p *Platform) Lines() []string {
	out := []string{"platform: " + p.Name, "Kubernetes " + p.Kubernetes.Value + p.Kubernetes.Said()}
	for _, d := range p.Drivers {
		out = append(out, fmt.Sprintf("%s: install %s%s", d.Family, orUnknown(d.Install.Value), d.Install.Said()))
		if d.Release.Known() {
			out = append(out, fmt.Sprintf("%s: release %s%s", d.Family, d.Release.Value, d.Release.Said()))
		}
		for _, c := range d.Classes {
			maps := "maps no extended resource"
			switch {
			case !c.Fact.Known():
				maps = "whether it maps an extended resource is unknown"
			case c.Maps != "":
				maps = "maps " + c.Maps
			}
			line := fmt.Sprintf("%s: class %s %s%s", d.Family, c.Name, maps, c.Fact.Said())
			if c.HelmRelease != "" {
				line += "; owned by Helm release " + c.HelmRelease
			}
			out = append(out, line)
		}
		for _, f := range []struct {
			name string
			f    Fact
		}{{"consumable shares", d.Shares}, {"DynamicMIG", d.DynamicMIG}, {"MPS", d.MPS}, {"prepares only whole nodes", d.WholeNode}} {
			switch {
			case f.f.Known():
				out = append(out, fmt.Sprintf("%s: %s %s%s", d.Family, f.name, f.f.Value, f.f.Said()))
			case f.f.Source == Unknown && d.Family == "nvidia-gpu" && f.name != "prepares only whole nodes":
				// The NVIDIA driver's modes: one its workload does not let
				// claimbridge read is said unknown, not taken as the default.
				out = append(out, fmt.Sprintf("%s: %s unknown%s", d.Family, f.name, f.f.Said()))
			}
		}
	}
	for _, pool := range p.Pools {
		name := "every node"
		switch {
		case pool.Label != "" && pool.Name != "":
			name = pool.Label + "=" + pool.Name
		case pool.Label != "":
			name = "every " + pool.Label + " pool"
		}
		line := fmt.Sprintf("pool %s: autoscaler %s%s", name, orUnknown(pool.Autoscaler.Value), pool.Autoscaler.Said())
		if pool.DRA.Known() {
			line += fmt.Sprintf("; provisions for claims: %s%s", pool.DRA.Value, pool.DRA.Said())
		}
		out = append(out, line)
	}
	return out
}

// Said is a fact's source, as " (detected: DaemonSet …)".
func (f Fact) Said() string {
	switch {
	case f.From != "":
		return " (" + string(f.Source) + ": " + f.From + ")"
	case f.Source != "":
		return " (" + string(f.Source) + ")"
	}
	return ""
}

func orUnknown(v string) string {
	if strings.TrimSpace(v) == "" {
		return "unknown"
	}
	return v
}
