package feasibility

import (
	"strings"
	"testing"
)

func TestOpenFleet(t *testing.T) {
	tests := map[string]struct {
		paths   []string
		wantErr string
	}{
		"a fleet directory opens with its snapshot and a checker": {paths: []string{"../examples/fleets/l4-inference"}},
		"a missing path fails with LoadInventory's error":         {paths: []string{"testdata/no-such-fleet"}, wantErr: "load inventory: "},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fleet, err := OpenFleet(Options{}, tc.paths...)
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
		})
	}
}
