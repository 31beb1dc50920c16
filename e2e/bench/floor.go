package main

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The floor of enforce: what a translated pod costs kube-apiserver, etcd
// and kube-controller-manager however it came to refer to its template.
// Its namespace has no mode label (kube-apiserver never calls the
// webhook); its pods are the benchmark's legacy pod written by hand the
// way the translation writes it (the same claim entries, container claims
// and node selector, no legacy resource, none of claimbridge's
// annotations), and refer to a copy of the template the translation
// produced, created before the batches. The difference between enforce
// and this namespace is what claimbridge adds: the webhook call, its
// patch, the annotations it writes, and its own CPU.

// setUpFloor copies the template a translated pod of enforce refers to
// into the floor's namespace, as a user would write it (its spec, no
// labels), and has the floor's pods written like translated.
func setUpFloor(ctx context.Context, client kubernetes.Interface, floor *creation, translated *corev1.Pod) (string, error) {
	if len(translated.Spec.ResourceClaims) != 1 || translated.Spec.ResourceClaims[0].ResourceClaimTemplateName == nil {
		return "", fmt.Errorf("the translated pod %s/%s refers to %d claims, not one template: the floor needs one", translated.Namespace, translated.Name, len(translated.Spec.ResourceClaims))
	}
	name := *translated.Spec.ResourceClaims[0].ResourceClaimTemplateName
	tmpl, err := client.ResourceV1().ResourceClaimTemplates(translated.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read the translation's template: %w", err)
	}
	own := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: floor.ns}, Spec: tmpl.Spec}
	if _, err := client.ResourceV1().ResourceClaimTemplates(floor.ns).Create(ctx, own, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create the floor's template: %w", err)
	}
	floor.pod = func(name, ns string) *corev1.Pod { return handWritten(name, ns, translated) }
	return name, nil
}

// handWritten is the benchmark's legacy pod with what the translation
// changed in translated's spec written by hand: its claims, each
// container's resources, node selector, affinity and tolerations. Its
// annotations are its own (none).
func handWritten(name, ns string, translated *corev1.Pod) *corev1.Pod {
	p := legacyPod(name, ns)
	p.Spec.ResourceClaims = translated.Spec.ResourceClaims
	p.Spec.NodeSelector = translated.Spec.NodeSelector
	p.Spec.Affinity = translated.Spec.Affinity
	p.Spec.Tolerations = translated.Spec.Tolerations
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Resources = *translated.Spec.Containers[i].Resources.DeepCopy()
	}
	return p
}

// checkFloor fails the run when the floor's pods or enforce's do not mean
// what they measure: every pod of the floor's batches refers to the
// template, carries no claimbridge annotation and got its ResourceClaim
// during its batch; every pod of enforce's batches was translated to the
// same template and got its claim too.
func checkFloor(r *apiserverResult, template string, floorPods, enforcePods []corev1.Pod) error {
	for _, c := range []struct {
		what string
		cr   *creation
		pods []corev1.Pod
	}{{"floor", &r.floor, floorPods}, {"enforce", &r.enforce, enforcePods}} {
		created := len(c.cr.latency.latencies)
		refer := 0
		for _, p := range c.pods {
			if p.Name[0] != 'b' {
				continue
			}
			if len(p.Spec.ResourceClaims) == 1 && ptrIs(p.Spec.ResourceClaims[0].ResourceClaimTemplateName, template) {
				refer++
			}
			if c.cr == &r.floor {
				for k := range p.Annotations {
					if strings.HasPrefix(k, "claimbridge.io/") {
						return fmt.Errorf("floor: pod %s/%s carries %s: the webhook changed a pod of the namespace it never sees", p.Namespace, p.Name, k)
					}
				}
			}
		}
		if refer != created {
			return fmt.Errorf("%s: %d of the %d pods of the batches refer to template %s: the floor is enforce's only when both do", c.what, refer, created, template)
		}
		if c.cr.claims != created {
			return fmt.Errorf("%s: kube-controller-manager created %d ResourceClaims during the batches of %d pods: a batch's claims are its cost", c.what, c.cr.claims, created)
		}
	}
	return nil
}

func ptrIs(p *string, s string) bool { return p != nil && *p == s }
