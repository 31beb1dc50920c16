package forecast

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

// The Google TPU DRA driver (tpu.google.com) as the forecast makes it: one
// device per chip the device plugin offers (google.com/tpu), "tpu-<i>" with
// index i. The driver reads the node's labels itself
// (cmd/tpu-dra-kubeletplugin, NewTPUManager): accelerator, chip count and
// topology from tpu.google.com/* or GKE's aliases (the policy's tpu profile
// maps the same labels to the same attributes), tpuGen from the
// accelerator (AcceleratorGen), brand "Google"; uuid is derived from the
// chip's device file, which no label tells.
//
// The driver reads the labels alone, on any node
// (kubernetes-sigs/dra-driver-google-tpu v0.2.0
// cmd/tpu-dra-kubeletplugin/util.go, labelsFromNode and
// normalizeTPULabels): the canonical tpu.google.com/* key when it has a
// value, else GKE's alias (cloud.google.com/gke-tpu-accelerator,
// gke-accelerator-count, gke-tpu-topology), with or without GKE's other
// labels. The policy reads GKE's aliases only on GKE nodes (those with
// cloud.google.com/gke-nodepool, for the placement check's legacy view), so
// the forecast reads the node's labels as the driver does first:
// tpuLabels.

// tpu forecasts the TPU driver's chips on a node from its resources.
func (f *forecaster) tpu(n *corev1.Node, rs []legacyResource) (devices []resourceapi.Device, notes, unknownList []string, notForecast string) {
	var chips int64
	for _, r := range rs {
		chips += r.count
	}
	ft := f.p.ForecastDevices(rs[0].rule.Family, tpuLabels(n.Labels))
	notes = append(notes, ft.Notes...)
	attrs := local(DriverTPU, ft.Attributes)
	acc := attrs["accelerator"].StringValue
	if acc == nil {
		return nil, notes, nil, "no accelerator label (cloud.google.com/gke-tpu-accelerator or tpu.google.com/accelerator) the policy reads: " +
			"the TPU driver does not start without one"
	}
	gen, err := acceleratorGen(*acc)
	if err != nil {
		return nil, notes, nil, fmt.Sprintf("the TPU driver does not start: %v", err)
	}
	attrs["tpuGen"] = resourceapi.DeviceAttribute{StringValue: ptr.To(gen)}
	attrs["brand"] = resourceapi.DeviceAttribute{StringValue: ptr.To("Google")}
	switch cc := attrs["chipCount"].IntValue; {
	case cc == nil:
		attrs["chipCount"] = resourceapi.DeviceAttribute{IntValue: ptr.To(chips)}
		notes = append(notes, fmt.Sprintf("chipCount: no chip-count label (cloud.google.com/gke-accelerator-count or tpu.google.com/chip-count); "+
			"the driver needs one (or its --tpu-chip-count flag) equal to the chips it finds: written as the %d chips of google.com/tpu", chips))
	case *cc != chips:
		return nil, notes, nil, fmt.Sprintf("the chip-count label says %d chips and the node offers %d google.com/tpu: the TPU driver checks the chips it finds "+
			"against the label and does not start", *cc, chips)
	}
	for i := range chips {
		a := cloneAttrs(attrs)
		a["index"] = resourceapi.DeviceAttribute{IntValue: ptr.To(i)}
		d := resourceapi.Device{Name: fmt.Sprintf("tpu-%d", i), Attributes: a}
		devices = append(devices, d)
		unknownList = unknown(d, tpuAttributes, nil)
	}
	return devices, notes, unknownList, ""
}

// The TPU driver's AcceleratorGen (cmd/tpu-dra-kubeletplugin/util.go): the
// TPU generation of an accelerator label value.
var (
	tpuAcceleratorRegex     = regexp.MustCompile(`^tpu\d+[a-z]?$`)
	tpuPastAcceleratorRegex = regexp.MustCompile(`^tpu-v\d+([ep]?-slice)?((?:-lite)?-(device|podslice))?$`)
	tpuGenerations          = []string{"v3", "v4", "v4lite", "v5lite", "v5litepod", "v5p", "v6e"}
)

// acceleratorGen: tpu-v4-podslice is v4, tpu-v5-lite-device v5lite,
// tpu-v5-lite-podslice v5litepod, tpu-v5p-slice v5p, tpu-v6e-slice v6e; a
// name of the new form (tpu7x) is its own generation.
func acceleratorGen(accelerator string) (string, error) {
	if tpuAcceleratorRegex.MatchString(accelerator) {
		return accelerator, nil
	}
	if !tpuPastAcceleratorRegex.MatchString(accelerator) || accelerator == "tpu-v4-device" || accelerator == "tpu-v4-lite-podslice" {
		return "", fmt.Errorf("invalid accelerator type: %s", accelerator)
	}
	v := strings.Split(accelerator, "-")[1]
	if strings.Contains(accelerator, "lite") {
		v += "lite"
	}
	if strings.HasPrefix(v, "v5") && strings.Contains(accelerator, "podslice") {
		v += "pod"
	}
	if !slices.Contains(tpuGenerations, v) {
		return "", fmt.Errorf("invalid TPU generation: %s", v)
	}
	return v, nil
}

// tpuLabelAliases are the TPU driver's canonical labels and GKE's aliases
// of each (canonicalLabelAliases, v0.2.0).
var tpuLabelAliases = []struct{ canonical, gke string }{
	{"tpu.google.com/accelerator", "cloud.google.com/gke-tpu-accelerator"},
	{"tpu.google.com/chip-count", "cloud.google.com/gke-accelerator-count"},
	{"tpu.google.com/topology", "cloud.google.com/gke-tpu-topology"},
	{"tpu.google.com/ici-resiliency", "cloud.google.com/gke-tpu-ici-resiliency"},
}

// tpuLabels are the node's labels as the TPU driver reads them: of each
// canonical label and its GKE alias, the first with a value (the canonical
// one first), under the canonical key and under the alias's where the node
// has it; neither when both are empty. The other labels are as they are.
func tpuLabels(labels map[string]string) map[string]string {
	out := maps.Clone(labels)
	for _, a := range tpuLabelAliases {
		v := cmp.Or(labels[a.canonical], labels[a.gke])
		_, gke := labels[a.gke]
		delete(out, a.canonical)
		delete(out, a.gke)
		if v == "" {
			continue
		}
		out[a.canonical] = v
		if gke {
			out[a.gke] = v
		}
	}
	return out
}
