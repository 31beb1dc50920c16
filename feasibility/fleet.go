package feasibility

// Fleet is an inventory opened for checks: its snapshot and a checker. It is
// how the CLI's translate, explain and audit check manifests against a fleet
// (internal/offline opens it).
type Fleet struct {
	Inventory *Inventory
	Snapshot  *Snapshot
	Checker   *Checker
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
