package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// stats are the latencies of one or more runs against one target.
type stats struct {
	latencies []time.Duration
	errors    int
	elapsed   time.Duration // sum over the runs
}

func (s *stats) add(o stats) {
	s.latencies = append(s.latencies, o.latencies...)
	s.errors += o.errors
	s.elapsed += o.elapsed
}

func (s *stats) sorted() []time.Duration {
	l := slices.Clone(s.latencies)
	slices.Sort(l)
	return l
}

// quantile of the latencies (nearest rank); 0 without samples.
func (s *stats) quantile(q float64) time.Duration {
	l := s.sorted()
	if len(l) == 0 {
		return 0
	}
	i := int(q*float64(len(l))+0.5) - 1
	return l[min(max(i, 0), len(l)-1)]
}

func (s *stats) max() time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	return slices.Max(s.latencies)
}

// throughput in completed requests per second.
func (s *stats) throughput() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(len(s.latencies)) / s.elapsed.Seconds()
}

// poster sends one AdmissionReview to one URL over a keep-alive client.
type poster struct {
	client *http.Client
	url    string
	body   []byte
}

func (p poster) post(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(p.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// fixedRate sends rate requests per second for d, open loop: request i is due
// at start + i/rate whether or not earlier ones have returned, and its latency
// is measured from that due time (no coordinated omission). workers bounds the
// requests in flight; a request waiting for a worker is late, and its wait
// counts.
func fixedRate(ctx context.Context, p poster, rate float64, d time.Duration, workers int) stats {
	n := int(rate * d.Seconds())
	interval := time.Duration(float64(time.Second) / rate)
	due := make(chan time.Time, n)
	var (
		mu  sync.Mutex
		out stats
		wg  sync.WaitGroup
	)
	out.latencies = make([]time.Duration, 0, n)
	for range workers {
		wg.Go(func() {
			for t := range due {
				err := p.post(ctx)
				lat := time.Since(t)
				mu.Lock()
				if err != nil {
					out.errors++
				} else {
					out.latencies = append(out.latencies, lat)
				}
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	for i := range n {
		t := start.Add(time.Duration(i) * interval)
		if w := time.Until(t); w > 0 {
			select {
			case <-time.After(w):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		due <- t
	}
	close(due)
	wg.Wait()
	out.elapsed = time.Since(start)
	return out
}

// saturate keeps workers requests in flight for d (closed loop) and measures
// each request from its send.
func saturate(ctx context.Context, p poster, workers int, d time.Duration) stats {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu  sync.Mutex
		out stats
		wg  sync.WaitGroup
	)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				t := time.Now()
				err := p.post(context.WithoutCancel(ctx))
				lat := time.Since(t)
				mu.Lock()
				if err != nil {
					out.errors++
				} else {
					out.latencies = append(out.latencies, lat)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	out.elapsed = time.Since(start)
	return out
}
