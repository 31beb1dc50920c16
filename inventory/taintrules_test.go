package inventory

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
)

// TestTaintRulesAreReadOnlyWhereV1ServesThem: a cluster before 1.37 serves resource.k8s.io/v1
// without DeviceTaintRules, and an informer of them would never sync.
func TestTaintRulesAreReadOnlyWhereV1ServesThem(t *testing.T) {
	for name, tc := range map[string]struct {
		resources []*metav1.APIResourceList
		want      bool
	}{
		"1.37: v1 serves them": {[]*metav1.APIResourceList{{GroupVersion: "resource.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "resourceslices"}, {Name: "devicetaintrules"}}}}, true},
		"1.36: v1 without them, beta with them": {[]*metav1.APIResourceList{
			{GroupVersion: "resource.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "resourceslices"}, {Name: "deviceclasses"}}},
			{GroupVersion: "resource.k8s.io/v1beta2", APIResources: []metav1.APIResource{{Name: "devicetaintrules"}}},
		}, false},
		"no resource.k8s.io/v1 at all": {nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientset()
			c.Discovery().(*fakediscovery.FakeDiscovery).Resources = tc.resources
			got, err := taintRulesServed(c)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("taintRulesServed = %v, want %v", got, tc.want)
			}
		})
	}
}
