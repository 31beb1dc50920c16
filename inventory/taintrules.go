package inventory

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
)

// taintRulesServed says whether kube-apiserver serves DeviceTaintRules in resource.k8s.io/v1.
// They came to v1 in Kubernetes 1.37; a 1.34–1.36 cluster serves them in alpha or beta
// versions at most, and an informer of v1 there would never sync: the inventory (and
// readiness) would wait forever. Without them slices are read as their drivers publish them,
// as kube-scheduler of those releases reads them without the alpha gate.
func taintRulesServed(client kubernetes.Interface) (bool, error) {
	list, err := client.Discovery().ServerResourcesForGroupVersion(resourceapi.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", resourceapi.SchemeGroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == "devicetaintrules" {
			return true, nil
		}
	}
	return false, nil
}
