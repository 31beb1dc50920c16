package podfacts

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Refused is what kube-apiserver says when it refuses to create the pod for
// the resources of its containers and init containers: the checks of
// extended resources and hugepages that its validation makes, in its own
// words and field paths (k8s.io/kubernetes v1.37.2
// pkg/apis/core/validation/validation.go: validateResourceRequirements,
// ValidateContainerResourceName, ValidateResourceQuantityValue), nil when
// it creates it. Those resources cannot be overcommitted
// (helper.IsOvercommitAllowed): a request needs a limit, and equal to it; an
// extended resource's name must make a qualified "requests.<name>"
// (helper.IsExtendedResourceName) and its quantity must be a whole number;
// no quantity is negative; hugepages need cpu or memory beside them. The
// pod as read from a manifest is not defaulted; kube-apiserver defaults a
// missing request to its limit before it validates, so only a request the
// manifest gives is compared.
func Refused(pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	for i := range pod.Spec.InitContainers {
		errs = append(errs, refusedResources(pod.Spec.InitContainers[i].Resources, spec.Child("initContainers").Index(i).Child("resources"))...)
	}
	for i := range pod.Spec.Containers {
		errs = append(errs, refusedResources(pod.Spec.Containers[i].Resources, spec.Child("containers").Index(i).Child("resources"))...)
	}
	return errs
}

// RefusedMessage is kube-apiserver's answer to creating the pod: `Pod
// "name" is invalid: <errors>`, as kubectl prints it; "" when it creates
// it.
func RefusedMessage(pod *corev1.Pod) string {
	errs := Refused(pod)
	if len(errs) == 0 {
		return ""
	}
	name := pod.Name
	if name == "" {
		name = pod.GenerateName
	}
	return fmt.Sprintf("Pod %q is invalid: %s", name, errs.ToAggregate().Error())
}

// refusedResources checks one container's resources, limits first, then
// requests, each in name order (the apiserver walks maps; the order here is
// fixed).
func refusedResources(r corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := path.Child("limits"), path.Child("requests")
	cpuOrMemory, hugePages := false, false
	for _, n := range slices.Sorted(maps.Keys(r.Limits)) {
		errs = append(errs, refusedQuantity(n, r.Limits[n], limPath.Key(string(n)))...)
		hugePages = hugePages || isHugePages(n)
		cpuOrMemory = cpuOrMemory || n == corev1.ResourceCPU || n == corev1.ResourceMemory
	}
	for _, n := range slices.Sorted(maps.Keys(r.Requests)) {
		q := r.Requests[n]
		errs = append(errs, refusedQuantity(n, q, reqPath.Key(string(n)))...)
		hugePages = hugePages || isHugePages(n)
		cpuOrMemory = cpuOrMemory || n == corev1.ResourceCPU || n == corev1.ResourceMemory
		lim, ok := r.Limits[n]
		switch {
		case ok && q.Cmp(lim) != 0 && !overcommitAllowed(n):
			// "For non overcommitable resources, not only requests can't
			// exceed limits, they also can't be lower, i.e. must be equal."
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", n, lim.String())))
		case ok && q.Cmp(lim) > 0:
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", n, lim.String())))
		case !ok && !overcommitAllowed(n):
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(path, "HugePages require cpu or memory"))
	}
	return errs
}

// refusedQuantity: the name of an extended resource follows the standard,
// a quantity is not negative, and an extended resource's is whole.
func refusedQuantity(n corev1.ResourceName, q resource.Quantity, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	native := !strings.Contains(string(n), "/") || strings.Contains(string(n), "kubernetes.io/")
	extended := !native && !strings.HasPrefix(string(n), "requests.") && len(content.IsLabelKey("requests."+string(n))) == 0
	if !native && !extended {
		errs = append(errs, field.Invalid(path, n, "doesn't follow extended resource name standard"))
	}
	if q.Sign() < 0 {
		errs = append(errs, field.Invalid(path, q.String(), "must be greater than or equal to 0"))
	}
	if extended && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(path, q, "must be an integer"))
	}
	return errs
}

// overcommitAllowed is the API's helper.IsOvercommitAllowed: a native
// resource (no "/", or in the kubernetes.io domain) that is not hugepages.
func overcommitAllowed(n corev1.ResourceName) bool {
	native := !strings.Contains(string(n), "/") || strings.Contains(string(n), "kubernetes.io/")
	return native && !isHugePages(n)
}

// isHugePages: hugepages-<size>.
func isHugePages(n corev1.ResourceName) bool {
	return strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix)
}
