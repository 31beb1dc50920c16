// Package gpulabels holds the GPU node-label vocabularies of GPU Feature
// Discovery and GKE as strings: how GFD writes product names, MIG
// profiles, architecture families and sharing, and GKE's sharing labels.
// It knows no policy; translate's conversions and the forecast read it.
package gpulabels

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

var migSuffix = regexp.MustCompile(`^(.+)-MIG-([0-9a-z.+-]+)$`)

// ParseProduct splits a GFD product label value into the product (in
// label form: spaces as dashes) and the MIG profile of the single strategy.
// A "-SHARED" suffix (time-sliced GPUs) is dropped; a pod that asks for a
// shared product is kept legacy before labels are converted (translate),
// and NotIn on a shared product holds on every DRA device.
func ParseProduct(v string) (product, migProfile string) {
	v = strings.TrimSuffix(v, "-SHARED")
	if m := migSuffix.FindStringSubmatch(v); m != nil {
		return m[1], m[2]
	}
	return v, ""
}

// Sanitise is GPU Feature Discovery's label sanitising of a product
// name (internal/lm/resource.go): characters outside [A-Za-z0-9-_. ] are
// dropped and the whitespace-separated fields are joined with "-".
func Sanitise(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.', r == ' ':
			b.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(b.String()), "-")
}

// CCRange is a half-open compute-capability range [lo, hi) as major.minor.
type CCRange struct{ LoMajor, LoMinor, HiMajor, HiMinor int64 }

// Families mirrors GPU Feature Discovery's getArchFamily:
// 1 tesla, 2 fermi, 3 kepler, 5 maxwell, 6 pascal, 7.0–7.4 volta, 7.5+ turing,
// 8.0–8.8 ampere, 8.9 ada-lovelace, 9 hopper, 10 and 12 blackwell, 13 rubin
// (NVIDIA/k8s-device-plugin internal/lm/resource.go at 1b826acc6). Releases
// before ada-lovelace existed label every 8.x "ampere" (the Legacy scheme).
func Families(scheme v1alpha1.GFDFamilyScheme) map[string][]CCRange {
	m := map[string][]CCRange{
		"tesla":        {{1, 0, 2, 0}},
		"fermi":        {{2, 0, 3, 0}},
		"kepler":       {{3, 0, 4, 0}},
		"maxwell":      {{5, 0, 6, 0}},
		"pascal":       {{6, 0, 7, 0}},
		"volta":        {{7, 0, 7, 5}},
		"turing":       {{7, 5, 8, 0}},
		"ampere":       {{8, 0, 8, 9}},
		"ada-lovelace": {{8, 9, 9, 0}},
		"hopper":       {{9, 0, 10, 0}},
		"blackwell":    {{10, 0, 11, 0}, {12, 0, 13, 0}},
		"rubin":        {{13, 0, 14, 0}},
	}
	if scheme == v1alpha1.GFDFamilyLegacy {
		m["ampere"] = []CCRange{{8, 0, 9, 0}}
		delete(m, "ada-lovelace")
		delete(m, "blackwell")
		delete(m, "rubin")
	}
	return m
}

// FamilyOf is the GFD family of a compute capability (GFD's getArchFamily
// says "undefined" for the rest).
func FamilyOf(major, minor int64, scheme v1alpha1.GFDFamilyScheme) string {
	cc := major*1000 + minor
	fams := Families(scheme)
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		for _, r := range fams[name] {
			if cc >= r.LoMajor*1000+r.LoMinor && cc < r.HiMajor*1000+r.HiMinor {
				return name
			}
		}
	}
	return "undefined"
}

// ProductNames are NVML product names known exactly, each with where it
// was read; with the productName values of the policy's Map rules (GKE's
// accelerator table) they turn a GFD product label back into the name the
// NVIDIA driver publishes. A label form that none of them sanitises to is
// written as the label spells it, with a note.
var ProductNames = []string{
	// NVIDIA's DRA driver over NVIDIA's simulated A100, H100 and L40S
	// (internal/testing/vendortruth, dra-devices-*.json).
	"NVIDIA A100-SXM4-40GB",
	"NVIDIA H100 80GB HBM3",
	"NVIDIA L40S",
	// dra-driver-nvidia-gpu's documentation of productName (reference
	// dra.md §3.2: "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3").
	"NVIDIA A100-SXM4-80GB",
}

