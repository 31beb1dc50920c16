package feasibility

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// MarshalObject writes an object of an inventory as YAML without nulls,
// empty maps and the kubelet's zero-valued node status fields: what
// [LoadInventory] reads back as the same object, and what a person reads
// without noise.
func MarshalObject(obj any) ([]byte, error) {
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
	y, err := yaml.Marshal(prune(m))
	if err != nil {
		return nil, fmt.Errorf("encode yaml: %w", err)
	}
	return y, nil
}

// prune drops nulls and empty maps, recursively.
func prune(v any) any {
	switch v := v.(type) {
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
