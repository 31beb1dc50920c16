package platform

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// Objects are what detection reads, listed read-only from the cluster.
type Objects struct {
	// Version is kube-apiserver's gitVersion ("v1.37.2").
	Version     string
	Classes     []*resourceapi.DeviceClass
	DaemonSets  []*appsv1.DaemonSet
	Deployments []*appsv1.Deployment
	// NodePools are the names of Karpenter's NodePools (karpenter.sh/v1).
	NodePools []string
	Nodes     []*corev1.Node
}

// driverFamilies are the device families of the DRA drivers detection
// knows, by driver name.
var driverFamilies = map[string]string{
	"gpu.nvidia.com": "nvidia-gpu",
	"tpu.google.com": "google-tpu",
	"gpu.amd.com":    "amd-gpu",
}

// Detect reads the platform from the cluster's objects, over the
// drivers' defaults: what a fact's object does not say stays as the
// default or unknown, and says so.
func Detect(o Objects) *Platform {
	p := Defaults()
	p.Name = "detected from the cluster"
	if o.Version != "" {
		p.Kubernetes = fact(minorOf(o.Version), Detected, "kube-apiserver version "+o.Version)
	}
	detectClasses(p, o.Classes)
	for _, ds := range o.DaemonSets {
		detectDriver(p, ds)
	}
	for _, d := range o.Deployments {
		detectAutoscaler(p, d, o.NodePools)
	}
	detectGKEPools(p, o.Nodes)
	return p
}

// celDriver finds the driver a class's selector names.
var celDriver = regexp.MustCompile(`device\.driver\s*==\s*["']([^"']+)["']`)

// detectClasses reads the DeviceClasses of the known drivers: a family
// whose classes exist on the cluster has those, as they are.
func detectClasses(p *Platform, classes []*resourceapi.DeviceClass) {
	seen := map[string]bool{}
	for _, c := range classes {
		family := ""
		for _, s := range c.Spec.Selectors {
			if s.CEL == nil {
				continue
			}
			if m := celDriver.FindStringSubmatch(s.CEL.Expression); m != nil {
				family = driverFamilies[m[1]]
			}
		}
		if family == "" {
			continue
		}
		d := p.driverFor(family)
		if !seen[family] {
			d.Classes, seen[family] = nil, true
		}
		cl := Class{Name: c.Name, Fact: fact("", Detected, "DeviceClass "+c.Name+" sets no extendedResourceName")}
		if r := c.Spec.ExtendedResourceName; r != nil && *r != "" {
			cl.Maps, cl.Fact = *r, fact(*r, Detected, "DeviceClass "+c.Name+": extendedResourceName "+*r)
		}
		if name := c.Annotations["meta.helm.sh/release-name"]; name != "" {
			cl.HelmRelease = c.Annotations["meta.helm.sh/release-namespace"] + "/" + name
		}
		d.Classes = append(d.Classes, cl)
	}
}

// detectDriver reads a DRA driver's DaemonSet: the install path (who owns
// it, which chart made it), its release (the image's tag) and, for the
// NVIDIA driver, its modes from the flags and environment of its gpus
// container.
func detectDriver(p *Platform, ds *appsv1.DaemonSet) {
	where := "DaemonSet " + ds.Namespace + "/" + ds.Name
	for _, c := range ds.Spec.Template.Spec.Containers {
		family, install := "", v1alpha1.InstallPath("")
		switch img := c.Image; {
		case strings.Contains(img, "dra-driver-nvidia-gpu"), strings.Contains(img, "k8s-dra-driver-gpu"):
			family, install = "nvidia-gpu", nvidiaInstall(ds)
		case strings.Contains(img, "dra-driver-google-tpu"), strings.Contains(img, "tpu-dra-driver"):
			family, install = "google-tpu", v1alpha1.InstallTPUDRADriver
		case strings.Contains(img, "k8s-gpu-dra-driver"):
			family, install = "amd-gpu", v1alpha1.InstallAMDGPUOperator
		default:
			continue
		}
		d := p.driverFor(family)
		if install != "" {
			d.Install = fact(string(install), Detected, where+" ("+c.Image+")")
		} else {
			d.Install = unknown(where + " runs " + c.Image + ", but neither its owner nor its chart says how it was installed")
		}
		if tag := imageTag(c.Image); tag != "" {
			d.Release = fact(tag, Detected, where+": image "+c.Image)
		}
		if family == "nvidia-gpu" {
			detectNVIDIAModes(d, where, c)
		}
		if family == "google-tpu" {
			d.WholeNode = boolFact(true, Detected, where+" runs the TPU DRA driver, which prepares only claims for all chips of a node")
		}
		return
	}
}

