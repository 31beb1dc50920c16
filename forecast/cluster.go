package forecast

// The cutover forecast of the whole cluster. Cutover day recreates every
// pod at once and they all compete for the same devices, so a workload is
// not judged alone against an empty forecast fleet: the fleet after the
// switch is forecast (forecast.go), every workload is decided against it
// (CutoverInput.Decide), every pod of every workload is placed on it in
// the order kube-scheduler's queue takes them (plan.go: how each workload
// is placed; place.go: the placement; order.go: the order and where it
// decides), and each workload gets its result (results.go, cutover.go);
// then the summary and the DeviceClasses it suggests (summary.go).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/translate"
)

// Workload is one pod template of the cluster, decided against the fleet
// after the switch.
type Workload struct {
	// Key names it as the report's rows do: "namespace/Kind/name", with
	// ": <path>" for a template inside a custom resource.
	Key string
	// Source names where it was read from (a file and the document in it,
	// "path#0"; a live object's is empty): with Key, the workload's
	// identity — two workloads of one name in two files are two.
	Source string
	// Pod as submitted; nil for an object that asks for devices where no
	// pod template can be located.
	Pod *corev1.Pod
	// Pods the template stands for, replicas counted (at least 1).
	Pods int64
	// Priority of its pods (their PriorityClass's value) and Created, its
	// creation time (zero when not known): the placement's order.
	Priority int32
	Created  time.Time
	// Decision against the fleet after the switch.
	Decision *decide.Decision
}

// CutoverInput is what a cutover forecast needs.
type CutoverInput struct {
	// Before is the fleet as it is today. Required.
	Before *feasibility.Inventory
	// Options of the fleet forecast; its Policy is required.
	Options Options
	// Check configures the feasibility checks.
	Check feasibility.Options
	// Decide decides every workload against a fleet after the switch (the
	// manifests' or the cluster's pod templates, each through decide.Pod).
	// ForecastCutover calls it once per fleet it forecasts: once, and once
	// more per DeviceClass it suggests. Required.
	Decide func(ctx context.Context, after *feasibility.Fleet) ([]Workload, error)
}

// CutoverForecast is a cutover forecast: the fleet after the switch, the
// workloads decided against it and what the switch does to each.
type CutoverForecast struct {
	// Forecast of the fleet, and the fleets before and after, as checked.
	Forecast      *Result
	Before, After *feasibility.Fleet
	// Workloads as Decide gave them, and a Cutover for each.
	Workloads []Workload
	Cutovers  []cutover.Effect
	Summary   *cutover.Summary
	// policy of the forecast: which pods the target cluster's admission
	// gives ExtendedResourceToleration's tolerations (decide.AsAdmitted).
	policy *translate.Policy
}

// ForecastCutover forecasts the fleet after the switch, decides the
// workloads against it (in.Decide), places the whole cluster and says what
// the switch does to each workload; then, for the extended resources of
// the workloads not served, it forecasts again with a DeviceClass that
// maps the resource (extendedResourceName) and keeps each class whose
// re-run serves more of them. An error means the input is invalid or a
// decision failed.
func ForecastCutover(ctx context.Context, in CutoverInput) (*CutoverForecast, error) {
	if in.Decide == nil {
		return nil, errors.New("cutover forecast: no decision function")
	}
	j, err := forecastAndPlace(ctx, in, in.Options)
	if err != nil {
		return nil, err
	}
	s, err := summaryOf(in.Options, j)
	if err != nil {
		return nil, err
	}
	if s.Suggested, err = suggest(ctx, in, j); err != nil {
		return nil, err
	}
	j.Summary = s
	return j, nil
}

// forecastAndPlace is one pass of the cutover forecast without the
// summary: the fleet forecast with opts, the workloads decided against it
// and the whole cluster placed on it and judged: the first run, and each
// suggested class's re-run alike.
func forecastAndPlace(ctx context.Context, in CutoverInput, opts Options) (*CutoverForecast, error) {
	fc, err := Forecast(in.Before, opts)
	if err != nil {
		return nil, err
	}
	before, err := feasibility.NewFleet(in.Before, in.Check)
	if err != nil {
		return nil, fmt.Errorf("fleet before the switch: %w", err)
	}
	switched := switchedResources(fc)
	// Every pod that asks for a resource the switch replaces is created
	// again: what it holds today is free at the switch.
	afterInv := *fc.After
	afterInv.Pods = slices.DeleteFunc(slices.Clone(fc.After.Pods), func(p *corev1.Pod) bool { return asksAny(podfacts.ExtendedAsked(p), switched) })
	after, err := feasibility.NewFleet(&afterInv, in.Check)
	if err != nil {
		return nil, fmt.Errorf("forecast fleet: %w", err)
	}
	ws, err := in.Decide(ctx, after)
	if err != nil {
		return nil, err
	}
	j := &CutoverForecast{Forecast: fc, Before: before, After: after, Workloads: ws, policy: opts.Policy}
	j.Cutovers = placeCluster(ctx, j, switched)
	return j, nil
}

// pods is how many pods the workload stands for, at least one.
func (w Workload) pods() int64 { return max(w.Pods, 1) }
