//go:build tools

// Package kube pins the Kubernetes control-plane commands that the e2e harness runs.
// hack/e2e-bins.sh builds them from this module; the blank imports keep go mod tidy from
// dropping their dependencies.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
