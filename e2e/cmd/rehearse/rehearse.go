package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/e2e/binary"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/forecast"
	livepkg "github.com/claimbridge/claimbridge/internal/live"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// Options of a rehearsal.
type Options struct {
	// Files of the workloads and Fleets before the switch; or Kubeconfig of
	// a cluster to read both from (only Namespaces, all when empty).
	Files, Fleets []string
	Kubeconfig    string
	Namespaces    []string
	// PolicyFile or Profiles: the policy (default: the built-in one).
	PolicyFile string
	Profiles   []string
	// The forecast's options, as audit --forecast takes them.
	ForecastNodes, GFDLabels string
	Classes                  []string
	// PlatformFile and Presets: the platform the switch lands on, as
	// audit --forecast's --platform and --platform-preset declare it
	// (default: the drivers' own defaults).
	PlatformFile string
	Presets      []string
	// Mode of the workloads' namespaces (default enforce).
	Mode string
	// Output format of the report.
	Output string
	// Claimbridge binary (default: built from the repository).
	Claimbridge string
	// Settle: no pod bound for this long; Timeout: the longest to wait.
	Settle, Timeout time.Duration
	// Keep the control plane's directory.
	Keep bool
	// Progress receives what each step does and how long it took.
	Progress io.Writer
}

// Result of a rehearsal.
type Result struct {
	// Report: the forecast's rows, each with what the rehearsal saw
	// (Row.Rehearsed).
	Report *report.Report
	// Disagree counts the workloads bound otherwise than forecast.
	Disagree int
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

// Rehearse runs a rehearsal: the forecast, then the switch on a real
// control plane.
func Rehearse(ctx context.Context, o Options) (*Result, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Mode == "" {
		o.Mode = string(api.ModeEnforce)
	}
	if o.Settle <= 0 {
		o.Settle = 10 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	var timings []string
	began := time.Now()
	step := func(what string) func() {
		fmt.Fprintf(o.Progress, "rehearse: %s\n", what)
		start := time.Now()
		return func() {
			d := time.Since(start).Round(100 * time.Millisecond)
			timings = append(timings, fmt.Sprintf("%s %s", strings.SplitN(what, " (", 2)[0], d))
		}
	}

	done := step("forecasting the switch")
	policy, policyDoc, err := loadPolicy(o)
	if err != nil {
		return nil, err
	}
	docs, before, source, err := readInputs(ctx, o)
	if err != nil {
		return nil, err
	}
	fopts, err := forecastOptions(o, policy)
	if err != nil {
		return nil, err
	}
	rows, summary, after, err := offline.Cutover(ctx, docs, offline.CutoverOptions{Policy: policy, Before: before, Forecast: fopts,
		Quotas: offline.QuotasOf(docs), Check: feasibility.Options{Timeout: 5 * time.Second}})
	if err != nil {
		return nil, err
	}
	items, _, err := offline.Translate(ctx, manifest.Clone(docs), offline.Options{Policy: policy})
	if err != nil {
		return nil, err
	}
	plain := offline.Rows(items)
	if len(plain) != len(rows) {
		return nil, fmt.Errorf("the forecast has %d rows, the manifests %d", len(rows), len(plain))
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
		c := rows[k].Cutover
		if it.Pod != nil && c != nil && c.Result != cutover.NotAffected && c.Result != cutover.Unjudged {
			ns := cmpOr(plain[k].Namespace, "default")
			ws = append(ws, workload{row: k, name: plain[k].Name, pod: it.Pod, pods: plain[k].Pods(), ns: ns})
		}
		k++
	}
	done()

	done = step("starting etcd, kube-apiserver, kube-controller-manager and kube-scheduler on 127.0.0.1 (the first run builds them once: 857 s on 2 cores)")
	c, err := cluster.New(ctx, cluster.Options{Progress: o.Progress, KeepDir: o.Keep})
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
	inv := &cluster.Inventory{Nodes: after.Inventory.Nodes, DeviceClasses: after.Inventory.Classes, ResourceSlices: after.Inventory.Slices,
		ResourceClaims: allocatedClaims(after.Inventory.Claims), DeviceTaintRules: after.Inventory.TaintRules}
	if _, err := c.PublishInventory(ctx, inv); err != nil {
		return nil, fmt.Errorf("publish the forecast fleet: %w", err)
	}
	if err := createPriorityClasses(ctx, c.Client(), offline.PriorityClassesOf(docs)); err != nil {
		return nil, err
	}
	done()

	done = step("starting claimbridge serve in front of it")
	bin := o.Claimbridge
	if bin == "" {
		if bin, err = cluster.BuildClaimbridge(ctx, c.Dir); err != nil {
			return nil, err
		}
	}
	policyPath := filepath.Join(c.Dir, "policy.yaml")
	if err := os.WriteFile(policyPath, policyDoc, 0o600); err != nil {
		return nil, err
	}
	mc, err := matchConditions(policy)
	if err != nil {
		return nil, err
	}
	if _, err := binary.StartBinary(ctx, c, bin, binary.Options{Namespace: "claimbridge-system", ExtraArgs: []string{"--policy", policyPath},
		ChartValues: map[string]any{"webhook": map[string]any{"matchConditions": mc}}}); err != nil {
		return nil, fmt.Errorf("claimbridge: %w", err)
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
	bound, err := settle(ctx, cs, after.Snapshot, pinned, o.Settle, o.Timeout)
	if err != nil {
		return nil, err
	}
	done()

	res := &Result{}
	for _, w := range ws {
		x := &cutover.Rehearsed{Pods: created[w.row].pods, Bound: bound[w.row]}
		x.Agrees = x.Pods == w.pods && agrees(rows[w.row].Cutover, x.Bound)
		if !x.Agrees {
			res.Disagree++
		}
		if err := created[w.row].err; err != nil {
			fmt.Fprintf(o.Progress, "rehearse: %s: %d of %d pods created: %v\n", rows[w.row].Name, x.Pods, w.pods, err)
		}
		rows[w.row].Rehearsed = x
	}
	rep := report.New(source+" (rehearsed after the switch to DRA)", policy.Name(), rows)
	rep.Reasons = offline.Reasons()
	rep.Forecast = summary
	res.Report = rep
	res.Timings = fmt.Sprintf("%s in all: %s", time.Since(began).Round(100*time.Millisecond), strings.Join(timings, ", "))
	return res, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// loadPolicy is the policy and its document (for claimbridge serve).
func loadPolicy(o Options) (*translate.Policy, []byte, error) {
	switch {
	case o.PolicyFile != "" && len(o.Profiles) > 0:
		return nil, nil, errors.New("-policy and -profile exclude each other")
	case o.PolicyFile != "":
		data, err := os.ReadFile(o.PolicyFile)
		if err != nil {
			return nil, nil, err
		}
		p, err := translate.LoadPolicy(data)
		return p, data, err
	}
	tp := &v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind, Spec: v1alpha1.PolicySpec{Profiles: o.Profiles}}
	tp.Metadata.Name = "rehearsal"
	if len(o.Profiles) == 0 {
		tp.Spec.Profiles = v1alpha1.DefaultProfileNames()
	}
	p, err := translate.NewPolicy(tp)
	if err != nil {
		return nil, nil, err
	}
	data, err := yaml.Marshal(tp)
	return p, data, err
}

// readInputs reads the workloads and the fleet before the switch.
func readInputs(ctx context.Context, o Options) ([]manifest.Document, *feasibility.Inventory, string, error) {
	if o.Kubeconfig != "" {
		if len(o.Files) > 0 {
			return nil, nil, "", errors.New("-f and -kubeconfig exclude each other")
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
		if err != nil {
			return nil, nil, "", err
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, nil, "", err
		}
		docs, err := livepkg.Workloads(ctx, cs, o.Namespaces)
		if err != nil {
			return nil, nil, "", err
		}
		if len(o.Fleets) > 0 {
			inv, err := feasibility.LoadInventory(o.Fleets...)
			return docs, inv, strings.Join(o.Fleets, ","), err
		}
		inv, err := livepkg.Inventory(ctx, cs)
		return docs, inv, "cluster", err
	}
	if len(o.Files) == 0 || len(o.Fleets) == 0 {
		return nil, nil, "", errors.New("give the workloads (-f) and the fleet before the switch (-fleet), or -kubeconfig")
	}
	docs, err := manifest.Read(o.Files, os.Stdin)
	if err != nil {
		return nil, nil, "", err
	}
	inv, err := feasibility.LoadInventory(o.Fleets...)
	if err != nil {
		return nil, nil, "", fmt.Errorf("fleet: %w", err)
	}
	return docs, inv, strings.Join(o.Fleets, ","), nil
}

// forecastOptions are the forecast's options, as audit --forecast reads them.
func forecastOptions(o Options, p *translate.Policy) (forecast.Options, error) {
	f := forecast.Options{Policy: p}
	gfd, err := forecast.ParseGFDLabels(o.GFDLabels)
	if err != nil {
		return f, err
	}
	f.GFDLabels = gfd
	if f.Platform, err = offline.Platform(nil, o.PlatformFile, o.Presets); err != nil {
		return f, fmt.Errorf("-platform: %w", err)
	}
	if o.ForecastNodes != "" {
		if f.Nodes, err = labels.Parse(o.ForecastNodes); err != nil {
			return f, fmt.Errorf("-forecast-nodes: %w", err)
		}
	}
	if len(o.Classes) > 0 {
		inv, err := feasibility.LoadInventory(o.Classes...)
		if err != nil {
			return f, fmt.Errorf("-forecast-classes: %w", err)
		}
		f.Classes = append([]*resourceapi.DeviceClass(nil), inv.Classes...)
	}
	return f, nil
}

// matchConditions are the webhook's for the policy, as chart values.
func matchConditions(p *translate.Policy) (any, error) {
	data, err := yaml.Marshal(p.MatchConditions())
	if err != nil {
		return nil, err
	}
	var v any
	return v, yaml.Unmarshal(data, &v)
}

// allocatedClaims are the claims that hold devices (those of pods that keep
// running through the switch).
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

// agrees: a rehearsal that bound bound pods of a workload agrees with its
// forecast: it bound the pods served, or, where the forecast said
// kube-scheduler's order decides (OrderDependent) or the fleet is too
// small for all (Partial), a number within the range the forecast gave;
// or the forecast made no promise (Unjudged, NotAffected).
func agrees(c *cutover.Effect, bound int64) bool {
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
