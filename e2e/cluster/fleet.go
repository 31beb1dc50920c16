package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/claimbridge/claimbridge/feasibility"
)

// Inventory is the content of a fleet directory: standard Kubernetes objects describing nodes
// and the devices a DRA driver publishes for them.
type Inventory struct {
	Nodes            []*corev1.Node
	DeviceClasses    []*resourceapi.DeviceClass
	ResourceSlices   []*resourceapi.ResourceSlice
	ResourceClaims   []*resourceapi.ResourceClaim
	DeviceTaintRules []*resourceapi.DeviceTaintRule
}

// ReadFleet reads every *.yaml, *.yml and *.json file in dir (not recursively, in name
// order) with the CLI's own reader (feasibility.LoadInventory). Each file holds documents of
// kind Node, DeviceClass, ResourceSlice, ResourceClaim or DeviceTaintRule
// (resource.k8s.io/v1); any other kind, and a pod, is an error, so a fleet never silently
// loses part of its inventory.
func ReadFleet(dir string) (*Inventory, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("read fleet: %w", err)
	}
	read, err := feasibility.LoadInventory(dir)
	if err != nil {
		return nil, fmt.Errorf("read fleet: %w", err)
	}
	if len(read.Ignored) > 0 || len(read.Pods) > 0 {
		return nil, fmt.Errorf("read fleet %s: unsupported objects (a fleet holds nodes and DRA objects only): %s", dir,
			strings.Join(append(slices.Clone(read.Ignored), podNames(read.Pods)...), "; "))
	}
	return &Inventory{Nodes: read.Nodes, DeviceClasses: read.Classes, ResourceSlices: read.Slices,
		ResourceClaims: read.Claims, DeviceTaintRules: read.TaintRules}, nil
}

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, "v1 Pod "+p.Namespace+"/"+p.Name)
	}
	return out
}

// WithPrefix returns a copy in which every node, slice, claim and taint rule name gets
// prefix + "-", and so does every reference to them: slices' spec.nodeName, node selectors
// on metadata.name and the kubernetes.io/hostname label, pool names (a pool is usually named
// after its node), claims' allocation results and taint rules' pool selectors. DeviceClasses
// are cluster-wide vocabulary and keep their names. An empty prefix returns a plain copy.
func (inv *Inventory) WithPrefix(prefix string) *Inventory {
	out := &Inventory{}
	rename := func(s string) string {
		if prefix == "" || s == "" {
			return s
		}
		return prefix + "-" + s
	}
	nodes := map[string]string{}
	for _, n := range inv.Nodes {
		n = n.DeepCopy()
		nodes[n.Name] = rename(n.Name)
		n.Name = rename(n.Name)
		if h, ok := n.Labels[corev1.LabelHostname]; ok && prefix != "" {
			n.Labels[corev1.LabelHostname] = rename(h)
		}
		out.Nodes = append(out.Nodes, n)
	}
	renameNode := func(s string) string {
		if r, ok := nodes[s]; ok {
			return r
		}
		return rename(s)
	}
	for _, dc := range inv.DeviceClasses {
		out.DeviceClasses = append(out.DeviceClasses, dc.DeepCopy())
	}
	for _, s := range inv.ResourceSlices {
		s = s.DeepCopy()
		s.Name = rename(s.Name)
		s.GenerateName = rename(s.GenerateName)
		s.Spec.Pool.Name = rename(s.Spec.Pool.Name)
		if s.Spec.NodeName != nil {
			s.Spec.NodeName = new(renameNode(*s.Spec.NodeName))
		}
		renameNodeSelector(s.Spec.NodeSelector, renameNode)
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			if d.NodeName != nil {
				d.NodeName = new(renameNode(*d.NodeName))
			}
			renameNodeSelector(d.NodeSelector, renameNode)
		}
		out.ResourceSlices = append(out.ResourceSlices, s)
	}
	for _, cl := range inv.ResourceClaims {
		cl = cl.DeepCopy()
		cl.Name = rename(cl.Name)
		if a := cl.Status.Allocation; a != nil {
			for i := range a.Devices.Results {
				a.Devices.Results[i].Pool = rename(a.Devices.Results[i].Pool)
			}
			renameNodeSelector(a.NodeSelector, renameNode)
		}
		out.ResourceClaims = append(out.ResourceClaims, cl)
	}
	for _, r := range inv.DeviceTaintRules {
		r = r.DeepCopy()
		r.Name = rename(r.Name)
		if sel := r.Spec.DeviceSelector; sel != nil && sel.Pool != nil {
			sel.Pool = new(rename(*sel.Pool))
		}
		out.DeviceTaintRules = append(out.DeviceTaintRules, r)
	}
	return out
}

