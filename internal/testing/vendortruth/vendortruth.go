// Package vendortruth holds GPU Feature Discovery's labels and the NVIDIA
// DRA driver's devices produced by NVIDIA's own code from the same
// simulated GPUs, and AMD DRA driver devices AMD published, with the node
// labeller's labels worked out for them (data/PROVENANCE.txt), for the
// tests that hold the vocabulary (translate), the placement check (decide)
// and the forecast (forecast) against them.
package vendortruth

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

//go:embed data
var data embed.FS

// Models with GFD labels; every one but t4 has the driver's devices too.
var Models = []string{"a100", "h100", "l40s", "t4"}

// AMDModels have the AMD DRA driver's devices (dra-devices-amd-<model>.json,
// through [Devices] as "amd-<model>") and the node labeller's labels
// ([AMDLabels]): a whole MI300X, and a partition of one in CPX/NPS1.
var AMDModels = []string{"mi300x", "mi300x-cpx"}

// AMDLabels are the value labels AMD's node labeller writes on a node of
// the model's GPUs (amd-labels-<model>.txt), worked out from its code:
// not vendor output (PROVENANCE.txt says how).
func AMDLabels(model string) (map[string]string, error) {
	return readLabels("data/amd-labels-" + model + ".txt")
}

// MIGModels have the driver's DynamicMIG devices.
var MIGModels = []string{"a100", "h100"}

// Labels are GFD's labels of the model (gfd-labels-<model>.txt).
func Labels(model string) (map[string]string, error) {
	return readLabels("data/gfd-labels-" + model + ".txt")
}

// readLabels reads a file of key=value lines.
func readLabels(name string) (map[string]string, error) {
	b, err := data.ReadFile(name)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: %q is not key=value", path.Base(name), line)
		}
		out[k] = v
	}
	return out, nil
}

// Devices are the full GPUs the driver publishes for the model
// (dra-devices-<model>.json; "amd-<model>" for the AMD driver's devices
// of an AMD model); ok is false for a model it did not run on.
func Devices(model string) (devs []resourceapi.Device, ok bool, err error) {
	b, err := data.ReadFile("data/dra-devices-" + model + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(b, &devs); err != nil {
		return nil, false, err
	}
	return devs, true, nil
}

// DynamicMIG are the devices of the driver's one pool with DynamicMIG
// (dra-dynamicmig-gonvml-<model>.json).
func DynamicMIG(model string) ([]resourceapi.Device, error) {
	b, err := data.ReadFile("data/dra-dynamicmig-gonvml-" + model + ".json")
	if err != nil {
		return nil, err
	}
	var doc struct {
		Pools map[string]struct {
			Slices []struct{ Devices []resourceapi.Device }
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var out []resourceapi.Device
	for _, pool := range doc.Pools {
		for _, s := range pool.Slices {
			out = append(out, s.Devices...)
		}
	}
	return out, nil
}
