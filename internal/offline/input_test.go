package offline

import (
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/internal/manifest"
)

func TestOpen(t *testing.T) {
	shipped := manifest.Document{Object: &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "extra.example.com"}}}
	tests := map[string]struct {
		paths       []string
		docs        []manifest.Document
		wantClasses []string
		wantErr     string
	}{
		"a fleet directory opens with its snapshot and a checker": {paths: []string{"../../examples/fleets/l4-inference"}, wantClasses: []string{"gpu.nvidia.com", "mig.nvidia.com"}},
		"the input's own classes join the fleet's":                {paths: []string{"../../examples/fleets/l4-inference"}, docs: []manifest.Document{shipped}, wantClasses: []string{"extra.example.com", "gpu.nvidia.com", "mig.nvidia.com"}},
		"a missing path fails with the inventory's error":         {paths: []string{"testdata/no-such-fleet"}, wantErr: "fleet: load inventory: "},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in, err := Open(Sources{Docs: tc.docs, FleetPaths: tc.paths})
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("Open: got error %v, want one starting with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fleet, err := in.Check()
			if err != nil {
				t.Fatal(err)
			}
			if len(fleet.Inventory.Nodes) == 0 || fleet.Snapshot == nil || fleet.Checker == nil {
				t.Fatalf("Check: got %d nodes, snapshot %v, checker %v; want nodes, a snapshot and a checker", len(fleet.Inventory.Nodes), fleet.Snapshot != nil, fleet.Checker != nil)
			}
			var classes []string
			for _, c := range fleet.Inventory.Classes {
				classes = append(classes, c.Name)
			}
			slices.Sort(classes)
			if !slices.Equal(classes, tc.wantClasses) {
				t.Errorf("classes %v, want %v", classes, tc.wantClasses)
			}
		})
	}
}

func TestOpenWithoutAFleetKeepsTheShippedClasses(t *testing.T) {
	shipped := manifest.Document{Object: &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "extra.example.com"}}}
	in, err := Open(Sources{Docs: []manifest.Document{shipped}})
	if err != nil {
		t.Fatal(err)
	}
	if fleet, err := in.Check(); fleet != nil || err != nil {
		t.Fatalf("Check without a fleet: %v, %v; want nothing", fleet, err)
	}
	if len(in.Classes) != 1 || in.Options(nil, nil).Classes[0].Name != "extra.example.com" {
		t.Errorf("classes %v, want the shipped one for deference", in.Classes)
	}
}
