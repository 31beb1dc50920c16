package feasibility

import (
	resourceapi "k8s.io/api/resource/v1"
)

// Fleet is an inventory opened for checks: its snapshot and a checker. It is
// how the CLI's translate, explain and audit check manifests against a fleet.
type Fleet struct {
	Inventory *Inventory
	Snapshot  *Snapshot
	Checker   *Checker
}

// OpenFleet loads the inventory of paths (see [LoadInventory]), adds classes
// to it (see [Inventory.WithClasses]: the DeviceClasses of the input's own
// files, say) and opens it (see [NewFleet]). It is how the CLI reads a
// fleet. An error means the files or the inventory are invalid.
func OpenFleet(opts Options, classes []*resourceapi.DeviceClass, paths ...string) (*Fleet, error) {
	inv, err := LoadInventory(paths...)
	if err != nil {
		return nil, err
	}
	return NewFleet(inv.WithClasses(classes...), opts)
}

// NewFleet snapshots inv once (generation 1, [DefaultFeatures]) and gives it a
// [Checker] configured by opts. An error means the inventory is invalid.
func NewFleet(inv *Inventory, opts Options) (*Fleet, error) {
	snap, err := NewSnapshot(inv, 1, DefaultFeatures())
	if err != nil {
		return nil, err
	}
	return &Fleet{Inventory: inv, Snapshot: snap, Checker: NewChecker(opts)}, nil
}
