package decide

import (
	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/translate"
)

// A namespace's rules come from its label, else from the policy, else
// from the default: the one cascade every reader of the rules uses
// (admission, the strand controller, the decision itself).

// WhenDRABusy is the rule for a pod DRA serves only once devices free up:
// the namespace's (its label's value, "" when it has none), else the
// policy's (p may be nil), else KeepLegacy.
func WhenDRABusy(p *translate.Policy, namespace v1alpha1.WhenDRABusy) v1alpha1.WhenDRABusy {
	var policy v1alpha1.WhenDRABusy
	if p != nil {
		policy = p.Spec().WhenDRABusy
	}
	r, _ := cascade(api.LabelWhenDRABusy, namespace, "whenDRABusy", policy, v1alpha1.WhenDRABusyKeepLegacy)
	return r
}

// OnUnservable is the rule for a pod kept as submitted that no node can
// serve: the namespace's, else the policy's, else Admit; and where it came
// from, for the messages ("namespace label claimbridge.io/on-unservable=Deny",
// "policy onUnservable: Deny"; "" for the default).
func OnUnservable(p *translate.Policy, namespace v1alpha1.OnUnservable) (v1alpha1.OnUnservable, string) {
	var policy v1alpha1.OnUnservable
	if p != nil {
		policy = p.Spec().OnUnservable
	}
	return cascade(api.LabelOnUnservable, namespace, "onUnservable", policy, v1alpha1.OnUnservableAdmit)
}

// cascade is the namespace's value, else the policy's, else def, with
// where it came from.
func cascade[T ~string](label string, namespace T, field string, policy, def T) (T, string) {
	switch {
	case namespace != "":
		return namespace, "namespace label " + label + "=" + string(namespace)
	case policy != "":
		return policy, "policy " + field + ": " + string(policy)
	}
	return def, ""
}
