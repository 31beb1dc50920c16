package server

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/metrics"
	"github.com/claimbridge/claimbridge/translate"
)

// PolicyFile serves the translation policy from a file (the chart mounts a
// ConfigMap) and reloads it when the file changes. An invalid new version is
// rejected — logged, counted and reported through OnReject — and the last
// good policy stays in force.
type PolicyFile struct {
	Path string
	// KueueConfig is a Kueue Configuration file (or the ConfigMap that holds
	// one) whose resources.deviceClassMappings are added to the policy's
	// kueue rule; read and reloaded with the policy. Optional.
	KueueConfig string
	// Interval between checks of the file. Default 2s.
	Interval time.Duration
	Metrics  *metrics.Metrics
	// OnReject is told about a rejected version (an Event, say). Optional.
	OnReject func(err error)

	current atomic.Pointer[translate.Policy]
	last    []byte
}

// NewPolicyFiles loads the policy (the default policy for an empty path)
// with the deviceClassMappings of a Kueue configuration file, when one is
// named. The first load must succeed.
func NewPolicyFiles(path, kueueConfig string) (*PolicyFile, error) {
	pf := &PolicyFile{Path: path, KueueConfig: kueueConfig}
	data, p, err := pf.load()
	if err != nil {
		return nil, err
	}
	pf.current.Store(p)
	pf.last = data
	return pf, nil
}

// load reads both files and returns what was read (to tell a change) and
// the policy.
func (pf *PolicyFile) load() ([]byte, *translate.Policy, error) {
	var raw, kueue, data []byte
	var err error
	if pf.Path != "" {
		if raw, err = os.ReadFile(pf.Path); err != nil {
			return nil, nil, fmt.Errorf("read policy: %w", err)
		}
		data = raw
	}
	if pf.KueueConfig != "" {
		if kueue, err = os.ReadFile(pf.KueueConfig); err != nil {
			return nil, nil, fmt.Errorf("read Kueue configuration: %w", err)
		}
		data = append(append(slices.Clone(raw), 0), kueue...)
	}
	p := translate.DefaultPolicy()
	if pf.Path != "" {
		if p, err = translate.LoadPolicy(raw); err != nil {
			return data, nil, fmt.Errorf("%s: %w", pf.Path, err)
		}
	}
	if pf.KueueConfig != "" {
		m, err := v1alpha1.ParseKueueConfiguration(kueue)
		if err != nil {
			return data, nil, fmt.Errorf("%s: %w", pf.KueueConfig, err)
		}
		p = p.WithKueueMappings(m)
	}
	return data, p, nil
}

// Get returns the policy in force.
func (pf *PolicyFile) Get() *translate.Policy { return pf.current.Load() }

// NeedLeaderElection: every replica reloads its own policy.
func (pf *PolicyFile) NeedLeaderElection() bool { return false }

// Start watches the file until ctx ends.
func (pf *PolicyFile) Start(ctx context.Context) error {
	if pf.Path == "" && pf.KueueConfig == "" {
		<-ctx.Done()
		return nil
	}
	interval := pf.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	every(ctx, interval, func() { pf.Reload(ctx) })
	return nil
}

// every runs f every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// Reload reads the files once and applies them if they changed and are valid.
func (pf *PolicyFile) Reload(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("policy")
	data, p, err := pf.load()
	if data == nil && err != nil {
		logger.Error(err, "read policy file; keeping the policy in force", "path", pf.Path, "kueueConfig", pf.KueueConfig)
		return
	}
	if bytes.Equal(data, pf.last) {
		return
	}
	pf.last = data
	if err != nil {
		logger.Error(err, "new policy rejected; keeping the policy in force", "path", pf.Path, "kueueConfig", pf.KueueConfig, "inForce", pf.Get().Name())
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