func renameNodeSelector(sel *corev1.NodeSelector, rename func(string) string) {
	if sel == nil {
		return
	}
	for i := range sel.NodeSelectorTerms {
		renameNodeSelectorTerm(&sel.NodeSelectorTerms[i], rename)
	}
}

func renameNodeSelectorTerm(term *corev1.NodeSelectorTerm, rename func(string) string) {
	for j := range term.MatchFields {
		if term.MatchFields[j].Key == "metadata.name" {
			for k, v := range term.MatchFields[j].Values {
				term.MatchFields[j].Values[k] = rename(v)
			}
		}
	}
	for j := range term.MatchExpressions {
		if term.MatchExpressions[j].Key == corev1.LabelHostname {
			for k, v := range term.MatchExpressions[j].Values {
				term.MatchExpressions[j].Values[k] = rename(v)
			}
		}
	}
}

// FleetOption changes how ApplyFleet publishes a fleet.
type FleetOption func(*fleetOptions)

type fleetOptions struct {
	prefix string
}

// WithNamePrefix isolates a fleet: see Inventory.WithPrefix. Tests that share a cluster use
// their own prefix so that their nodes and pools do not collide.
func WithNamePrefix(prefix string) FleetOption {
	return func(o *fleetOptions) { o.prefix = prefix }
}

// Fleet is an inventory published to a cluster: nodes made Ready by AddNode and the
// ResourceSlices a DRA driver would publish for them. It plays the driver's part: slices can
// be changed, added and removed while a test runs.
type Fleet struct {
	c      *Cluster
	prefix string

	// Published is the inventory as created, names prefixed. Slices created from a
	// generateName carry their generated names. DeviceClasses are the fleet's own
	// definitions, whether they were created or already existed.
	Published *Inventory
	// NewDeviceClasses are the DeviceClasses this fleet created; classes that already existed
	// were left as they were.
	NewDeviceClasses []string
}

// ApplyFleet reads the fleet in dir (see ReadFleet) and publishes it: nodes via AddNode,
// DeviceClasses (an existing class of the same name is kept), ResourceSlices, DeviceTaintRules
// and ResourceClaims (with their status.allocation, so their devices count as in use; the
// claim's namespace is created when missing). On error the objects created so far are
// removed.
func (c *Cluster) ApplyFleet(ctx context.Context, dir string, opts ...FleetOption) (*Fleet, error) {
	inv, err := ReadFleet(dir)
	if err != nil {
		return nil, err
	}
	return c.PublishInventory(ctx, inv, opts...)
}

// PublishInventory is ApplyFleet for an inventory built in code.
func (c *Cluster) PublishInventory(ctx context.Context, inv *Inventory, opts ...FleetOption) (*Fleet, error) {
	var o fleetOptions
	for _, opt := range opts {
		opt(&o)
	}
	inv = inv.WithPrefix(o.prefix)
	f := &Fleet{c: c, prefix: o.prefix, Published: &Inventory{}}
	if err := f.publish(ctx, inv); err != nil {
		if rerr := f.Remove(context.WithoutCancel(ctx)); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove partly published fleet: %w", rerr))
		}
		return nil, err
	}
	return f, nil
}

