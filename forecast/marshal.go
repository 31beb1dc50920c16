package forecast

import (
	"encoding/json"
	"fmt"
	"math"

	yaml "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
)

// marshalObject writes an object of an inventory as YAML without nulls,
// empty maps and the kubelet's zero-valued node status fields: what
// feasibility.LoadInventory reads back as the same object, and what a person reads
// without noise.
func marshalObject(obj any) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	var m any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if n, ok := obj.(*corev1.Node); ok {
		if status, ok := m.(map[string]any)["status"].(map[string]any); ok {
			if n.Status.DaemonEndpoints == (corev1.NodeDaemonEndpoints{}) {
				delete(status, "daemonEndpoints")
			}
			if n.Status.NodeInfo == (corev1.NodeSystemInfo{}) {
				delete(status, "nodeInfo")
			}
		}
	}
	// The JSON form's values, as sigs.k8s.io/yaml would write them, without
	// parsing the JSON again as YAML.
	y, err := yaml.Marshal(prune(m))
	if err != nil {
		return nil, fmt.Errorf("encode yaml: %w", err)
	}
	return y, nil
}

// prune drops nulls and empty maps, recursively, and makes whole numbers
// integers (JSON decodes every number as a float; YAML writes 8, not 8.0
// nor 8e+00, for an integer).
func prune(v any) any {
	switch v := v.(type) {
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v)
		}
	case map[string]any:
		for k, e := range v {
			e = prune(e)
			if m, ok := e.(map[string]any); e == nil || ok && len(m) == 0 {
				delete(v, k)
				continue
			}
			v[k] = e
		}
	case []any:
		for i := range v {
			v[i] = prune(v[i])
		}
	}
	return v
}
