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

// maxLookups bounds the namespaces remembered.
const maxLookups = 1024

// recent remembers values with when they were put, up to a bound of keys
// (emptied when it is reached): what an API call answered a moment ago,
// until the informer's cache has it.
type recent[V any] struct {
	mu sync.Mutex
	m  map[string]recentValue[V]
}

type recentValue[V any] struct {
	v  V
	at time.Time
}

// get returns the value put under key less than ttl before now.
func (r *recent[V]) get(key string, now time.Time, ttl time.Duration) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[key]
	if !ok || now.Before(e.at) || now.Sub(e.at) >= ttl {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put remembers v under key from now, keeping at most bound keys.
func (r *recent[V]) put(key string, v V, now time.Time, bound int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= bound {
		r.m = map[string]recentValue[V]{}
	}
	r.m[key] = recentValue[V]{v: v, at: now}
}

// namespaceLookups shares the API reads of namespaces the cache does not
// have yet: concurrent admissions wait for one read, and the admissions
// of the next lookupTTL take its answer.
type namespaceLookups struct {
	group singleflight.Group
	read  recent[*corev1.Namespace]
}

func (l *namespaceLookups) get(ctx context.Context, name string, now time.Time, read func(context.Context, string) (*corev1.Namespace, error)) (*corev1.Namespace, error) {
	if ns, ok := l.read.get(name, now, lookupTTL); ok {
		return ns, nil
	}
	v, err, _ := l.group.Do(name, func() (any, error) {
		// The read is not the first caller's: one that gives up must not
		// fail the others waiting for it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		ns, err := read(rctx, name)
		if err != nil {
			return nil, err
		}
		l.read.put(name, ns, now, maxLookups)
		return ns, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*corev1.Namespace), nil
}
