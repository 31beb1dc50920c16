package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/forecast"
	livepkg "github.com/claimbridge/claimbridge/internal/live"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// Values of --fail-on.
const (
	failNever          = "never-fits"
	failUntranslatable = "untranslatable"
	failBreaks         = "breaks"
)

// auditOptions are audit's flags.
type auditOptions struct {
	files      []string
	fleets     []string
	output     string
	failOn     []string
	timeout    time.Duration
	pol        policyFlags
	kubeconfig string
	// inCluster reads the cluster the process runs in, through its pod's
	// ServiceAccount (--in-cluster), as --kubeconfig does through a file.
	inCluster bool
	// client is the cluster's, made once (live()).
	client kubernetes.Interface
	// detected: the platform read from the cluster (--kubeconfig with
	// --forecast).
	detected   *platform.Platform
	namespaces []string
	forecast   forecastFlags
}

func newAuditCommand() *cobra.Command {
	var o auditOptions
	c := &cobra.Command{
		Use:   "audit (-f FILE|DIR|- --fleet DIR | --kubeconfig FILE [-n NS...]) [-o table|json|yaml|markdown|html] [--fail-on never-fits|untranslatable|breaks] [--forecast ...]",
		Short: "Report what claimbridge would do with each pod template, checked against a fleet",
		Long: `Translates every pod template of the manifests (Pods, workloads and custom
resources, as translate finds them) and checks the result with the DRA
allocator against a fleet inventory (Nodes, ResourceSlices, DeviceClasses,
allocated ResourceClaims, DeviceTaintRules as YAML; DeviceClasses in the input
files join it, a class of the same name replacing the fleet's, with --forecast
too). One row per pod template
(a custom resource's rows name the template's path): Translate (the fleet can
serve it), KeepLegacy (it stays on the device plugin, with the reason) or Skip.
An object that asks for devices where no template can be located is a
KeepLegacy row with reason Unsupported; one whose device fields ask for
nothing (a Kueue Workload, a Karpenter NodePool's limits) a Skip row.

With --kubeconfig, the Pods and workloads of the cluster (of the namespaces
given with -n, or all) are audited against the cluster's own inventory (or
--fleet, if given). Pods a controller owns are represented by the controller.

--fail-on makes the exit code 1 when a row is never-fits (the translation can
never be served) or untranslatable (any KeepLegacy row), for CI pipelines.

With --forecast, the fleet is taken as it is today (device-plugin nodes,
GPU Feature Discovery labels, maybe no ResourceSlice at all) and every row is
decided against the fleet as it will be after a one-day switch to DRA: the
ResourceSlices the DRA drivers would publish for the same hardware, the
device plugin's resources gone from the nodes that switch. Each row says
what the switch does to it:

  Breaks          runs today; after the switch no pod of it is served
  NotCreatable    kube-apiserver refuses its pods (a device request that
                  differs from its limit, a request without a limit, a
                  fraction of a device, hugepages without cpu or memory);
                  the row quotes what it says
  OrderDependent  placed alone it gets more pods served than after the
                  workloads before it: a range of pods, e.g. 0–2/2
  Partial         some of its pods are served, whatever the order
  Unjudged        the forecast cannot judge it: no pod template, or the
                  pods it asks for are served only where attributes the
                  nodes' labels do not tell decide
  NotServedToday  no node serves it today either (every resource it
                  requests counts: cpu, memory, ephemeral-storage,
                  hugepages, devices); the row names what is missing
  Moves           translated, and DRA serves every pod of it
  ServedByClass   kept as submitted, and a DeviceClass that maps its
                  extended resource serves it
  StaysLegacy     stays on the device plugin, on nodes the switch leaves
  NotAffected     asks for nothing the switch replaces

A suggested DeviceClass lists every row whose result or pods served differ
when the forecast runs again with it (--forecast-classes with the forecast's
classes and it), each named by its file and object.

--fail-on breaks makes the exit code 1 when a row breaks.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fopts, err := o.validate()
			if err != nil {
				return err
			}
			policy, err := o.pol.load()
			if err != nil {
				return err
			}
			in, err := o.read(c)
			if err != nil {
				return err
			}
			if o.forecast.on && o.live() {
				// The platform as the cluster shows it, then what the
				// flags declare over it.
				if fopts.Platform, err = o.forecast.loadPlatform(o.detected); err != nil {
					return err
				}
			}
			var rep *report.Report
			if o.forecast.on {
				rep, err = o.runForecast(c.Context(), in, policy, fopts)
			} else {
				rep, err = o.run(c.Context(), in, policy)
			}
			if err != nil {
				return err
			}
			if err := rep.Write(c.OutOrStdout(), o.output); err != nil {
				return err
			}
			return failure(rep, o.failOn)
		},
	}
	c.Flags().StringSliceVarP(&o.files, "filename", "f", nil, "manifest file, directory or - for stdin (repeatable)")
	c.Flags().StringSliceVar(&o.fleets, "fleet", nil, "fleet inventory: YAML file or directory (repeatable)")
	c.Flags().StringVarP(&o.output, "output", "o", "table", "output format: "+strings.Join(report.Formats, ", "))
	c.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "audit a live cluster through this kubeconfig instead of manifests")
	c.Flags().BoolVar(&o.inCluster, "in-cluster", false, "audit the cluster this runs in, through its pod's ServiceAccount (instead of --kubeconfig)")
	c.Flags().StringSliceVarP(&o.namespaces, "namespace", "n", nil, "with --kubeconfig or --in-cluster: the namespaces to audit (default all)")
	c.Flags().StringSliceVar(&o.failOn, "fail-on", nil, "exit 1 when a row is never-fits, untranslatable or (with --forecast) breaks")
	c.Flags().DurationVar(&o.timeout, "timeout", 2*time.Second, "deadline of one feasibility check (a check that hits it is Unknown)")
	o.pol.add(c)
	o.forecast.add(c)
	return c
}

// validate checks the flags together, and builds the forecast's options.
func (o *auditOptions) validate() (forecast.Options, error) {
	if !slices.Contains(report.Formats, o.output) {
		return forecast.Options{}, usagef("-o must be one of %s", strings.Join(report.Formats, ", "))
	}
	for _, f := range o.failOn {
		if f != failNever && f != failUntranslatable && f != failBreaks {
			return forecast.Options{}, usagef("--fail-on takes %s, %s or %s", failNever, failUntranslatable, failBreaks)
		}
		if f == failBreaks && !o.forecast.on {
			return forecast.Options{}, usagef("--fail-on %s needs --forecast", failBreaks)
		}
	}
	fopts, err := o.forecast.options()
	if err != nil {
		return fopts, err
	}
	live := o.live()
	switch {
	case o.kubeconfig != "" && o.inCluster:
		return fopts, usagef("--kubeconfig and --in-cluster exclude each other")
	case live && len(o.files) > 0:
		return fopts, usagef("-f and --kubeconfig (or --in-cluster) exclude each other")
	case !live && len(o.files) == 0:
		return fopts, usagef("%v (or --kubeconfig for a live cluster)", manifest.ErrNoInput)
	case !live && len(o.fleets) == 0:
		return fopts, usagef("--fleet DIR is required: the inventory to check against (see examples/fleets)")
	}
	return fopts, nil
}

// read opens what the audit reads: the manifests and the --fleet files, or
// the workloads of the cluster and, without --fleet, its inventory.
func (o *auditOptions) read(c *cobra.Command) (*offline.Input, error) {
	src := offline.Sources{FleetPaths: o.fleets, Source: strings.Join(o.fleets, ","), Timeout: o.timeout}
	if !o.live() {
		docs, err := manifest.Read(o.files, c.InOrStdin())
		if err != nil {
			return nil, err
		}
		src.Docs = docs
		return offline.Open(src)
	}
	cs, err := o.cluster()
	if err != nil {
		return nil, err
	}
	if src.Docs, err = livepkg.Workloads(c.Context(), cs, o.namespaces); err != nil {
		return nil, err
	}
	if o.forecast.on {
		if o.detected, err = livepkg.Platform(c.Context(), cs, nil); err != nil {
			return nil, fmt.Errorf("detect the platform: %w", err)
		}
	}
	if len(o.fleets) == 0 {
		if src.Cluster, err = livepkg.Inventory(c.Context(), cs); err != nil {
			return nil, err
		}
		src.Source = "cluster"
	}
	return offline.Open(src)
}

// run audits the workloads against the fleet as it is.
func (o *auditOptions) run(ctx context.Context, in *offline.Input, policy *translate.Policy) (*report.Report, error) {
	fleet, err := in.Check()
	if err != nil {
		return nil, err
	}
	ctx, cancel := in.Deadline(ctx)
	defer cancel()
	items, _, err := offline.Translate(ctx, in.Docs, in.Options(policy, fleet))
	if err != nil {
		return nil, err
	}
	rep := report.New(in.Source, policy.Name(), offline.Rows(items))
	rep.Reasons = offline.Reasons()
	rep.FleetSummary = report.NewFleetSummary(fleet.Snapshot.Summary(ctx))
	return rep, nil
}

func failure(rep *report.Report, failOn []string) error {
	for _, row := range rep.Items {
		if slices.Contains(failOn, failNever) && row.Verdict == string(feasibility.NeverFits) {
			return exitError{exitInvalid}
		}
		if slices.Contains(failOn, failUntranslatable) && row.Outcome == reason.OutcomeKeepLegacy {
			return exitError{exitInvalid}
		}
		if slices.Contains(failOn, failBreaks) && row.Cutover != nil && row.Cutover.Result == cutover.Breaks {
			return exitError{exitInvalid}
		}
	}
	return nil
}

// live says the workloads come from a cluster (--kubeconfig or --in-cluster).
func (o *auditOptions) live() bool { return o.kubeconfig != "" || o.inCluster }

// cluster is the client of the live cluster, made on the first call.
func (o *auditOptions) cluster() (kubernetes.Interface, error) {
	if o.client != nil {
		return o.client, nil
	}
	var cfg *rest.Config
	var err error
	if o.inCluster {
		// The pod's ServiceAccount token and CA, and the address
		// kube-apiserver's Service gives every pod.
		if cfg, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("--in-cluster: %w", err)
		}
	} else if cfg, err = clientcmd.BuildConfigFromFlags("", o.kubeconfig); err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if o.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return o.client, nil
}
