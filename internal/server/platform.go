package server

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"

	"github.com/claimbridge/claimbridge/internal/live"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/platform"
)

// platformWatch keeps what admission knows of the platform: detected from
// the cluster (live.Platform, read-only lists) when Detect is on, at the
// start and every period, then the Platform document (File) declared over
// it. Admission reads the last answer; it never waits for one. A
// detection that fails keeps the last answer, and logs once why.
type platformWatch struct {
	client kubernetes.Interface
	// cached: the inventory's DeviceClasses and nodes, read once synced.
	cached  syncedCache
	detect  bool
	file    string
	period  time.Duration
	log     logr.Logger
	current atomic.Pointer[platform.Platform]
	failed  bool
}

// syncedCache is the inventory: its DeviceClasses and nodes, and whether
// its informers have synced.
type syncedCache interface {
	live.Cached
	Synced() bool
}

// newPlatformWatch checks the document and sets the first answer: the
// declared platform over the drivers' defaults, until detection runs.
func newPlatformWatch(client kubernetes.Interface, cached syncedCache, detect bool, file string, period time.Duration, log logr.Logger) (*platformWatch, error) {
	w := &platformWatch{client: client, cached: cached, detect: detect, file: file, period: period, log: log}
	p, err := offline.Platform(nil, file, nil)
	if err != nil {
		return nil, fmt.Errorf("--platform: %w", err)
	}
	w.current.Store(p)
	return w, nil
}

// Get is the platform admission decides by.
func (w *platformWatch) Get() *platform.Platform { return w.current.Load() }

// Start detects until ctx ends.
func (w *platformWatch) Start(ctx context.Context) error {
	if !w.detect {
		return nil
	}
	// The classes and nodes come from the inventory's informers: detect
	// once they are synced.
	for !w.cached.Synced() {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
	w.refresh(ctx)
	every(ctx, w.period, func() { w.refresh(ctx) })
	return nil
}

func (w *platformWatch) refresh(ctx context.Context) {
	detected, err := live.Platform(ctx, w.client, w.cached)
	if err != nil {
		if !w.failed {
			w.log.Error(err, "platform detection failed: admission keeps the platform it knew (declared, or the drivers' defaults)")
		}
		w.failed = true
		return
	}
	if w.failed {
		w.log.Info("platform detection works again")
	}
	w.failed = false
	p, err := offline.Platform(detected, w.file, nil)
	if err != nil {
		w.log.Error(err, "platform: the declared document no longer reads")
		return
	}
	if prev := w.current.Load(); prev == nil || prev.PoolsKey() != p.PoolsKey() || prev.Name != p.Name {
		w.log.Info("platform", "name", p.Name, "facts", p.Lines()[1:])
	}
	w.current.Store(p)
}