func (f *Fleet) publish(ctx context.Context, inv *Inventory) error {
	client := f.c.Client()
	for _, dc := range inv.DeviceClasses {
		_, err := client.ResourceV1().DeviceClasses().Create(ctx, clean(dc), metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
		case err != nil:
			return fmt.Errorf("create device class %s: %w", dc.Name, err)
		default:
			f.NewDeviceClasses = append(f.NewDeviceClasses, dc.Name)
		}
		f.Published.DeviceClasses = append(f.Published.DeviceClasses, dc)
	}
	for _, n := range inv.Nodes {
		created, err := f.c.AddNode(ctx, n)
		if err != nil {
			return err
		}
		f.Published.Nodes = append(f.Published.Nodes, created)
	}
	for _, s := range inv.ResourceSlices {
		created, err := client.ResourceV1().ResourceSlices().Create(ctx, clean(s), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create resource slice %s: %w", s.Name+s.GenerateName, err)
		}
		f.Published.ResourceSlices = append(f.Published.ResourceSlices, created)
	}
	for _, r := range inv.DeviceTaintRules {
		created, err := client.ResourceV1().DeviceTaintRules().Create(ctx, clean(r), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create device taint rule %s: %w", r.Name, err)
		}
		f.Published.DeviceTaintRules = append(f.Published.DeviceTaintRules, created)
	}
	for _, cl := range inv.ResourceClaims {
		created, err := f.publishClaim(ctx, cl)
		if err != nil {
			return err
		}
		f.Published.ResourceClaims = append(f.Published.ResourceClaims, created)
	}
	return nil
}

