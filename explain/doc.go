// Package explain is what a decision says and how it is read back: the
// reason codes of admission and their catalog, the decision values a pod
// carries, the admission warnings (within kube-apiserver's limits), the
// one-line account an Event carries, the words for a pod no node can serve,
// and the pod as submitted that a translated pod keeps. Admission writes
// these; the leader's controllers, the live report and the PolicyReports
// read them. Pure: no client, no clock.
package explain
