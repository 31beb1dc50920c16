package feasibility

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Inventory is what the cluster would list: the input of [NewSnapshot]. The webhook fills it from
// informers, the CLI and tests from YAML with [LoadInventory]. Slices are the raw ResourceSlices;
// the DeviceTaintRules are applied by [NewSnapshot] the way the scheduler does.
type Inventory struct {
	Nodes      []*corev1.Node
	Slices     []*resourceapi.ResourceSlice
	Classes    []*resourceapi.DeviceClass
	Claims     []*resourceapi.ResourceClaim
	TaintRules []*resourceapi.DeviceTaintRule
	// Pods bound to nodes, when known: their requests count against the
	// nodes' allocatable CPU, memory and other resources. Without them a
	// verdict compares a pod's requests with allocatable alone.
	Pods []*corev1.Pod
	// PodsListed says Pods lists every pod bound to a node, even when there
	// are none (the webhook's pod informer): the nodes' usage is then
	// known. Without it, usage is known only when Pods is not empty.
	PodsListed bool
	// Ignored are the documents LoadInventory read and left out, a kind it
	// does not read ("<file>: document <i>: <apiVersion> <kind>"), so that
	// a reader that must not lose any can refuse them.
	Ignored []string
}

// LoadInventory reads Nodes, ResourceSlices, DeviceClasses, ResourceClaims, DeviceTaintRules and
// bound Pods (their requests are the nodes' usage)
// from YAML files (multi-document, "kind: List" allowed) or from the *.yaml, *.yml and *.json
// files of directories (not recursive), in lexical order. Other kinds are ignored; unknown
// fields are errors. Errors name the file and the document index (0-based).
func LoadInventory(paths ...string) (*Inventory, error) {
	inv := &Inventory{}
	for _, path := range paths {
		info, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("load inventory: %w", err)
		}
		files := []string{path}
		if info.IsDir() {
			entries, err := os.ReadDir(path)
			if err != nil {
				return nil, fmt.Errorf("load inventory: %w", err)
			}
			files = nil
			for _, e := range entries {
				switch filepath.Ext(e.Name()) {
				case ".yaml", ".yml", ".json":
					if e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0 {
						files = append(files, filepath.Join(path, e.Name()))
					}
				}
			}
			slices.Sort(files)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("load inventory: %w", err)
			}
			ignored := len(inv.Ignored)
			if err := inv.decode(b); err != nil {
				return nil, fmt.Errorf("load inventory %s: %w", file, err)
			}
			for i := ignored; i < len(inv.Ignored); i++ {
				inv.Ignored[i] = file + ": " + inv.Ignored[i]
			}
		}
	}
	return inv, nil
}

// decode adds the objects of one multi-document YAML stream.
func (inv *Inventory) decode(b []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		ignored := len(inv.Ignored)
		if err := inv.decodeObject(doc); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		for j := ignored; j < len(inv.Ignored); j++ {
			inv.Ignored[j] = fmt.Sprintf("document %d: %s", i, inv.Ignored[j])
		}
	}
}

func (inv *Inventory) decodeObject(doc []byte) error {
	var meta struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return err
	}
	group, _, _ := strings.Cut(meta.APIVersion, "/")
	switch {
	case meta.Kind == "" && meta.APIVersion == "":
		// A document of comments only.
		return nil
	case strings.HasSuffix(meta.Kind, "List"):
		for j, item := range meta.Items {
			if err := inv.decodeObject(item); err != nil {
				return fmt.Errorf("item %d: %w", j, err)
			}
		}
		return nil
	case meta.APIVersion == "v1" && meta.Kind == "Pod":
		obj := &corev1.Pod{}
		if err := yaml.Unmarshal(doc, obj); err != nil {
			return fmt.Errorf("pod: %w", err)
		}
		if obj.Spec.NodeName == "" {
			inv.Ignored = append(inv.Ignored, "v1 Pod (not bound to a node)")
			return nil
		}
		inv.Pods = append(inv.Pods, obj)
	case meta.APIVersion == "v1" && meta.Kind == "Node":
		obj := &corev1.Node{}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return fmt.Errorf("node: %w", err)
		}
		inv.Nodes = append(inv.Nodes, obj)
	case meta.APIVersion == resourceapi.SchemeGroupVersion.String():
		switch meta.Kind {
		case "ResourceSlice":
			obj := &resourceapi.ResourceSlice{}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				return fmt.Errorf("resource slice: %w", err)
			}
			inv.Slices = append(inv.Slices, obj)
		case "DeviceClass":
			obj := &resourceapi.DeviceClass{}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				return fmt.Errorf("device class: %w", err)
			}
			inv.Classes = append(inv.Classes, obj)
		case "ResourceClaim":
			obj := &resourceapi.ResourceClaim{}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				return fmt.Errorf("resource claim: %w", err)
			}
			inv.Claims = append(inv.Claims, obj)
		case "DeviceTaintRule":
			obj := &resourceapi.DeviceTaintRule{}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				return fmt.Errorf("device taint rule: %w", err)
			}
			inv.TaintRules = append(inv.TaintRules, obj)
		default:
			inv.Ignored = append(inv.Ignored, meta.APIVersion+" "+meta.Kind)
		}
	case group == resourceapi.GroupName:
		return fmt.Errorf("unsupported version %s of %s (want %s)", meta.APIVersion, meta.Kind, resourceapi.SchemeGroupVersion)
	default:
		inv.Ignored = append(inv.Ignored, meta.APIVersion+" "+meta.Kind)
	}
	return nil
}

// WithClasses returns a copy of inv whose DeviceClasses also hold classes; a
// class of the same name as one inv has replaces it, as applying the
// manifest that carries it would. The CLI adds the DeviceClasses found in
// the workload's own files this way (the DRA drivers' demos ship their
// classes beside the pods). inv is not modified.
func (inv *Inventory) WithClasses(classes ...*resourceapi.DeviceClass) *Inventory {
	if len(classes) == 0 {
		return inv
	}
	out := *inv
	out.Classes = slices.DeleteFunc(slices.Clone(inv.Classes), func(c *resourceapi.DeviceClass) bool {
		return slices.ContainsFunc(classes, func(n *resourceapi.DeviceClass) bool { return n.Name == c.Name })
	})
	out.Classes = append(out.Classes, classes...)
	return &out
}
