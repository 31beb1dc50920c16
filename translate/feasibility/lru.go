package feasibility

import "container/list"

// lru is a small least-recently-used verdict cache; not safe for concurrent use (the Checker
// holds its mutex). A negative size disables it.
type lru struct {
	size  int
	order *list.List // front = most recent; values are *lruEntry
	items map[string]*list.Element
}

type lruEntry struct {
	key     string
	verdict Verdict
}

func newLRU(size int) *lru {
	return &lru{size: size, order: list.New(), items: map[string]*list.Element{}}
}

func (c *lru) get(key string) (Verdict, bool) {
	e, ok := c.items[key]
	if !ok {
		return Verdict{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry).verdict, true
}

func (c *lru) add(key string, v Verdict) {
	if c.size <= 0 {
		return
	}
	if e, ok := c.items[key]; ok {
		e.Value.(*lruEntry).verdict = v
		c.order.MoveToFront(e)
		return
	}
	c.items[key] = c.order.PushFront(&lruEntry{key: key, verdict: v})
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruEntry).key)
	}
}
