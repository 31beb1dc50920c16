// Package podfacts answers what a pod asks for, as Kubernetes reads it:
// the resources it names, which extended resources it names or asks for,
// its effective request of each as kube-scheduler counts it, the devices a
// device plugin would hand it, whether it is a worker of a multi-host TPU
// slice, the tolerations the ExtendedResourceToleration admission plugin
// gives it, and what its required node selection names (a label key, one
// only GKE nodes carry). Every part of claimbridge that asks one of these
// questions asks it here.
//
// Where two readings of a pod differ (a limit or a request, a zero
// quantity, defaulted requests, init containers), each is a function of its
// own, named for what it reads; none is a looser form of another.
//
// The package is pure and deterministic: a pod in, a value out; lists are
// sorted. It imports nothing of this module.
package podfacts
