package webhook

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/claimbridge/claimbridge/translate"
)

// PolicyFile serves the translation policy from a file (the chart mounts a
// ConfigMap) and reloads it when the file changes. An invalid new version is
// rejected — logged, counted and reported through OnReject — and the last
// good policy stays in force.
type PolicyFile struct {
	Path string
	// Interval between checks of the file. Default 2s.
	Interval time.Duration
	Metrics  *Metrics
	// OnReject is told about a rejected version (an Event, say). Optional.
	OnReject func(err error)

	current atomic.Pointer[translate.Policy]
	last    []byte
}

// NewPolicyFile loads the policy; with an empty path it serves the default
// policy. The first load must succeed.
func NewPolicyFile(path string) (*PolicyFile, error) {
	pf := &PolicyFile{Path: path}
	if path == "" {
		pf.current.Store(translate.DefaultPolicy())
		return pf, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	p, err := translate.LoadPolicy(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	pf.current.Store(p)
	pf.last = data
	return pf, nil
}

// Get returns the policy in force.
func (pf *PolicyFile) Get() *translate.Policy { return pf.current.Load() }

// NeedLeaderElection: every replica reloads its own policy.
func (pf *PolicyFile) NeedLeaderElection() bool { return false }

// Start watches the file until ctx ends.
func (pf *PolicyFile) Start(ctx context.Context) error {
	if pf.Path == "" {
		<-ctx.Done()
		return nil
	}
	interval := pf.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			pf.Reload(ctx)
		}
	}
}

// Reload reads the file once and applies it if it changed and is valid.
func (pf *PolicyFile) Reload(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("policy")
	data, err := os.ReadFile(pf.Path)
	if err != nil {
		logger.Error(err, "read policy file; keeping the policy in force", "path", pf.Path)
		return
	}
	if bytes.Equal(data, pf.last) {
		return
	}
	pf.last = data
	p, err := translate.LoadPolicy(data)
	if err != nil {
		logger.Error(err, "new policy rejected; keeping the policy in force", "path", pf.Path, "inForce", pf.Get().Name())
		if pf.Metrics != nil {
			pf.Metrics.PolicyReloads.WithLabelValues("rejected").Inc()
		}
		if pf.OnReject != nil {
			pf.OnReject(err)
		}
		return
	}
	pf.current.Store(p)
	logger.Info("policy applied", "path", pf.Path, "name", p.Name(), "families", p.Families())
	if pf.Metrics != nil {
		pf.Metrics.PolicyReloads.WithLabelValues("applied").Inc()
	}
}
