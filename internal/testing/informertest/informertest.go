// Package informertest runs the informer-backed inventory on a fake
// clientset, for the tests of the packages that read it (the inventory,
// the leader's controllers, the live report).
package informertest

import (
	"context"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/inventory"
)

// Start runs an Inventory on a fake clientset holding objs, rebuilding its
// snapshot at every change, until the test ends; it returns once the
// caches have synced.
func Start(t *testing.T, objs ...runtime.Object) (*inventory.Inventory, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	inv := inventory.New(client, inventory.Options{MinRebuildInterval: -1})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- inv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("inventory: %v", err)
		}
	})
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return inv.Synced(), nil
	}); err != nil {
		t.Fatalf("inventory not synced: %v", err)
	}
	return inv, client
}

// ExampleFleet loads the shipped fleet examples/fleets/<name>.
func ExampleFleet(t testing.TB, name string) *feasibility.Inventory {
	t.Helper()
	_, file, _, _ := goruntime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	inv, err := feasibility.LoadInventory(filepath.Join(root, "examples", "fleets", name))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// Objects are the fleet's nodes, slices and classes as API objects, for a
// fake clientset.
func Objects(fleet *feasibility.Inventory) []runtime.Object {
	var out []runtime.Object
	for _, n := range fleet.Nodes {
		out = append(out, n)
	}
	for _, s := range fleet.Slices {
		out = append(out, s)
	}
	for _, c := range fleet.Classes {
		out = append(out, c)
	}
	return out
}
