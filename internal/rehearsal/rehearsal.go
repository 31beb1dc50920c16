//go:build unix

// Package rehearsal proves a cutover forecast on the real scheduler: it starts a control
// plane on 127.0.0.1 (package controlplane), publishes the forecast fleet on it — the nodes
// as they will be after the switch, the ResourceSlices the DRA drivers will publish, their
// DeviceClasses, the claims that keep their devices — runs `claimbridge serve` in front of
// it, creates every pod of every workload the switch concerns at once, waits until
// kube-scheduler settles, and sets on each forecast row what the rehearsal saw
// (report.Row.Rehearsed): the pods bound beside the pods the forecast said are served. It
// stops everything and removes its files when it ends.
package rehearsal

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/controlplane"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// Options of a rehearsal. Docs, Rows, After, Policy, BinDir and Claimbridge are required.
type Options struct {
	// Docs are the workloads, Rows the forecast's rows of them and After the fleet after the
	// switch, as offline.Cutover returns them.
	Docs  []manifest.Document
	Rows  []report.Row
	After *feasibility.Fleet
	// Policy decides the pods, as the forecast did; Serve are the flags that give
	// `claimbridge serve` the same policy (--policy FILE, --kueue-config FILE), and
	// MatchConditions the webhook's (translate.Policy.MatchConditions).
	Policy *translate.Policy
	Serve  []string
	// Mode of the workloads' namespaces. Default: enforce.
	Mode string
	// BinDir holds the control-plane binaries (package k8sbins).
	BinDir string
	// Claimbridge is the claimbridge binary that serves (the running one).
	Claimbridge string
	// Settle: kube-scheduler has settled when no pod was bound for this long (default 10 s);
	// Timeout: the longest to wait for it (default 5 min).
	Settle, Timeout time.Duration
	// Keep the control plane's directory (PKI, etcd data, logs) after stopping.
	Keep bool
	// Progress receives what each step does and how long it took. Default: discarded.
	Progress io.Writer
}

// Result of a rehearsal.
type Result struct {
	// Disagree counts the workloads bound otherwise than forecast.
	Disagree int
	// Rehearsed counts the workloads whose pods were created.
	Rehearsed int
	// Timings of the steps.
	Timings string
}

// workload is one row of the forecast the rehearsal creates pods of.
type workload struct {
	row  int
	name string
	pod  *corev1.Pod // as submitted
	pods int64
	ns   string
}

// rehearsalLabel marks the pods a rehearsal created with their row.
const rehearsalLabel = "rehearse/row"

// ownNamespace is claimbridge's namespace on the control plane.
const ownNamespace = "claimbridge-system"

