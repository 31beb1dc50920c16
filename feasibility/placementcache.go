package feasibility

// The placement check's cache: answers per pod shape and node class.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/podfacts"
)

// placementKey hashes what a class's answer to in depends on besides the
// class: the pods' node constraints and extended requests, the claims, the
// policy's vocabulary, whether fallbacks count, and the DeviceClasses.
func placementKey(snap *Snapshot, memo *classMemo, in PlacementInput) (string, error) {
	snap.nodeClassList(memo) // sets the classes' fingerprint
	h := sha256.New()
	w := func(parts ...string) {
		for _, s := range parts {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
	}
	marshal := func(m interface{ Marshal() ([]byte, error) }) error {
		b, err := m.Marshal()
		if err != nil {
			return fmt.Errorf("hash placement: %w", err)
		}
		w(string(b))
		return nil
	}
	for _, pod := range []*corev1.Pod{in.Legacy, in.Translated} {
		w("pod")
		for _, k := range slices.Sorted(maps.Keys(pod.Spec.NodeSelector)) {
			w(k, pod.Spec.NodeSelector[k])
		}
		if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			if err := marshal(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
				return "", err
			}
		}
		for i := range pod.Spec.Tolerations {
			if err := marshal(&pod.Spec.Tolerations[i]); err != nil {
				return "", err
			}
		}
		reqs := podfacts.ExtendedRequests(pod)
		for _, n := range slices.Sorted(maps.Keys(reqs)) {
			q := reqs[n]
			w(string(n), q.String())
		}
	}
	// What the device plugin's scheduler reads of the pod besides (HAMi's
	// card types) changes the legacy side.
	sel := in.Policy.LegacyDeviceSelectors(in.Legacy)
	for _, n := range slices.Sorted(maps.Keys(sel)) {
		w("legacy-selectors", string(n))
		w(sel[n]...)
	}
	w("claims")
	for _, c := range in.Claims {
		if err := marshal(c); err != nil {
			return "", err
		}
	}
	f := snap.features
	w(in.Policy.Fingerprint(), snap.classesFingerprint, fmt.Sprintf("%+v", f), fmt.Sprint(in.NoFallbacks))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Prepare does ahead of time what the first checks on a snapshot would do:
// group its nodes into classes and build its allocators.
func (c *Checker) Prepare(ctx context.Context, snap *Snapshot) {
	if snap == nil {
		return
	}
	snap.nodeClassList(&c.classes)
	_, _ = snap.allocatorsFor(ctx, c.celCache(snap.features))
}

func (c *Checker) placementEntry(key string) *placementEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.placements.get(key); ok {
		return e
	}
	e := &placementEntry{classes: map[string]classAnswer{}}
	c.placements.add(key, e)
	return e
}
