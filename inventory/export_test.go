package inventory

// FleetGeneration is the generation of the fleet (not of its allocations
// or pods), for the tests of the external package.
func (inv *Inventory) FleetGeneration() uint64 { return inv.fleetGen.Load() }