// Run rehearses the switch and sets Rehearsed on o.Rows. An error means the rehearsal could
// not run.
func Run(ctx context.Context, o Options) (*Result, error) {
	o = o.withDefaults()
	var timings []string
	began := time.Now()
	step := func(what string) func() {
		fmt.Fprintf(o.Progress, "rehearse: %s\n", what)
		start := time.Now()
		return func() {
			d := time.Since(start).Round(100 * time.Millisecond)
			fmt.Fprintf(o.Progress, "rehearse:   done in %s\n", d)
			timings = append(timings, fmt.Sprintf("%s %s", strings.SplitN(what, " (", 2)[0], d))
		}
	}
	ws, err := workloads(ctx, o)
	if err != nil {
		return nil, err
	}

	done := step("starting etcd, kube-apiserver, kube-controller-manager and kube-scheduler on 127.0.0.1")
	c, err := controlplane.New(ctx, controlplane.Options{BinDir: o.BinDir, KeepDir: o.Keep, Progress: o.Progress})
	if err != nil {
		return nil, err
	}
	defer func() {
		c.Stop()
		if o.Keep {
			fmt.Fprintf(o.Progress, "rehearse: kept %s\n", c.Dir)
		}
	}()
	done()

	done = step("publishing the forecast fleet: nodes after the switch, ResourceSlices, DeviceClasses")
	inv := o.After.Inventory
	if err := c.Publish(ctx, &controlplane.Inventory{Nodes: inv.Nodes, DeviceClasses: inv.Classes, ResourceSlices: inv.Slices,
		ResourceClaims: allocatedClaims(inv.Claims), DeviceTaintRules: inv.TaintRules}); err != nil {
		return nil, fmt.Errorf("publish the forecast fleet: %w", err)
	}
	if err := createPriorityClasses(ctx, c.Client(), offline.PriorityClassesOf(o.Docs)); err != nil {
		return nil, err
	}
	done()

	done = step("starting claimbridge serve in front of it")
	if err := serve(ctx, c, o); err != nil {
		return nil, fmt.Errorf("claimbridge serve: %w", err)
	}
	for _, ns := range namespacesOf(ws) {
		if _, err := c.CreateNamespace(ctx, ns, "", map[string]string{api.LabelMode: o.Mode}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	done()

	var pods int64
	for _, w := range ws {
		pods += w.pods
	}
	cfg := c.RESTConfig()
	cfg.WarningHandler = rest.NoWarnings{} // claimbridge's warnings are the report's reasons
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	done = step(fmt.Sprintf("creating the %d pods of %d workloads at once", pods, len(ws)))
	created := createAll(ctx, cs, ws)
	done()

	done = step(fmt.Sprintf("waiting until kube-scheduler has bound no pod for %s (at most %s)", o.Settle, o.Timeout))
	pinned := map[int]bool{}
	for _, w := range ws {
		pinned[w.row] = w.pod.Spec.NodeName != ""
	}
	bound, err := settle(ctx, cs, o.After.Snapshot, pinned, o.Settle, o.Timeout)
	if err != nil {
		return nil, err
	}
	done()

	res := &Result{Rehearsed: len(ws)}
	for _, w := range ws {
		x := &cutover.Rehearsed{Pods: created[w.row].pods, Bound: bound[w.row]}
		x.Agrees = x.Pods == w.pods && Agrees(o.Rows[w.row].Cutover, x.Bound)
		if !x.Agrees {
			res.Disagree++
		}
		if err := created[w.row].err; err != nil {
			fmt.Fprintf(o.Progress, "rehearse: %s: %d of %d pods created: %v\n", o.Rows[w.row].Name, x.Pods, w.pods, err)
		}
		o.Rows[w.row].Rehearsed = x
	}
	res.Timings = fmt.Sprintf("%s in all: %s", time.Since(began).Round(100*time.Millisecond), strings.Join(timings, ", "))
	return res, nil
}

func (o Options) withDefaults() Options {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	o.Mode = cmp.Or(o.Mode, string(api.ModeEnforce))
	if o.Settle <= 0 {
		o.Settle = 10 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	return o
}

// workloads are the forecast's rows whose pods the rehearsal creates: those the switch
// concerns (not NotAffected, not Unjudged), with the pod each asks for as submitted.
func workloads(ctx context.Context, o Options) ([]workload, error) {
	items, _, err := offline.Translate(ctx, manifest.Clone(o.Docs), offline.Options{Policy: o.Policy})
	if err != nil {
		return nil, err
	}
	plain := offline.Rows(items)
	if len(plain) != len(o.Rows) {
		return nil, fmt.Errorf("the forecast has %d rows, the manifests %d", len(o.Rows), len(plain))
	}
	var ws []workload
	k := 0
	for _, it := range items {
		if it.Decision == nil {
			continue
		}
		if _, ok := it.Doc.Object.(metav1.Object); !ok {
			continue
		}
		c := o.Rows[k].Cutover
		if it.Pod != nil && c != nil && c.Result != cutover.NotAffected && c.Result != cutover.Unjudged {
			ws = append(ws, workload{row: k, name: plain[k].Name, pod: it.Pod, pods: plain[k].Pods(), ns: cmp.Or(plain[k].Namespace, "default")})
		}
		k++
	}
	return ws, nil
}

// allocatedClaims are the claims that hold devices (those of pods that keep running through
// the switch).
func allocatedClaims(claims []*resourceapi.ResourceClaim) []*resourceapi.ResourceClaim {
	return slices.DeleteFunc(slices.Clone(claims), func(c *resourceapi.ResourceClaim) bool { return c.Status.Allocation == nil })
}

func namespacesOf(ws []workload) []string {
	set := map[string]bool{}
	for _, w := range ws {
		set[w.ns] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// Agrees says whether a rehearsal that bound bound pods of a workload agrees with its
// forecast: it bound the pods served, or, where the forecast said kube-scheduler's order
// decides (OrderDependent) or the fleet is too small for all (Partial), a number within the
// range the forecast gave; or the forecast made no promise (Unjudged, NotAffected).
func Agrees(c *cutover.Effect, bound int64) bool {
	if c == nil {
		return true
	}
	switch c.Result {
	case cutover.Unjudged, cutover.NotAffected:
		return true
	case cutover.OrderDependent, cutover.Partial:
		least, most := c.Range()
		return least <= bound && bound <= most
	}
	return bound == c.Served
}
