package inventory

// FleetGeneration is the generation of the fleet (not of its allocations
// or pods), for the tests of the external package.
func (inv *Inventory) FleetGeneration() uint64 { return inv.fleetGen.Load() }

// SetCatchUpNodes sets how many nodes whose pods changed during a
// background build it leaves to the Snapshot that takes it, until the
// test ends.
func SetCatchUpNodes(t interface{ Cleanup(func()) }, n int) {
	old := catchUpNodes
	catchUpNodes = n
	t.Cleanup(func() { catchUpNodes = old })
}
