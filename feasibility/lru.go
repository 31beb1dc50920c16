package feasibility

import utilslru "k8s.io/utils/lru"

// lru is k8s.io/utils/lru typed for its values. A size of zero or less
// disables it: it keeps nothing.
type lru[V any] struct {
	c *utilslru.Cache // nil when disabled
}

func newLRU[V any](size int) *lru[V] {
	if size <= 0 {
		return &lru[V]{}
	}
	return &lru[V]{c: utilslru.New(size)}
}

func (l *lru[V]) get(key string) (V, bool) {
	var zero V
	if l.c == nil {
		return zero, false
	}
	v, ok := l.c.Get(key)
	if !ok {
		return zero, false
	}
	return v.(V), true
}

func (l *lru[V]) add(key string, v V) {
	if l.c != nil {
		l.c.Add(key, v)
	}
}
