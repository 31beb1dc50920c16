package inventory

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// WhenDRABusy is the namespace's rule from its label, "" when it has none
// (or an unknown value: the policy's rule then applies).
func (inv *Inventory) WhenDRABusy(namespace string) v1alpha1.WhenDRABusy {
	obj, ok, err := inv.namespaces.GetStore().GetByKey(namespace)
	if err != nil || !ok {
		return ""
	}
	return WhenDRABusyOf(obj.(*corev1.Namespace))
}

// OnUnservable is the namespace's rule from its label, "" when it has none
// (or an unknown value: the policy's rule then applies).
func (inv *Inventory) OnUnservable(namespace string) v1alpha1.OnUnservable {
	obj, ok, err := inv.namespaces.GetStore().GetByKey(namespace)
	if err != nil || !ok {
		return ""
	}
	return OnUnservableOf(obj.(*corev1.Namespace))
}

// Repair is the namespace's claimbridge.io/repair label.
func (inv *Inventory) Repair(namespace string) string {
	obj, ok, err := inv.namespaces.GetStore().GetByKey(namespace)
	if err != nil || !ok {
		return ""
	}
	return obj.(*corev1.Namespace).Labels[api.LabelRepair]
}

// WhenDRABusyOf is a namespace's rule from its label, "" when it has none
// (or an unknown value: the policy's rule then applies).
func WhenDRABusyOf(ns *corev1.Namespace) v1alpha1.WhenDRABusy {
	r, _ := v1alpha1.ParseWhenDRABusy(ns.Labels[api.LabelWhenDRABusy])
	return r
}

// NamespaceMode reads a namespace's mode from the cache; found is false
// when the namespace is not in the cache (yet).
func (inv *Inventory) NamespaceMode(name string) (mode api.Mode, found bool) {
	obj, ok, err := inv.namespaces.GetStore().GetByKey(name)
	if err != nil || !ok {
		return api.ModeOff, false
	}
	return ModeOf(obj.(*corev1.Namespace)), true
}

// ModeOf is a namespace's mode from its label api.LabelMode; ModeOff
// without one (or with an unknown value).
func ModeOf(ns *corev1.Namespace) api.Mode {
	switch api.Mode(ns.Labels[api.LabelMode]) {
	case api.ModeEnforce:
		return api.ModeEnforce
	case api.ModeAudit:
		return api.ModeAudit
	}
	return api.ModeOff
}

// OnUnservableOf is a namespace's rule from its label, "" when it has none
// (or an unknown value: the policy's rule then applies).
func OnUnservableOf(ns *corev1.Namespace) v1alpha1.OnUnservable {
	r, _ := v1alpha1.ParseOnUnservable(ns.Labels[api.LabelOnUnservable])
	return r
}
