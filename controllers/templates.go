package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/metrics"
	"github.com/claimbridge/claimbridge/translate"
)

// TemplateController keeps claimbridge's ResourceClaimTemplates in step with
// the pods that use them. It runs on the leader only:
//   - a template no pod has referenced for Grace is deleted (with UID and
//     resourceVersion preconditions, so a template recreated meanwhile
//     survives);
//   - a template that a pending pod refers to but that is missing (deleted
//     by hand, or by a race with the collector) is recreated from the spec
//     admission remembered or from a copy of the same name in another
//     namespace (names are content hashes).
//
// It never touches templates without the claimbridge managed-by label.
type TemplateController struct {
	Client kubernetes.Interface
	// Inventory's pod informer tells which templates pods refer to, and
	// which pending pods miss theirs (no watch of pods of its own).
	Inventory *inventory.Inventory
	Recent    *inventory.RecentTemplates
	// Grace an unused template is kept. Default 1h.
	Grace time.Duration
	// Interval between passes. Default Grace/4, between 5s and 1m.
	Interval time.Duration
	Recorder record.EventRecorder
	Metrics  *metrics.Metrics
	Now      func() time.Time

	lastUsed map[string]time.Time
}

// NeedLeaderElection: one collector at a time.
func (c *TemplateController) NeedLeaderElection() bool { return true }

func (c *TemplateController) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Start runs the controller until ctx ends.
func (c *TemplateController) Start(ctx context.Context) error {
	if c.Grace <= 0 {
		c.Grace = time.Hour
	}
	if c.Interval <= 0 {
		c.Interval = min(max(c.Grace/4, 5*time.Second), time.Minute)
	}
	c.lastUsed = map[string]time.Time{}
	wait := time.NewTicker(200 * time.Millisecond)
	defer wait.Stop()
	for !c.Inventory.Synced() {
		select {
		case <-ctx.Done():
			return nil
		case <-wait.C:
		}
	}
	t := time.NewTicker(c.Interval)
	defer t.Stop()
	for {
		c.Reconcile(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Reconcile runs one pass.
func (c *TemplateController) Reconcile(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("templates")
	now := c.now()
	refs := map[string]bool{}
	var pending []*corev1.Pod
	for _, pod := range c.Inventory.Pods("") {
		name := pod.Annotations[api.AnnotationTemplate]
		if name == "" {
			continue
		}
		refs[pod.Namespace+"/"+name] = true
		if pod.Status.Phase == corev1.PodPending {
			pending = append(pending, pod)
		}
	}
	existing := map[string]*resourceapi.ResourceClaimTemplate{}
	byName := map[string]*resourceapi.ResourceClaimTemplate{}
	for _, t := range c.Inventory.Templates() {
		key := t.Namespace + "/" + t.Name
		existing[key] = t
		byName[t.Name] = t
		if refs[key] {
			c.lastUsed[key] = now
			continue
		}
		last, ok := c.lastUsed[key]
		if !ok {
			// First sight: the grace period runs from now or from creation,
			// whichever is later, so a restart never collects early.
			last = now
			if t.CreationTimestamp.After(now) {
				last = t.CreationTimestamp.Time
			}
			c.lastUsed[key] = last
		}
		if now.Sub(last) < c.Grace {
			continue
		}
		err := c.Client.ResourceV1().ResourceClaimTemplates(t.Namespace).Delete(ctx, t.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &t.UID, ResourceVersion: &t.ResourceVersion},
		})
		switch {
		case err == nil:
			logger.Info("deleted unused template", "namespace", t.Namespace, "name", t.Name, "unusedFor", now.Sub(last).Round(time.Second).String())
			if c.Metrics != nil {
				c.Metrics.TemplatesDeleted.Inc()
			}
			delete(c.lastUsed, key)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			delete(c.lastUsed, key)
		default:
			logger.Error(err, "delete unused template", "namespace", t.Namespace, "name", t.Name)
		}
	}
	for key := range c.lastUsed {
		if _, ok := existing[key]; !ok {
			delete(c.lastUsed, key)
		}
	}
	for _, pod := range pending {
		name := pod.Annotations[api.AnnotationTemplate]
		if existing[pod.Namespace+"/"+name] != nil || claimCreated(pod) {
			continue
		}
		if err := c.recreate(ctx, pod, name, byName); err != nil {
			logger.Error(err, "recreate missing template", "namespace", pod.Namespace, "name", name, "pod", pod.Name)
			if c.Recorder != nil {
				c.Recorder.Eventf(pod, corev1.EventTypeWarning, "TemplateMissing", "ResourceClaimTemplate %s is missing and cannot be recreated: %v", name, err)
			}
			continue
		}
		existing[pod.Namespace+"/"+name] = &resourceapi.ResourceClaimTemplate{}
		logger.Info("recreated missing template", "namespace", pod.Namespace, "name", name, "pod", pod.Name)
	}
}

// claimCreated: the pod's claim exists already, so its template is no longer needed.
func claimCreated(pod *corev1.Pod) bool {
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == api.ClaimName && s.ResourceClaimName != nil {
			return true
		}
	}
	return false
}

func (c *TemplateController) recreate(ctx context.Context, pod *corev1.Pod, name string, byName map[string]*resourceapi.ResourceClaimTemplate) error {
	var spec resourceapi.ResourceClaimTemplateSpec
	if c.Recent != nil {
		if s, ok := c.Recent.Spec(name); ok {
			spec = s
		}
	}
	if spec.Spec.Devices.Requests == nil {
		other, ok := byName[name]
		if !ok {
			return fmt.Errorf("no copy of %s is known", name)
		}
		spec = *other.Spec.DeepCopy()
	}
	if got := translate.TemplateName(&spec.Spec); got != name {
		return fmt.Errorf("the known spec hashes to %s, not %s", got, name)
	}
	t := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pod.Namespace, Labels: map[string]string{api.LabelManagedBy: api.ManagedByValue}},
		Spec:       spec,
	}
	_, err := c.Client.ResourceV1().ResourceClaimTemplates(pod.Namespace).Create(ctx, t, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err == nil && c.Metrics != nil {
		c.Metrics.TemplatesRecreated.Inc()
	}
	return nil
}
