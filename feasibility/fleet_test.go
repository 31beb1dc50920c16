package feasibility

import (
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOpenFleet(t *testing.T) {
	extra := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "extra.example.com"}}
	tests := map[string]struct {
		paths       []string
		classes     []*resourceapi.DeviceClass
		wantClasses []string
		wantErr     string
	}{
		"a fleet directory opens with its snapshot and a checker": {paths: []string{"../examples/fleets/l4-inference"}, wantClasses: []string{"gpu.nvidia.com", "mig.nvidia.com"}},
		"the input's own classes join the fleet's":                {paths: []string{"../examples/fleets/l4-inference"}, classes: []*resourceapi.DeviceClass{extra}, wantClasses: []string{"extra.example.com", "gpu.nvidia.com", "mig.nvidia.com"}},
		"a missing path fails with LoadInventory's error":         {paths: []string{"testdata/no-such-fleet"}, wantErr: "load inventory: "},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fleet, err := OpenFleet(Options{}, tc.classes, tc.paths...)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("OpenFleet: got error %v, want one starting with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(fleet.Inventory.Nodes) == 0 || fleet.Snapshot == nil || fleet.Checker == nil {
				t.Fatalf("OpenFleet: got %d nodes, snapshot %v, checker %v; want nodes, a snapshot and a checker", len(fleet.Inventory.Nodes), fleet.Snapshot != nil, fleet.Checker != nil)
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
