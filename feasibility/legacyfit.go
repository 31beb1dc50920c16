package feasibility

// The legacy side of the fleet: where the device plugin would run a pod as
// submitted now. A pod that DRA cannot serve now is kept on the device
// plugin when a node there has room for it (decide, DRABusyLegacyFree):
// translating it would make it wait for DRA devices that are in use, or
// held by pods admitted a moment ago, while a device-plugin node is free.

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/feasibility/legacy"
	"github.com/claimbridge/claimbridge/feasibility/upstream"
)

// LegacyFit says whether the device plugin would run a pod as submitted now.
type LegacyFit struct {
	// Known is false when the inventory lists no pods: without the
	// requests of the pods bound to each node, what is free is not known.
	Known bool
	// Node is the first node, in name order, that advertises every
	// extended resource the pod asks for and has room for the pod after the
	// pods bound to it; "" when none has.
	Node string
	// Nodes counts the nodes that have room.
	Nodes int
}

// LegacyFitsNow finds the nodes where the pod as submitted would run now on
// its extended resources (device plugins): nodes that pass its node
// selector, affinity, taints and schedulability, advertise every extended
// resource it asks for in their allocatable, and have room for all its
// requests (CPU, memory, extended resources, pods) after those of the pods
// bound to them, as NodeResourcesFit counts. A DeviceClass that maps an
// extended resource (KEP-5004) does not count here: this is the device
// plugin's own capacity.
func (s *Snapshot) LegacyFitsNow(pod *corev1.Pod) LegacyFit {
	return s.LegacyFitsAfter(pod, nil, nil)
}

// LegacyFitsAfter is LegacyFitsNow once the pods of pending, in that order,
// have taken their room: pods that wait for the device plugin and that
// kube-scheduler places before this one (not bound yet, or admitted a
// moment ago and not in the inventory yet). Each takes the first node, in
// name order, that would run it now (legacy.Room); one that no node runs
// now takes nothing. With podsOn, the pods bound to a node are those it
// lists now, not those the snapshot summed: a pod bound since the
// snapshot was built left pending and must count on its node.
func (s *Snapshot) LegacyFitsAfter(pod *corev1.Pod, pending []*corev1.Pod, podsOn func(node string) []*corev1.Pod) LegacyFit {
	fit := LegacyFit{Known: len(s.nodes) > 0 && s.nodes[0].usageKnown}
	if !fit.Known {
		return fit
	}
	room := legacy.NewRoom(len(s.nodes), func(i int) *corev1.Node { return s.nodeAt(i).node }, func(i int) upstream.Usage {
		ni := s.nodeAt(i)
		if podsOn != nil {
			return legacy.UsageOf(ni.node.Name, podsOn(ni.node.Name))
		}
		return ni.usage() // the usage of s
	})
	room.Take(pending)
	room.Fits(pod, func(i int) bool {
		if fit.Node == "" {
			fit.Node = s.nodeAt(i).node.Name
		}
		fit.Nodes++
		return true
	})
	return fit
}

// Unservable is an extended resource that no node could give a pod (see
// [Snapshot.LegacyUnservable]).
type Unservable = legacy.Unservable

// LegacyUnservable lists, in name order, the extended resources of the pod
// as submitted that no node it can run on advertises in its allocatable
// with at least the pod's effective request (what one node must give it):
// kube-scheduler rejects the pod on every node, so it stays Pending until a
// node offers them — after a cluster switched from the device plugin to
// DRA, never. Two cases: no node of the fleet advertises that much at all
// (Most is less than Requested: the resource is gone), or the nodes that
// do are all excluded by the pod's node selector, required affinity,
// tolerations or spec.nodeName (Elsewhere names them: the nodes that kept
// the device plugin are not where the pod may go). What runs on the nodes
// does not count: this is about capacity, not about a busy moment.
// Extended resources that a DeviceClass maps (KEP-5004) are served from
// DRA and never listed.
//
// It says nothing (nil) when the snapshot has no nodes, or when a node
// reports no allocatable at all (a node registering: what it offers is not
// known yet).
func (s *Snapshot) LegacyUnservable(pod *corev1.Pod) []Unservable {
	return s.devicePlugin.Unservable(pod, s.draServes)
}

// DRADevices is the number of DRA devices the snapshot's nodes see.
func (s *Snapshot) DRADevices() int { return s.devices }
