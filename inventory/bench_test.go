package inventory

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/feasibility/identity"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
)

// BenchmarkDeviceHeap measures the heap the devices of 250 DGX H100 nodes
// (8 GPUs and 8 RDMA NICs each, as e2e/bench publishes them) hold as the
// client decodes them and as the informer keeps them (transform), per
// device: B/device. One iteration decodes the slices from their protobuf
// encoding and keeps them until the heap is read.
func BenchmarkDeviceHeap(b *testing.B) {
	const nodes, perNode = 250, 16
	g := fleetgen.Synthetic(4 * nodes) // every fourth node is a DGX H100
	dgx := map[string]bool{}
	for _, n := range g.Nodes {
		if n.Labels[fleetgen.SyntheticShapeLabel] == "dgx-h100" {
			dgx[n.Name] = true
		}
	}
	var encoded [][]byte
	devices := 0
	for _, s := range g.Slices {
		if s.Spec.NodeName == nil || !dgx[*s.Spec.NodeName] || s.Spec.Driver == fleetgen.DriverCPU {
			continue
		}
		p, err := s.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		encoded = append(encoded, p)
		devices += len(s.Spec.Devices)
	}
	// What the measurement means: the fleet's devices as the memory
	// part of e2e/bench publishes them.
	if len(dgx) != nodes || devices != nodes*perNode {
		b.Fatalf("%d DGX nodes with %d devices, want %d with %d", len(dgx), devices, nodes, nodes*perNode)
	}
	g = fleetgen.Fleet{}
	for name, keep := range map[string]func(*resourceapi.ResourceSlice) any{
		"decoded":   func(s *resourceapi.ResourceSlice) any { return s },
		"compacted": func(s *resourceapi.ResourceSlice) any { o, _ := transform(s); return o },
	} {
		b.Run(name, func(b *testing.B) {
			var perDevice float64
			for b.Loop() {
				before := liveHeap()
				kept := make([]any, 0, len(encoded))
				for _, p := range encoded {
					var s resourceapi.ResourceSlice
					if err := s.Unmarshal(p); err != nil {
						b.Fatal(err)
					}
					kept = append(kept, keep(&s))
				}
				perDevice = float64(liveHeap()-before) / float64(devices)
				runtime.KeepAlive(kept)
			}
			b.ReportMetric(perDevice, "B/device")
		})
	}
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkSnapshotOfCompacted: feasibility's snapshot build and its
// first check (its node classes, allocators and the classes' CEL) on the
// slices as the informer keeps them (CompactSlice: identities held apart,
// attribute maps shared), what serve builds from; feasibility's own
// BenchmarkSnapshot builds from slices as decoded.
func BenchmarkSnapshotOfCompacted(b *testing.B) {
	pod := builders.MakePod("p", "ns").Obj()
	claims := []*resourceapi.ResourceClaimSpec{exactly(fleetgen.ClassGPU, 8, `device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"`)}
	for _, n := range []int{1000, 5000} {
		fleet := fleetgen.Synthetic(n)
		slices := make([]*resourceapi.ResourceSlice, len(fleet.Slices))
		for i, sl := range fleet.Slices {
			slices[i] = sl.DeepCopy()
			CompactSlice(slices[i])
		}
		inv := &feasibility.Inventory{Nodes: fleet.Nodes, Slices: slices, Classes: fleet.Classes, Claims: fleet.Claims, PodsListed: true}
		// What it measures: the slices are held split.
		if identity.Of(slices[0]) == nil {
			b.Fatal("the compacted slices hold no identity apart")
		}
		b.Run(fmt.Sprintf("nodes=%d/build", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := feasibility.NewSnapshot(inv, 1, feasibility.DefaultFeatures()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("nodes=%d/build-and-first-check", n), func(b *testing.B) {
			c := feasibility.NewChecker(feasibility.Options{Timeout: 10 * time.Second})
			var gen uint64
			for b.Loop() {
				gen++
				snap, err := feasibility.NewSnapshot(inv, gen, feasibility.DefaultFeatures())
				if err != nil {
					b.Fatal(err)
				}
				if v := c.Check(b.Context(), snap, pod, claims); v.Kind != feasibility.FitsNow {
					b.Fatalf("want FitsNow, got %s %q", v.Kind, v.Reasons)
				}
			}
		})
	}
}
