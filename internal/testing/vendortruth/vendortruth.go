// Package vendortruth holds GPU Feature Discovery's labels and the NVIDIA
// DRA driver's devices produced by NVIDIA's own code from the same
// simulated GPUs (data/PROVENANCE.txt), for the tests that hold the
// vocabulary (translate) and the forecast (forecast) against them.
package vendortruth

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

//go:embed data
var data embed.FS

// Models with GFD labels; every one but t4 has the driver's devices too.
var Models = []string{"a100", "h100", "l40s", "t4"}

// MIGModels have the driver's DynamicMIG devices.
var MIGModels = []string{"a100", "h100"}

// Labels are GFD's labels of the model (gfd-labels-<model>.txt).
func Labels(model string) (map[string]string, error) {
	b, err := data.ReadFile("data/gfd-labels-" + model + ".txt")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("gfd-labels-%s.txt: %q is not key=value", model, line)
		}
		out[k] = v
	}
	return out, nil
}

// Devices are the full GPUs the driver publishes for the model
// (dra-devices-<model>.json); ok is false for a model it did not run on.
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
