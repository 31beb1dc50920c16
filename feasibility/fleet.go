package feasibility

// Fleet is an inventory opened for checks: its snapshot and a checker. It is
// how the CLI's translate, explain and audit check manifests against a fleet.
type Fleet struct {
	Inventory *Inventory
	Snapshot  *Snapshot
	Checker   *Checker
}

// OpenFleet loads the inventory of paths (see [LoadInventory]) and opens it
// (see [NewFleet]). An error means the files or the inventory are invalid.
func OpenFleet(opts Options, paths ...string) (*Fleet, error) {
	inv, err := LoadInventory(paths...)
	if err != nil {
		return nil, err
	}
	return NewFleet(inv, opts)
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
