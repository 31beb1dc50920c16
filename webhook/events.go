package webhook

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/explain"
)

// event records a Denied Event in the namespace: a denied pod never
// exists, so there is no pod to put it on (a controller's own FailedCreate
// Event says so on the owner). Every pod admitted gets its Event from the
// leader's ExplainController instead. At most one per namespace and reason
// per EventInterval (default 10s), then client-go's correlator.
func (h *PodHandler) event(ns string, mode api.Mode, d decision, row decisions.Row, dryRun bool) {
	if h.Recorder == nil || dryRun || d.outcome != explain.OutcomeDeny {
		return
	}
	obj := &corev1.ObjectReference{Kind: "Namespace", APIVersion: "v1", Name: ns, Namespace: ns}
	if !h.events.allow(ns+"/Denied/"+string(d.reason), h.now(), h.EventInterval) {
		return
	}
	h.Recorder.Eventf(obj, corev1.EventTypeWarning, "Denied", "pod %s/%s (%s mode): %s", ns, row.Name, mode, explain.Truncate(d.message, 900))
}

// eventLimiter lets one Event per key through per interval, before the
// recorder's own correlator: a Deployment of a thousand replicas produces a
// handful of Events, and admission does not pay for a thousand.
type eventLimiter struct {
	mu   sync.Mutex
	last map[string]time.Time
}

const maxEventKeys = 4096

func (l *eventLimiter) allow(key string, now time.Time, interval time.Duration) bool {
	if interval <= 0 {
		interval = 10 * time.Second
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.last[key]; ok && now.Sub(t) < interval {
		return false
	}
	if l.last == nil || len(l.last) >= maxEventKeys {
		l.last = map[string]time.Time{}
	}
	l.last[key] = now
	return true
}
