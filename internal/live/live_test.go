package live

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestAsSubmittedClearsOnlyTheNodeNameABindingSet(t *testing.T) {
	creator := func(fields string) []metav1.ManagedFieldsEntry {
		return []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(fields)}}
	}
	cases := map[string]struct {
		managed  []metav1.ManagedFieldsEntry
		wantNode string
	}{
		// As kube-apiserver 1.37 records them (read in the e2e cluster).
		"bound by the scheduler: no entry owns nodeName": {managed: creator(`{"f:spec":{"f:containers":{},"f:schedulerName":{}}}`), wantNode: ""},
		"bound at creation: the creator owns nodeName":   {managed: creator(`{"f:spec":{"f:containers":{},"f:nodeName":{}}}`), wantNode: "n1"},
		"no managedFields: cannot tell, left as it is":   {managed: nil, wantNode: "n1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ManagedFields: tc.managed}, Spec: corev1.PodSpec{NodeName: "n1"}}
			asSubmitted(pod)
			if pod.Spec.NodeName != tc.wantNode {
				t.Errorf("nodeName %q, want %q", pod.Spec.NodeName, tc.wantNode)
			}
		})
	}
}

// TestInventoryOfAClusterBefore137: resource.k8s.io/v1 serves no DeviceTaintRules before
// Kubernetes 1.37; the inventory is read without them instead of failing.
func TestInventoryOfAClusterBefore137(t *testing.T) {
	c := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-0"}})
	c.PrependReactor("list", "devicetaintrules", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "devicetaintrules"}, "")
	})
	inv, err := Inventory(t.Context(), c)
	if err != nil {
		t.Fatalf("inventory of a 1.36 cluster: %v", err)
	}
	if len(inv.Nodes) != 1 || len(inv.TaintRules) != 0 {
		t.Errorf("inventory: %d nodes, %d taint rules; want the node and none", len(inv.Nodes), len(inv.TaintRules))
	}
	c.PrependReactor("list", "devicetaintrules", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "resource.k8s.io", Resource: "devicetaintrules"}, "", nil)
	})
	if _, err := Inventory(t.Context(), c); err == nil {
		t.Errorf("a forbidden list of DeviceTaintRules is no error; it must not pass for a cluster without them")
	}
}