var profileBase = regexp.MustCompile(`^((?:[0-9]+c\.)?[0-9]+g\.[0-9]+gb)(.*)$`)

// MIGProfileOfGFD turns a MIG profile as the device plugin and GFD spell it
// in resource names and labels (nvidia.com/mig-1g.5gb.me: "+" is not
// allowed there and becomes ".") into the NVIDIA DRA driver's profile
// attribute (go-nvlib's MigProfileInfo.String(): "1g.5gb+me"). Other
// spellings are returned as they are.
func MIGProfileOfGFD(profile string) string {
	m := profileBase.FindStringSubmatch(profile)
	if m == nil {
		return profile
	}
	if rest, ok := strings.CutPrefix(m[2], "."); ok && rest != "" {
		return m[1] + "+" + rest
	}
	return profile
}

// GFDProfileOfMIG is the inverse of [MIGProfileOfGFD]: a MIG profile as the
// NVIDIA DRA driver spells it ("1g.5gb+me") as the device plugin and GFD
// spell it in resource names and product labels ("1g.5gb.me").
func GFDProfileOfMIG(profile string) string {
	return strings.ReplaceAll(profile, "+", ".")
}

// Architectures names, for each GFD family of the Current scheme, the
// architecture the NVIDIA driver publishes (go-nvlib's
// GetArchitectureAsString: Kepler … Blackwell, and Rubin in the go-nvlib
// that dra-driver-nvidia-gpu 95932046 vendors). GFD's tesla and fermi have
// no name there.
var Architectures = map[string]string{
	"kepler":       "Kepler",
	"maxwell":      "Maxwell",
	"pascal":       "Pascal",
	"volta":        "Volta",
	"turing":       "Turing",
	"ampere":       "Ampere",
	"ada-lovelace": "Ada Lovelace",
	"hopper":       "Hopper",
	"blackwell":    "Blackwell",
	"rubin":        "Rubin",
}

// ArchitectureOfCC is the architecture the NVIDIA driver publishes for a
// compute capability, "" when it names none.
func ArchitectureOfCC(major, minor int64) string {
	return Architectures[FamilyOf(major, minor, v1alpha1.GFDFamilyCurrent)]
}

// GPU Feature Discovery's sharing labels (NVIDIA/k8s-device-plugin
// internal/lm/resource.go, baseLabeler, and internal/lm/nvml.go,
// newSharingLabeler): <resource>.sharing-strategy is "time-slicing" or "mps"
// when the resource has replicas > 1 ("none" otherwise, api/config/v1
// SharingStrategy), <resource>.replicas the number of replicas (1, or 0
// with sharing disabled), and nvidia.com/mps.capable "true" only under MPS
// sharing. A pod that selects such a value asks for a shared GPU, like a
// -SHARED product.
const (
	sharingStrategySuffix = ".sharing-strategy"
	ReplicasSuffix        = ".replicas"
	MPSCapable            = "nvidia.com/mps.capable"
)

// SharingValue reports whether a value of a GFD label key says the GPUs
// are shared; known is false for keys that are not sharing labels.
func SharingValue(key, value string) (shared, known bool) {
	switch {
	case key == MPSCapable:
		return value == "true", true
	case !strings.HasPrefix(key, "nvidia.com/"):
		return false, false
	case strings.HasSuffix(key, sharingStrategySuffix):
		return value == "time-slicing" || value == "mps", true
	case strings.HasSuffix(key, ReplicasSuffix):
		n, err := strconv.Atoi(value)
		return err == nil && n > 1, true
	}
	return false, false
}

