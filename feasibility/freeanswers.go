package feasibility

// What the allocator answered on a node with every device free, shared by
// the checks of one decision: the placement proof asks it of each node
// class's first node, and the verdict that follows asks the same node the
// same claims. On a node none of whose devices is held (not busy), the
// allocator over the current state answers as the one over free devices
// (the search relies on it between its passes), so the verdict takes the
// proof's answer there instead of asking again. Every answer is the
// allocator's own, and none outlives the decision: a later check of the
// same claims asks the allocator again.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// ShareAnswers returns a context under which [Checker.Placement] and
// [Checker.Check] share the allocator's answers on nodes whose devices are
// all free: the context of one decision, whose placement proof and verdict
// ask the same nodes the same claims.
func ShareAnswers(ctx context.Context) context.Context {
	return context.WithValue(ctx, answersKey{}, &freeAnswers{})
}

type answersKey struct{}

// answersOf returns the answers ShareAnswers put in ctx, or nil.
func answersOf(ctx context.Context) *freeAnswers {
	f, _ := ctx.Value(answersKey{}).(*freeAnswers)
	return f
}

// freeAnswers holds the answers of one decision.
type freeAnswers struct {
	mu sync.Mutex
	m  map[freeKey]freeAnswer
	// hits counts the answers given from m.
	hits int
}

type freeKey struct {
	snap   *Snapshot // the fleet snapshot: its slices and classes
	cc     *cel.Cache
	claims string // claimsKey of the defaulted claims
	node   *corev1.Node
}

// freeAnswer is what Allocate returned; its results are shared and never
// modified.
type freeAnswer struct {
	res []resourceapi.AllocationResult
	err error
}

// freeQuery is what the allocator is asked on a node: the claims, with
// what its answers are kept under besides the node — the snapshot (its
// fleet snapshot: the slices and classes), the CEL cache and the claims'
// key (claimsKey of the defaulted claims; "" keeps nothing).
type freeQuery struct {
	snap   *Snapshot
	cc     *cel.Cache
	key    string
	claims []*resourceapi.ResourceClaim
}

// maxFreeAnswers bounds the answers a decision keeps; when it is reached it
// starts afresh.
const maxFreeAnswers = 1024

// allocate returns alloc's answer to q on the node. alloc must answer on
// it as the allocator over free devices does: that allocator, or one over
// the current state when the node is not busy. An answer cut short by ctx
// is not kept; without a claims key nothing is.
func (f *freeAnswers) allocate(ctx context.Context, alloc structured.Allocator, q freeQuery, node *corev1.Node) ([]resourceapi.AllocationResult, error) {
	if f == nil || q.key == "" {
		return alloc.Allocate(ctx, node, q.claims)
	}
	k := freeKey{snap: q.snap.fleetSnapshot(), cc: q.cc, claims: q.key, node: node}
	f.mu.Lock()
	a, ok := f.m[k]
	if ok {
		f.hits++
	}
	f.mu.Unlock()
	if ok {
		return a.res, a.err
	}
	res, err := alloc.Allocate(ctx, node, q.claims)
	if err != nil && ctx.Err() != nil {
		return res, err
	}
	f.mu.Lock()
	if f.m == nil || len(f.m) >= maxFreeAnswers {
		f.m = map[freeKey]freeAnswer{}
	}
	f.m[k] = freeAnswer{res: res, err: err}
	f.mu.Unlock()
	return res, err
}

// claimsKey identifies the defaulted claims as the allocator reads them
// (names included: its errors name the claim); "" when they cannot be
// encoded, and then nothing is shared.
func claimsKey(claims []*resourceapi.ResourceClaim) string {
	b, err := json.Marshal(claims)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
