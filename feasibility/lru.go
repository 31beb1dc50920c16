package feasibility

import "container/list"

// lru is a small least-recently-used cache; not safe for concurrent use (the Checker holds its
// mutex). A size of zero or less disables it.
type lru[V any] struct {
	size  int
	order *list.List // front = most recent; values are *lruEntry[V]
	items map[string]*list.Element
}

type lruEntry[V any] struct {
	key   string
	value V
}

func newLRU[V any](size int) *lru[V] {
	return &lru[V]{size: size, order: list.New(), items: map[string]*list.Element{}}
}

func (c *lru[V]) get(key string) (V, bool) {
	e, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry[V]).value, true
}

func (c *lru[V]) add(key string, v V) {
	if c.size <= 0 {
		return
	}
	if e, ok := c.items[key]; ok {
		e.Value.(*lruEntry[V]).value = v
		c.order.MoveToFront(e)
		return
	}
	c.items[key] = c.order.PushFront(&lruEntry[V]{key: key, value: v})
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruEntry[V]).key)
	}
}
