package inventory

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DefaultDevicePluginHoldTTL bounds how long a pod kept on the device
// plugin is counted from its admission when the informer never shows it
// (another webhook refused it, or it was deleted at once).
const DefaultDevicePluginHoldTTL = 30 * time.Second

// DevicePluginHolds count the pods admission kept as submitted because DRA
// was busy while the device plugin had room, from their admission until
// the inventory shows them (api.AnnotationDevicePluginHold): from then on
// the inventory's pods count them, bound or waiting. Safe for concurrent
// use.
type DevicePluginHolds struct {
	ttl  time.Duration
	mu   sync.Mutex
	byID map[string]devicePluginHold
}

type devicePluginHold struct {
	pod     *corev1.Pod
	expires time.Time
}

// NewDevicePluginHolds returns an empty record; ttl <= 0 takes
// DefaultDevicePluginHoldTTL.
func NewDevicePluginHolds(ttl time.Duration) *DevicePluginHolds {
	if ttl <= 0 {
		ttl = DefaultDevicePluginHoldTTL
	}
	return &DevicePluginHolds{ttl: ttl, byID: map[string]devicePluginHold{}}
}

// Hold counts the pod of an admission (its id) from now on.
func (h *DevicePluginHolds) Hold(id string, pod *corev1.Pod, now time.Time) {
	if id == "" {
		return
	}
	h.mu.Lock()
	h.byID[id] = devicePluginHold{pod: pod, expires: now.Add(h.ttl)}
	h.mu.Unlock()
}

// Seen ends the hold of an admission whose pod the inventory shows.
func (h *DevicePluginHolds) Seen(id string) {
	h.mu.Lock()
	delete(h.byID, id)
	h.mu.Unlock()
}

// Pods are the pods held at now, in the order they were admitted; the
// expired holds end.
func (h *DevicePluginHolds) Pods(now time.Time) []*corev1.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []string
	for id, d := range h.byID {
		if !now.Before(d.expires) {
			delete(h.byID, id)
			continue
		}
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		return cmp.Or(h.byID[a].expires.Compare(h.byID[b].expires), strings.Compare(a, b))
	})
	pods := make([]*corev1.Pod, len(ids))
	for i, id := range ids {
		pods[i] = h.byID[id].pod
	}
	return pods
}
