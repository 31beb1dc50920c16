//go:build unix

// Package controlplane runs a real Kubernetes control plane on loopback: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler from a directory of binaries (package k8sbins
// finds, downloads or builds it), with per-run PKI, RBAC and the version's defaults
// (resource.k8s.io/v1 and DRA included).
//
// There is no kubelet. Nodes are API objects made Ready by AddNode, and Publish plays a DRA
// driver: it publishes the DeviceClasses, ResourceSlices, allocated ResourceClaims and
// DeviceTaintRules of a fleet. Pods are scheduled and their claims allocated by the real
// scheduler; they never start.
//
// Every wait is bounded. Processes run in their own process groups and are stopped by Stop in
// reverse start order; if the process that started them dies without cleaning up, the kernel
// kills them (Pdeathsig).
package controlplane
