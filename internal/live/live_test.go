package live

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
