package inventory

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/feasibility/identity"
	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
)

func TestTransformKeepsWhatIsRead(t *testing.T) {
	fleet := fleetgen.Synthetic(8)
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}

	t.Run("a slice keeps every device as published (its identities held apart), without managedFields", func(t *testing.T) {
		for _, s := range fleet.Slices {
			in := s.DeepCopy()
			in.ManagedFields = managed
			got, err := transform(in)
			if err != nil {
				t.Fatal(err)
			}
			whole := identity.Whole([]*resourceapi.ResourceSlice{got.(*resourceapi.ResourceSlice)})[0]
			if diff := cmp.Diff(s, whole); diff != "" {
				t.Errorf("slice %s (-want,+got):\n%s", s.Name, diff)
			}
		}
	})

	t.Run("a node keeps its labels, taints, schedulability, capacity and allocatable", func(t *testing.T) {
		for _, n := range fleet.Nodes {
			in := n.DeepCopy()
			in.ManagedFields = managed
			in.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "0"}
			in.Spec.Unschedulable = true
			in.Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
			in.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 1 << 20}}
			in.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
			in.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.37.2"}
			in.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: n.Name}}
			want := &corev1.Node{
				TypeMeta: n.TypeMeta,
				ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Generation: n.Generation,
					CreationTimestamp: n.CreationTimestamp, Labels: n.Labels},
				Spec:   corev1.NodeSpec{Unschedulable: true, Taints: in.Spec.Taints},
				Status: corev1.NodeStatus{Capacity: n.Status.Capacity, Allocatable: n.Status.Allocatable},
			}
			got, err := transform(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("node %s (-want,+got):\n%s", n.Name, diff)
			}
		}
	})

	t.Run("other objects lose their managedFields only", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "research", Labels: map[string]string{api.LabelMode: "enforce"},
			Annotations: map[string]string{"a": "b"}, ManagedFields: managed}}
		want := ns.DeepCopy()
		want.ManagedFields = nil
		got, err := transform(ns)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want,+got):\n%s", diff)
		}
	})
}