// GKE's GPU sharing labels ("Share GPUs with multiple workloads using
// time-sharing" and "… using NVIDIA MPS"): a node pool's sharing strategy,
// time-sharing or mps, and the most containers that share one GPU. A pod
// that selects them asks for a shared GPU, as with GFD's labels.
const (
	GKESharingStrategy  = "cloud.google.com/gke-gpu-sharing-strategy"
	GKEMaxSharedClients = "cloud.google.com/gke-max-shared-clients-per-gpu"
	GKEAccelerator      = "cloud.google.com/gke-accelerator"
)

// GKESharingValue reports whether a value of a GKE label key says the GPUs
// are shared; known is false for keys that are not GKE's sharing labels.
func GKESharingValue(key, value string) (shared, known bool) {
	switch key {
	case GKESharingStrategy:
		return value == "time-sharing" || value == "mps", true
	case GKEMaxSharedClients:
		n, err := strconv.Atoi(value)
		return err == nil && n > 1, true
	}
	return false, false
}

// SelectsMPS says how a node-label requirement selects GPUs shared by MPS
// ("" when it does not): GFD's sharing strategy mps or mps.capable=true,
// GKE's mps strategy.
func SelectsMPS(key string, op corev1.NodeSelectorOperator, values []string) string {
	if op != corev1.NodeSelectorOpIn {
		return ""
	}
	for _, v := range values {
		switch {
		case key == MPSCapable && v == "true":
			return "GPU Feature Discovery writes mps.capable=true only where the device plugin shares GPUs by MPS"
		case strings.HasPrefix(key, "nvidia.com/") && strings.HasSuffix(key, sharingStrategySuffix) && v == "mps":
			return "GPU Feature Discovery's sharing strategy mps"
		case key == GKESharingStrategy && v == "mps":
			return "GKE's GPU sharing strategy mps"
		}
	}
	return ""
}

// SharedSuffix is what GPU Feature Discovery appends to the product label of
// GPUs the device plugin shares (time-slicing or MPS, replicas above 1)
// under the plain resource name; renamed (nvidia.com/gpu.shared,
// renameByDefault) they keep the plain product
// (NVIDIA/k8s-device-plugin internal/lm/resource.go, getProductName).
const SharedSuffix = "-SHARED"

// AdmitsShared reports whether a node-label requirement, on a label the
// policy reads with the conversion conv, admits a node whose GPUs the
// device plugin shares under the plain resource name, labelled as GPU
// Feature Discovery labels it (internal/lm/resource.go, baseLabeler): the
// product with SharedSuffix, replicas above 1, sharing strategy
// time-slicing or mps. GFD writes the three on every node it labels, so
// DoesNotExist admits none; labels of other conversions admit it.
func AdmitsShared(conv v1alpha1.Conversion, op corev1.NodeSelectorOperator, values []string) bool {
	shared := map[v1alpha1.Conversion]func(string) bool{
		v1alpha1.ConvGFDProduct: func(v string) bool { return strings.HasSuffix(v, SharedSuffix) },
		v1alpha1.ConvReplicas: func(v string) bool {
			n, err := strconv.Atoi(v)
			return err == nil && n > 1
		},
		v1alpha1.ConvSharingStrategy: func(v string) bool { return v == "time-slicing" || v == "mps" },
	}[conv]
	switch {
	case shared == nil || op == corev1.NodeSelectorOpExists:
		return true
	case op == corev1.NodeSelectorOpIn:
		return slices.ContainsFunc(values, shared)
	case op == corev1.NodeSelectorOpNotIn:
		// Any product and any count of replicas is left; of the
		// strategies, one that values do not list.
		return conv != v1alpha1.ConvSharingStrategy || !slices.Contains(values, "time-slicing") || !slices.Contains(values, "mps")
	case op == corev1.NodeSelectorOpGt:
		return conv == v1alpha1.ConvReplicas
	case op == corev1.NodeSelectorOpLt && conv == v1alpha1.ConvReplicas && len(values) == 1:
		n, err := strconv.Atoi(values[0])
		return err == nil && n > 2
	}
	return false
}
