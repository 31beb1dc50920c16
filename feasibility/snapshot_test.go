package feasibility

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestNewSnapshotListsAndDevices checks what NewSnapshot reads from every
// device as it indexes them: whether the fleet publishes list-type
// attributes (the allocator then runs with DRAListTypeAttributes), and how
// many distinct devices some node sees.
func TestNewSnapshotListsAndDevices(t *testing.T) {
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "a"}}}
	}
	device := func(name string, list bool) resourceapi.Device {
		d := resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: ptr.To("x")}}}
		if list {
			d.Attributes["numaNode"] = resourceapi.DeviceAttribute{IntValues: []int64{0, 1}}
		}
		return d
	}
	slice := func(name, pool string, generation int64, devices ...resourceapi.Device) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.ResourceSliceSpec{
			Driver: "gpu.example.com", Pool: resourceapi.ResourcePool{Name: pool, Generation: generation, ResourceSliceCount: 1},
			NodeName: ptr.To(pool), Devices: devices}}
	}
	bySelector := func(s *resourceapi.ResourceSlice) *resourceapi.ResourceSlice {
		s.Spec.NodeName = nil
		s.Spec.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}
		return s
	}
	nodes := []*corev1.Node{node("n1"), node("n2")}
	cases := map[string]struct {
		slices      []*resourceapi.ResourceSlice
		wantLists   bool
		wantDevices int
	}{
		"a fleet of scalar attributes runs without list-type attributes": {
			slices:      []*resourceapi.ResourceSlice{slice("s1", "n1", 1, device("gpu-0", false)), slice("s2", "n2", 1, device("gpu-0", false))},
			wantDevices: 2,
		},
		"a list on one device of a node's slice turns list-type attributes on": {
			slices:      []*resourceapi.ResourceSlice{slice("s1", "n1", 1, device("gpu-0", false)), slice("s2", "n2", 1, device("gpu-0", false), device("gpu-1", true))},
			wantLists:   true,
			wantDevices: 3,
		},
		"a list on a slice of an older generation counts too": {
			slices:      []*resourceapi.ResourceSlice{slice("old", "n1", 1, device("gpu-0", true)), slice("new", "n1", 2, device("gpu-0", false))},
			wantLists:   true,
			wantDevices: 1,
		},
		"a list on a slice that selects nodes by label turns them on": {
			slices:      []*resourceapi.ResourceSlice{bySelector(slice("s1", "shared", 1, device("gpu-0", true)))},
			wantLists:   true,
			wantDevices: 1,
		},
		"a device two slices of one pool publish is one device": {
			slices: []*resourceapi.ResourceSlice{slice("s1", "n1", 1, device("gpu-0", false)), slice("s2", "n1", 1, device("gpu-0", false), device("gpu-1", false))},
			// Two slices of the pool n1 at generation 1, gpu-0 in both.
			wantDevices: 2,
		},
		"a device a slice names twice is one device": {
			slices:      []*resourceapi.ResourceSlice{slice("s1", "n1", 1, device("gpu-0", false), device("gpu-0", false))},
			wantDevices: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := NewSnapshot(&Inventory{Nodes: nodes, Slices: tc.slices}, 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Features().ListTypeAttributes; got != tc.wantLists {
				t.Errorf("ListTypeAttributes = %v, want %v", got, tc.wantLists)
			}
			if s.devices != tc.wantDevices {
				t.Errorf("devices = %d, want %d", s.devices, tc.wantDevices)
			}
		})
	}
}