// nvidiaInstall tells the GPU Operator's DaemonSet (owned by a GPUCluster)
// from the standalone chart's (a Helm release of dra-driver-nvidia-gpu, or
// of its former name nvidia-dra-driver-gpu); "" when neither says.
func nvidiaInstall(ds *appsv1.DaemonSet) v1alpha1.InstallPath {
	for _, o := range ds.OwnerReferences {
		if o.Kind == "GPUCluster" || o.Kind == "ClusterPolicy" {
			return v1alpha1.InstallGPUOperator
		}
	}
	chart := ds.Labels["helm.sh/chart"]
	if strings.HasPrefix(chart, "dra-driver-nvidia-gpu") || strings.HasPrefix(chart, "nvidia-dra-driver-gpu") {
		return v1alpha1.InstallNVIDIADRADriver
	}
	return ""
}

// detectNVIDIAModes reads --consumable-shares (CONSUMABLE_SHARES) and the
// feature gates (--feature-gates, FEATURE_GATES) of the NVIDIA driver's
// container (kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/main.go).
// A value it cannot read (from a ConfigMap or Secret) is unknown.
func detectNVIDIAModes(d *Driver, where string, c corev1.Container) {
	if v, from, ok := setting(c, "consumable-shares", "CONSUMABLE_SHARES"); ok {
		d.Shares = readShares(v, where+": "+from)
	} else if from != "" {
		d.Shares = unknown(where + ": " + from)
	} else {
		d.Shares = fact(v1alpha1.SharesDisabled, Default, where+" sets no --consumable-shares: the driver's default, disabled")
	}
	gates, from, ok := setting(c, "feature-gates", "FEATURE_GATES")
	switch {
	case ok:
		for _, g := range []struct {
			name string
			f    *Fact
		}{{"DynamicMIG", &d.DynamicMIG}, {"MPSSupport", &d.MPS}} {
			*g.f = boolFact(gateOn(gates, g.name), Detected, where+": "+from)
		}
		if d.Shares.Value != v1alpha1.SharesDisabled && d.Shares.Known() && !gateOn(gates, "ConsumableShares") {
			d.Shares = fact(d.Shares.Value, Detected, d.Shares.From+"; without the ConsumableShares gate ("+from+") the driver refuses to start")
		}
	case from != "":
		d.DynamicMIG, d.MPS = unknown(where+": "+from), unknown(where+": "+from)
	}
}

func readShares(v, from string) Fact {
	s, err := ParseShares(v)
	if err != nil {
		return unknown(fmt.Sprintf("%s: %q is not a --consumable-shares value", from, v))
	}
	return fact(s.String(), Detected, from)
}

// setting reads a flag (--name=value, or --name value) from a container's
// args, else the environment variable; ok is false when it is not set,
// from then says why it cannot be read ("" when it is simply absent).
func setting(c corev1.Container, flag, env string) (value, from string, ok bool) {
	args := append(slices.Clone(c.Command), c.Args...)
	for i, a := range args {
		if v, found := strings.CutPrefix(a, "--"+flag+"="); found {
			return v, "--" + flag + "=" + v, true
		}
		if a == "--"+flag && i+1 < len(args) {
			return args[i+1], "--" + flag + " " + args[i+1], true
		}
	}
	for _, e := range c.Env {
		if e.Name != env {
			continue
		}
		if e.ValueFrom != nil {
			return "", env + " comes from a reference claimbridge does not read", false
		}
		return e.Value, env + "=" + e.Value, true
	}
	return "", "", false
}

// gateOn reads "A=true,B=false," for one gate.
func gateOn(gates, name string) bool {
	for _, kv := range strings.Split(gates, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		if k == name {
			return v == "true"
		}
	}
	return false
}

// imageTag is the tag of an image reference, "" without one.
func imageTag(img string) string {
	img, _, _ = strings.Cut(img, "@")
	i := strings.LastIndex(img, ":")
	if i < 0 || strings.Contains(img[i:], "/") {
		return ""
	}
	return img[i+1:]
}