func (f *Fleet) publishClaim(ctx context.Context, cl *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	client := f.c.Client()
	if cl.Namespace == "" {
		cl.Namespace = metav1.NamespaceDefault
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, cl.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := f.c.CreateNamespace(ctx, cl.Namespace, "", nil); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	status := cl.Status
	created, err := client.ResourceV1().ResourceClaims(cl.Namespace).Create(ctx, clean(cl), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create resource claim %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	if status.Allocation == nil && len(status.ReservedFor) == 0 && len(status.Devices) == 0 {
		return created, nil
	}
	created.Status = status
	updated, err := client.ResourceV1().ResourceClaims(cl.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return created, fmt.Errorf("set status of resource claim %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	return updated, nil
}

// clean drops the server-owned metadata that a create ignores or rejects. The objects it gets
// are copies made by Inventory.WithPrefix.
func clean[T metav1.Object](obj T) T {
	obj.SetResourceVersion("")
	obj.SetUID("")
	obj.SetCreationTimestamp(metav1.Time{})
	obj.SetManagedFields(nil)
	return obj
}

// NodeName returns the published name of a node named name in the fleet's files.
func (f *Fleet) NodeName(name string) string { return f.prefixed(name) }

// PoolName returns the published name of a pool named name in the fleet's files.
func (f *Fleet) PoolName(name string) string { return f.prefixed(name) }

// SliceName returns the published name of a slice named name in the fleet's files.
func (f *Fleet) SliceName(name string) string { return f.prefixed(name) }

func (f *Fleet) prefixed(name string) string {
	if f.prefix == "" {
		return name
	}
	return f.prefix + "-" + name
}

// RenamePodNodeReferences gives a pod written against the fleet's files the fleet's published
// node names, as WithPrefix does for the fleet's own objects: spec.nodeName, the
// kubernetes.io/hostname node selector, and the kubernetes.io/hostname and metadata.name
// terms of required and preferred node affinity. The pod is changed in place.
func (f *Fleet) RenamePodNodeReferences(pod *corev1.Pod) {
	if pod.Spec.NodeName != "" {
		pod.Spec.NodeName = f.NodeName(pod.Spec.NodeName)
	}
	if h, ok := pod.Spec.NodeSelector[corev1.LabelHostname]; ok {
		pod.Spec.NodeSelector[corev1.LabelHostname] = f.NodeName(h)
	}
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil {
		return
	}
	na := pod.Spec.Affinity.NodeAffinity
	renameNodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution, f.NodeName)
	for i := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		renameNodeSelectorTerm(&na.PreferredDuringSchedulingIgnoredDuringExecution[i].Preference, f.NodeName)
	}
}

// NodeNames returns the published node names, in file order.
func (f *Fleet) NodeNames() []string {
	var names []string
	for _, n := range f.Published.Nodes {
		names = append(names, n.Name)
	}
	return names
}

// UpdateSlice changes a published slice the way a driver would: mutate gets the current
// object (name as in the fleet's files) and the result is written back, retried on
// conflict. Remember to raise Spec.Pool.Generation when a pool's content changes in a way
// consumers must notice.
func (f *Fleet) UpdateSlice(ctx context.Context, name string, mutate func(*resourceapi.ResourceSlice)) (*resourceapi.ResourceSlice, error) {
	sliceClient := f.c.Client().ResourceV1().ResourceSlices()
	var updated *resourceapi.ResourceSlice
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := sliceClient.Get(ctx, f.SliceName(name), metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(s)
		updated, err = sliceClient.Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update resource slice %s: %w", f.SliceName(name), err)
	}
	f.replaceSlice(updated)
	return updated, nil
}

// AddSlice publishes one more slice. Its name, pool and node references are given as in the
// fleet's files and get the fleet's prefix.
func (f *Fleet) AddSlice(ctx context.Context, slice *resourceapi.ResourceSlice) (*resourceapi.ResourceSlice, error) {
	s := (&Inventory{ResourceSlices: []*resourceapi.ResourceSlice{slice}}).WithPrefix(f.prefix).ResourceSlices[0]
	created, err := f.c.Client().ResourceV1().ResourceSlices().Create(ctx, clean(s), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create resource slice %s: %w", s.Name, err)
	}
	f.Published.ResourceSlices = append(f.Published.ResourceSlices, created)
	return created, nil
}

// DeleteSlice withdraws a published slice (name as in the fleet's files).
func (f *Fleet) DeleteSlice(ctx context.Context, name string) error {
	published := f.SliceName(name)
	err := f.c.Client().ResourceV1().ResourceSlices().Delete(ctx, published, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete resource slice %s: %w", published, err)
	}
	f.Published.ResourceSlices = slices.DeleteFunc(f.Published.ResourceSlices, func(s *resourceapi.ResourceSlice) bool {
		return s.Name == published
	})
	return nil
}

func (f *Fleet) replaceSlice(s *resourceapi.ResourceSlice) {
	for i, old := range f.Published.ResourceSlices {
		if old.Name == s.Name {
			f.Published.ResourceSlices[i] = s
			return
		}
	}
}

// Remove deletes what the fleet published: claims, taint rules, slices and nodes (pods bound
// to them are force-deleted). DeviceClasses stay: other fleets may share them.
func (f *Fleet) Remove(ctx context.Context) error {
	client := f.c.Client()
	var errs []error
	notFoundOK := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s: %w", what, err))
		}
	}
	for _, cl := range f.Published.ResourceClaims {
		notFoundOK("resource claim "+cl.Namespace+"/"+cl.Name,
			client.ResourceV1().ResourceClaims(cl.Namespace).Delete(ctx, cl.Name, metav1.DeleteOptions{}))
	}
	for _, r := range f.Published.DeviceTaintRules {
		notFoundOK("device taint rule "+r.Name, client.ResourceV1().DeviceTaintRules().Delete(ctx, r.Name, metav1.DeleteOptions{}))
	}
	for _, s := range f.Published.ResourceSlices {
		notFoundOK("resource slice "+s.Name, client.ResourceV1().ResourceSlices().Delete(ctx, s.Name, metav1.DeleteOptions{}))
	}
	for _, n := range f.Published.Nodes {
		if err := f.c.DeleteNode(ctx, n.Name); err != nil {
			errs = append(errs, err)
		}
	}
	f.Published = &Inventory{}
	return errors.Join(errs...)
}

// String names the fleet's nodes, for logs.
func (f *Fleet) String() string {
	return "fleet[" + strings.Join(f.NodeNames(), ",") + "]"
}
