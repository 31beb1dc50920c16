package fleetgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/internal/testing/golden"
)

const (
	fleetsDir = "../../../examples/fleets"
	corpusDir = "../../../feasibility/testdata/placement/fleets"
)

// TestShippedFleetsMatchGenerator fails when examples/fleets drifts from the generator.
// Refresh with: go run ./hack/genfleet (or go test ./internal/testing/fleetgen -update).
func TestShippedFleetsMatchGenerator(t *testing.T) {
	checkGenerated(t, fleetsDir, Shipped())
}

// TestCorpusFleetsMatchGenerator does the same for the placement corpus's fleets.
func TestCorpusFleetsMatchGenerator(t *testing.T) {
	checkGenerated(t, corpusDir, Corpus())
}

func checkGenerated(t *testing.T, root string, fleets []Fleet) {
	for _, f := range fleets {
		t.Run(f.Name, func(t *testing.T) {
			dir := filepath.Join(root, f.Name)
			if golden.Updating() {
				if err := Write(dir, f); err != nil {
					t.Fatal(err)
				}
			}
			want, err := f.Files()
			if err != nil {
				t.Fatal(err)
			}
			paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]byte{}
			for _, p := range paths {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				got[filepath.Base(p)] = b
			}
			if diff := cmp.Diff(slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got))); diff != "" {
				t.Fatalf("files in %s differ from the generator (-want,+got):\n%s\nrun: go run ./hack/genfleet", dir, diff)
			}
			for name, w := range want {
				if diff := cmp.Diff(string(w), string(got[name])); diff != "" {
					t.Errorf("%s/%s differs from the generator (-want,+got):\n%s\nrun: go run ./hack/genfleet", dir, name, diff)
				}
			}
		})
	}
}

func TestGeneratorIsDeterministic(t *testing.T) {
	for name, build := range map[string]func() []Fleet{
		"shipped fleets":    Shipped,
		"a synthetic fleet": func() []Fleet { return []Fleet{Synthetic(9)} },
	} {
		t.Run(name, func(t *testing.T) {
			a, b := build(), build()
			for i := range a {
				fa, err := a[i].Files()
				if err != nil {
					t.Fatal(err)
				}
				fb, err := b[i].Files()
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(fa, fb); diff != "" {
					t.Errorf("fleet %s changed between runs (-want,+got):\n%s", a[i].Name, diff)
				}
			}
		})
	}
}

