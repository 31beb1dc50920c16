package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/forecast"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// forecastFlags are audit's cutover forecast flags.
type forecastFlags struct {
	on      bool
	nodes   string
	gfd     string
	slicing string
	classes []string
	out     string
	// platform: a Platform document; presets: install paths by name.
	platform string
	presets  []string
}

func (f *forecastFlags) add(c *cobra.Command) {
	c.Flags().BoolVar(&f.on, "forecast", false, "decide against the fleet as it will be after a one-day switch from the device plugin to DRA (the cutover forecast)")
	f.addOptions(c)
	c.Flags().StringVar(&f.out, "forecast-out", "", "with --forecast: write the forecast fleet (Nodes, ResourceSlices, DeviceClasses) to this file, to review and feed back with --fleet")
}

// addOptions adds the forecast's options without --forecast and --forecast-out (rehearse
// always forecasts).
func (f *forecastFlags) addOptions(c *cobra.Command) {
	c.Flags().StringVar(&f.nodes, "forecast-nodes", "", "with --forecast: label selector of the nodes the switch covers (default: every node with an accelerator the forecast knows)")
	c.Flags().StringVar(&f.gfd, "gfd-labels", string(forecast.GFDLabelsDrop), "with --forecast: whether GPU Feature Discovery's node labels stay after the switch: drop (GPU Operator's DRA mode) or keep")
	c.Flags().StringVar(&f.slicing, "forecast-time-slicing", "", "with --forecast: override how GPUs the device plugin time-slices are forecast: shares (the NVIDIA DRA driver v0.5+ with ConsumableShares and --consumable-shares=<replicas>) or whole (a driver without consumable shares); default: as the platform's consumable-shares mode (--platform), disabled by the driver's default")
	c.Flags().StringSliceVar(&f.classes, "forecast-classes", nil, "with --forecast: YAML of the DeviceClasses the switch creates (default: the DRA drivers' own classes)")
	c.Flags().StringVar(&f.platform, "platform", "", "with --forecast: a Platform document (claimbridge.io/v1alpha1, docs/concepts/platform.md) saying what the switch lands on: each driver's install path, DeviceClasses and the extended resources they map, the NVIDIA driver's consumable shares, the Kubernetes release; applied after --platform-preset (default: the drivers' own defaults: classes that map nothing, exclusive GPUs)")
	c.Flags().StringSliceVar(&f.presets, "platform-preset", nil, "with --forecast: known install paths whose facts apply, in order: "+strings.Join(v1alpha1.PlatformPresets(), ", "))
}

// options checks the flags and builds the forecast's options (Policy aside).
func (f *forecastFlags) options() (forecast.Options, error) {
	var o forecast.Options
	if !f.on {
		if f.nodes != "" || f.out != "" || len(f.classes) > 0 || f.gfd != string(forecast.GFDLabelsDrop) || f.slicing != "" || f.platform != "" || len(f.presets) > 0 {
			return o, usagef("--forecast-nodes, --gfd-labels, --forecast-time-slicing, --forecast-classes, --platform, --platform-preset and --forecast-out need --forecast")
		}
		return o, nil
	}
	gfd, err := forecast.ParseGFDLabels(f.gfd)
	if err != nil {
		return o, usagef("--gfd-labels: %v", err)
	}
	o.GFDLabels = gfd
	if o.TimeSlicing, err = forecast.ParseTimeSlicing(f.slicing); err != nil {
		return o, usagef("--forecast-time-slicing: %v", err)
	}
	if o.Platform, err = f.loadPlatform(nil); err != nil {
		return o, err
	}
	if f.nodes != "" {
		sel, err := labels.Parse(f.nodes)
		if err != nil {
			return o, usagef("--forecast-nodes: %v", err)
		}
		o.Nodes = sel
	}
	if len(f.classes) > 0 {
		inv, err := feasibility.LoadInventory(f.classes...)
		if err != nil {
			return o, fmt.Errorf("--forecast-classes: %w", err)
		}
		if len(inv.Classes) == 0 {
			return o, usagef("--forecast-classes: no DeviceClass in %v", f.classes)
		}
		o.Classes = append([]*resourceapi.DeviceClass(nil), inv.Classes...)
	}
	return o, nil
}

// runForecast is audit --forecast: the workloads decided against the fleet
// as it will be after the switch to DRA.
//
// The fleet it starts from has the DeviceClasses the manifests ship, as
// audit's does: applied with the workloads, they are there after the switch
// too.
func (o *auditOptions) runForecast(ctx context.Context, in *offline.Input, policy *translate.Policy, fopts forecast.Options) (*report.Report, error) {
	fc, err := runCutover(ctx, in, policy, fopts, o.forecast.out)
	if err != nil {
		return nil, err
	}
	return fc.report(ctx, in.Source+" (forecast after the switch to DRA)", policy), nil
}

// cutoverRun is a forecast: its rows in the input's order, its summary and the fleet after
// the switch.
type cutoverRun struct {
	rows    []report.Row
	summary *cutover.Summary
	after   *feasibility.Fleet
}

// runCutover forecasts the switch; out, when given, receives the forecast fleet's YAML.
func runCutover(ctx context.Context, in *offline.Input, policy *translate.Policy, fopts forecast.Options, out string) (*cutoverRun, error) {
	ctx, cancel := in.Deadline(ctx)
	defer cancel()
	rows, f, after, err := offline.Cutover(ctx, in.Docs, offline.CutoverOptions{Policy: policy, Before: in.Fleet, Forecast: fopts,
		Quotas: in.Quotas, Check: feasibility.Options{Timeout: in.Timeout}})
	if err != nil {
		return nil, err
	}
	if out != "" {
		if err := os.WriteFile(out, []byte(f.YAML), 0o600); err != nil {
			return nil, fmt.Errorf("--forecast-out: %w", err)
		}
	}
	return &cutoverRun{rows: rows, summary: f, after: after}, nil
}

// report is the forecast's page.
func (fc *cutoverRun) report(ctx context.Context, fleet string, policy *translate.Policy) *report.Report {
	rep := report.New(fleet, policy.Name(), fc.rows)
	rep.Reasons = offline.Reasons()
	rep.Forecast = fc.summary
	rep.FleetSummary = report.NewFleetSummary(fc.after.Snapshot.Summary(ctx))
	return rep
}

// loadPlatform is the platform --platform-preset and --platform declare
// over base (detected from the cluster; nil for the drivers' defaults).
func (f *forecastFlags) loadPlatform(base *platform.Platform) (*platform.Platform, error) {
	p, err := offline.Platform(base, f.platform, f.presets)
	var preset offline.PresetError
	switch {
	case errors.As(err, &preset):
		return nil, usagef("--platform-preset: %v", err)
	case err != nil:
		return nil, fmt.Errorf("--platform: %w", err)
	}
	return p, nil
}
