package webhook

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
)

// lookupTTL is how long a namespace read from the API answers for the
// admissions after it while the informer has not caught up yet: a burst
// into a namespace created a moment ago reads it once, not once per pod.
const lookupTTL = 5 * time.Second

// lookupTimeout bounds one read: kube-apiserver calls a webhook for at
// most 30 s.
const lookupTimeout = 10 * time.Second

// maxLookups bounds the namespaces remembered; emptied when reached.
const maxLookups = 1024

// namespaceLookups shares the API reads of namespaces the cache does not
// have yet: concurrent admissions wait for one read, and the admissions
// of the next lookupTTL take its answer.
type namespaceLookups struct {
	group singleflight.Group
	mu    sync.Mutex
	read  map[string]lookedUp
}

type lookedUp struct {
	ns *corev1.Namespace
	at time.Time
}

func (l *namespaceLookups) get(ctx context.Context, name string, now time.Time, read func(context.Context, string) (*corev1.Namespace, error)) (*corev1.Namespace, error) {
	l.mu.Lock()
	if r, ok := l.read[name]; ok && now.Sub(r.at) < lookupTTL && !now.Before(r.at) {
		l.mu.Unlock()
		return r.ns, nil
	}
	l.mu.Unlock()
	v, err, _ := l.group.Do(name, func() (any, error) {
		// The read is not the first caller's: one that gives up must not
		// fail the others waiting for it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		ns, err := read(rctx, name)
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.read == nil || len(l.read) >= maxLookups {
			l.read = map[string]lookedUp{}
		}
		l.read[name] = lookedUp{ns: ns, at: now}
		return ns, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*corev1.Namespace), nil
}