// detectAutoscaler reads Karpenter's and the Cluster Autoscaler's
// Deployments: Karpenter's --ignore-dra-requests (IGNORE_DRA_REQUESTS;
// kubernetes-sigs/karpenter pkg/operator/options/options.go) for every
// NodePool, the Cluster Autoscaler's --enable-dynamic-resource-allocation
// and --cloud-provider for every node it may grow.
func detectAutoscaler(p *Platform, d *appsv1.Deployment, nodePools []string) {
	where := "Deployment " + d.Namespace + "/" + d.Name
	for _, c := range d.Spec.Template.Spec.Containers {
		switch {
		case strings.Contains(c.Image, "karpenter"):
			karpenter(p, where, c, nodePools)
			return
		case strings.Contains(c.Image, "cluster-autoscaler"):
			clusterAutoscaler(p, where, c)
			return
		}
	}
}

func karpenter(p *Platform, where string, c corev1.Container, nodePools []string) {
	pool := Pool{Label: KarpenterPoolLabel, Autoscaler: fact(string(v1alpha1.AutoscalerKarpenter), Detected, where+" ("+c.Image+")"),
		Provider: unknown(""), MinNodes: unknown("")}
	switch v, from, ok := setting(c, "ignore-dra-requests", "IGNORE_DRA_REQUESTS"); {
	case ok:
		pool.DRA = boolFact(v == "false", Detected, where+": "+from)
	case from != "":
		pool.DRA = unknown(where + ": " + from)
	default:
		pool.DRA = boolFact(false, Default, where+" sets no --ignore-dra-requests: Karpenter's default, true")
	}
	pool.Release = unknown(where + ": the image has no tag")
	if tag := imageTag(c.Image); tag != "" {
		pool.Release = fact(tag, Detected, where+": image "+c.Image)
	}
	p.setPool(pool)
	for _, name := range nodePools {
		named := pool
		named.Name = name
		p.setPool(named)
	}
}

func clusterAutoscaler(p *Platform, where string, c corev1.Container) {
	pool := Pool{Label: "", Autoscaler: fact(string(v1alpha1.AutoscalerClusterAutoscaler), Detected, where+" ("+c.Image+")"),
		MinNodes: unknown("the node groups' minimums are the cloud's")}
	switch v, from, ok := setting(c, "enable-dynamic-resource-allocation", ""); {
	case ok:
		pool.DRA = boolFact(v != "false", Detected, where+": "+from)
	case slices.Contains(append(slices.Clone(c.Command), c.Args...), "--enable-dynamic-resource-allocation"):
		pool.DRA = boolFact(true, Detected, where+": --enable-dynamic-resource-allocation")
	default:
		pool.DRA = boolFact(false, Default, where+" sets no --enable-dynamic-resource-allocation: off by default")
	}
	if v, from, ok := setting(c, "cloud-provider", ""); ok {
		pool.Provider = fact(v, Detected, where+": "+from)
	} else {
		pool.Provider = unknown(where + " sets no --cloud-provider")
	}
	pool.Release = unknown(where + ": the image has no tag")
	if tag := imageTag(c.Image); tag != "" {
		pool.Release = fact(tag, Detected, where+": image "+c.Image)
	}
	p.setPool(pool)
}

// gkePoolLabel names a GKE node pool on its nodes.
const gkePoolLabel = "cloud.google.com/gke-nodepool"

// detectGKEPools names GKE's node pools; whether a pool autoscales, and
// its minimum, the nodes do not say: unknown until declared.
func detectGKEPools(p *Platform, nodes []*corev1.Node) {
	names := map[string]bool{}
	for _, n := range nodes {
		if v, ok := n.Labels[gkePoolLabel]; ok {
			names[v] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if p.PoolOf(map[string]string{gkePoolLabel: name}) != nil {
			continue
		}
		why := "GKE node pool " + name + ": whether it autoscales, and its minimum, are not visible in the cluster; declare them (--platform)"
		p.setPool(Pool{Label: gkePoolLabel, Name: name, Autoscaler: unknown(why), DRA: unknown(why), Release: unknown(why), Provider: unknown(why), MinNodes: unknown(why)})
	}
}