// TestFleetsPassAPIValidation re-checks the rules of the apiserver's validation that generated
// objects could break: names, attribute and capacity names and counts, value lengths, pools.
func TestFleetsPassAPIValidation(t *testing.T) {
	fleets := append(append(Shipped(), Corpus()...), Synthetic(8))
	for _, f := range fleets {
		t.Run(f.Name, func(t *testing.T) {
			for _, err := range validateFleet(f) {
				t.Error(err)
			}
			files, err := f.Files()
			if err != nil {
				t.Fatal(err)
			}
			for name, b := range files {
				if err := decodeStrict(b); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		})
	}
}

func TestSyntheticFleetHasNShapes(t *testing.T) {
	f := Synthetic(8)
	got := map[string]int{}
	for _, n := range f.Nodes {
		got[n.Labels[SyntheticShapeLabel]]++
	}
	want := map[string]int{"dgx-h100": 2, "a100-mig": 2, "l4": 2, "a100": 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shapes (-want,+got):\n%s", diff)
	}
}

var semverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z-.]+)?(?:\+[0-9A-Za-z-.]+)?$`)

func validateFleet(f Fleet) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	nodes := map[string]bool{}
	for _, n := range f.Nodes {
		nodes[n.Name] = true
		for _, m := range validation.IsDNS1123Subdomain(n.Name) {
			bad("node %s: %s", n.Name, m)
		}
		if n.Labels["kubernetes.io/hostname"] != n.Name {
			bad("node %s: hostname label %q", n.Name, n.Labels["kubernetes.io/hostname"])
		}
		for k, v := range n.Labels {
			for _, m := range validation.IsQualifiedName(k) {
				bad("node %s label %s: %s", n.Name, k, m)
			}
			for _, m := range validation.IsValidLabelValue(v) {
				bad("node %s label %s: %s", n.Name, k, m)
			}
		}
	}
	for _, c := range f.Classes {
		for _, m := range validation.IsDNS1123Subdomain(c.Name) {
			bad("class %s: %s", c.Name, m)
		}
	}
	pools := map[string]bool{}
	sliceNames := map[string]bool{}
	for _, s := range f.Slices {
		if sliceNames[s.Name] {
			bad("slice %s: duplicate name", s.Name)
		}
		sliceNames[s.Name] = true
		for _, m := range validation.IsDNS1123Subdomain(s.Name) {
			bad("slice %s: %s", s.Name, m)
		}
		if len(s.Spec.Driver) > resourceapi.DriverNameMaxLength {
			bad("slice %s: driver name too long", s.Name)
		}
		if s.Spec.NodeName == nil || !nodes[*s.Spec.NodeName] {
			bad("slice %s: not on a node of the fleet", s.Name)
		}
		pool := s.Spec.Driver + "/" + s.Spec.Pool.Name
		if pools[pool] {
			bad("slice %s: pool %s has more than one slice", s.Name, pool)
		}
		pools[pool] = true
		if s.Spec.Pool.Generation != 1 || s.Spec.Pool.ResourceSliceCount != 1 {
			bad("slice %s: pool generation/count", s.Name)
		}
		if len(s.Spec.Devices) == 0 || len(s.Spec.Devices) > resourceapi.ResourceSliceMaxDevices {
			bad("slice %s: %d devices", s.Name, len(s.Spec.Devices))
		}
		devices := map[string]bool{}
		for _, d := range s.Spec.Devices {
			if devices[d.Name] {
				bad("slice %s: duplicate device %s", s.Name, d.Name)
			}
			devices[d.Name] = true
			for _, m := range validation.IsDNS1123Label(d.Name) {
				bad("device %s/%s: %s", s.Name, d.Name, m)
			}
			if n := len(d.Attributes) + len(d.Capacity); n > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
				bad("device %s/%s: %d attributes and capacities", s.Name, d.Name, n)
			}
			for name, a := range d.Attributes {
				if err := validateQualifiedName(string(name)); err != nil {
					bad("device %s/%s attribute %s: %v", s.Name, d.Name, name, err)
				}
				if _, ok := d.Capacity[name]; ok {
					bad("device %s/%s: %s is both attribute and capacity", s.Name, d.Name, name)
				}
				set := 0
				if a.IntValue != nil {
					set++
				}
				if a.BoolValue != nil {
					set++
				}
				if a.StringValue != nil {
					set++
					if len(*a.StringValue) > resourceapi.DeviceAttributeMaxValueLength {
						bad("device %s/%s attribute %s: string too long", s.Name, d.Name, name)
					}
				}
				if a.VersionValue != nil {
					set++
					if !semverRE.MatchString(*a.VersionValue) || len(*a.VersionValue) > resourceapi.DeviceAttributeMaxValueLength {
						bad("device %s/%s attribute %s: invalid version %q", s.Name, d.Name, name, *a.VersionValue)
					}
				}
				if set != 1 {
					bad("device %s/%s attribute %s: %d values set", s.Name, d.Name, name, set)
				}
			}
			for name := range d.Capacity {
				if err := validateQualifiedName(string(name)); err != nil {
					bad("device %s/%s capacity %s: %v", s.Name, d.Name, name, err)
				}
			}
		}
	}
	return errs
}

// validateQualifiedName mirrors the apiserver's rule for attribute and capacity names:
// <C identifier> or <DNS subdomain>/<C identifier>, identifier ≤ 32, domain ≤ 63.
func validateQualifiedName(name string) error {
	domain, id, found := strings.Cut(name, "/")
	if !found {
		id, domain = domain, ""
	}
	if found {
		if len(domain) > resourceapi.DeviceMaxDomainLength {
			return fmt.Errorf("domain longer than %d", resourceapi.DeviceMaxDomainLength)
		}
		if m := validation.IsDNS1123Subdomain(domain); len(m) > 0 {
			return fmt.Errorf("domain: %s", strings.Join(m, "; "))
		}
	}
	if len(id) > resourceapi.DeviceMaxIDLength {
		return fmt.Errorf("identifier longer than %d", resourceapi.DeviceMaxIDLength)
	}
	if m := validation.IsCIdentifier(id); len(m) > 0 {
		return fmt.Errorf("identifier: %s", strings.Join(m, "; "))
	}
	return nil
}

// decodeStrict decodes every document of a file into its typed object, rejecting unknown fields.
func decodeStrict(b []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		var obj any
		switch meta.Kind {
		case "":
			continue
		case "Node":
			obj = &corev1.Node{}
		case "ResourceSlice":
			obj = &resourceapi.ResourceSlice{}
		case "DeviceClass":
			obj = &resourceapi.DeviceClass{}
		case "ResourceClaim":
			obj = &resourceapi.ResourceClaim{}
		case "DeviceTaintRule":
			obj = &resourceapi.DeviceTaintRule{}
		default:
			return fmt.Errorf("document %d: unexpected kind %q", i, meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
	}
}
