// Package cluster runs a real Kubernetes control plane on loopback for end-to-end tests:
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler from hack/e2e-bins.sh, with
// per-run PKI, RBAC and the version's defaults (resource.k8s.io/v1 and DRA included).
//
// There is no kubelet. Nodes are API objects made Ready by AddNode, and ApplyFleet plays a DRA
// driver: it publishes the ResourceSlices of a fleet directory (examples/fleets/<name>) and can
// change them while a test runs. Pods are scheduled and their claims allocated by the real
// scheduler; they never start.
//
// Every wait is bounded. Processes run in their own process groups and are stopped by Stop in
// reverse start order; if the test binary dies without cleaning up, the kernel kills them
// (Pdeathsig).
//
// One cluster per test package is the intended use (start it in TestMain with New); tests
// isolate themselves with their own namespaces (Namespace) and fleet name prefixes
// (WithNamePrefix).
package cluster
