package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/claimbridge/claimbridge/feasibility"
	livepkg "github.com/claimbridge/claimbridge/internal/live"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// Values of --fail-on.
const (
	failNever          = "never-fits"
	failUntranslatable = "untranslatable"
	failBreaks         = "breaks"
)

func newAuditCommand() *cobra.Command {
	var (
		files   []string
		fleets  []string
		output  string
		failOn  []string
		timeout time.Duration
		pol     policyFlags
		kubecfg string
		nsList  []string
		fc      forecastFlags
	)
	c := &cobra.Command{
		Use:   "audit (-f FILE|DIR|- --fleet DIR | --kubeconfig FILE [-n NS...]) [-o table|json|yaml|markdown|html] [--fail-on never-fits|untranslatable|breaks] [--forecast ...]",
		Short: "Report what claimbridge would do with each pod template, checked against a fleet",
		Long: `Translates every pod template of the manifests (Pods, workloads and custom
resources, as translate finds them) and checks the result with the DRA
allocator against a fleet inventory (Nodes, ResourceSlices, DeviceClasses,
allocated ResourceClaims, DeviceTaintRules as YAML; DeviceClasses in the input
files join it, a class of the same name replacing the fleet's). One row per pod template
(a custom resource's rows name the template's path): Translate (the fleet can
serve it), KeepLegacy (it stays on the device plugin, with the reason) or Skip.
An object that asks for devices where no template can be located is a
KeepLegacy row with reason Unsupported.

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
what the switch does to it: Moves, ServedByClass, StaysLegacy, Breaks or
NotAffected. --fail-on breaks makes the exit code 1 when a row breaks.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if !slices.Contains(report.Formats, output) {
				return usagef("-o must be one of %s", strings.Join(report.Formats, ", "))
			}
			for _, f := range failOn {
				if f != failNever && f != failUntranslatable && f != failBreaks {
					return usagef("--fail-on takes %s, %s or %s", failNever, failUntranslatable, failBreaks)
				}
				if f == failBreaks && !fc.on {
					return usagef("--fail-on %s needs --forecast", failBreaks)
				}
			}
			fopts, err := fc.options()
			if err != nil {
				return err
			}
			live := kubecfg != ""
			switch {
			case live && len(files) > 0:
				return usagef("-f and --kubeconfig exclude each other")
			case !live && len(files) == 0:
				return usagef("%v (or --kubeconfig for a live cluster)", manifest.ErrNoInput)
			case !live && len(fleets) == 0:
				return usagef("--fleet DIR is required: the inventory to check against (see examples/fleets)")
			}
			policy, err := pol.load()
			if err != nil {
				return err
			}
			var inv *feasibility.Inventory
			var docs []manifest.Document
			source := strings.Join(fleets, ",")
			if live {
				cs, err := clientFor(kubecfg)
				if err != nil {
					return err
				}
				if docs, err = livepkg.Workloads(c.Context(), cs, nsList); err != nil {
					return err
				}
				if len(fleets) == 0 {
					if inv, err = livepkg.Inventory(c.Context(), cs); err != nil {
						return err
					}
					source = "cluster"
				}
			} else if docs, err = manifest.Read(files, c.InOrStdin()); err != nil {
				return err
			}
			if fc.on {
				if inv == nil {
					if inv, err = feasibility.LoadInventory(fleets...); err != nil {
						return fmt.Errorf("fleet: %w", err)
					}
				}
				return runForecast(c, docs, inv, source, policy, fopts, fc, timeout, output, failOn)
			}
			if inv == nil {
				if inv, err = feasibility.LoadInventory(fleets...); err != nil {
					return fmt.Errorf("fleet: %w", err)
				}
			}
			// DeviceClasses in the input files are part of the fleet, as
			// the DRA drivers' demos ship them beside the pods.
			fleet, err := feasibility.NewFleet(inv.WithClasses(offline.ClassesOf(docs)...), feasibility.Options{Timeout: timeout})
			if err != nil {
				return fmt.Errorf("fleet: %w", err)
			}
			docCount := len(docs)
			ctx, cancel := context.WithTimeout(c.Context(), timeout*time.Duration(max(1, docCount)))
			defer cancel()
			items, _, err := offline.Translate(ctx, docs, offline.Options{Policy: policy, Classes: fleet.Inventory.Classes, Quotas: offline.QuotasOf(docs),
				Checker: fleet.Checker, Snapshot: fleet.Snapshot})
			if err != nil {
				return err
			}
			rows := offline.Rows(items)
			rep := report.New(source, policy.Name(), rows)
			rep.Reasons = offline.Reasons()
			rep.FleetSummary = report.NewFleetSummary(fleet.Snapshot.Summary(c.Context()))
			if err := rep.Write(c.OutOrStdout(), output); err != nil {
				return err
			}
			return failure(rep, failOn)
		},
	}
	c.Flags().StringSliceVarP(&files, "filename", "f", nil, "manifest file, directory or - for stdin (repeatable)")
	c.Flags().StringSliceVar(&fleets, "fleet", nil, "fleet inventory: YAML file or directory (repeatable)")
	c.Flags().StringVarP(&output, "output", "o", "table", "output format: "+strings.Join(report.Formats, ", "))
	c.Flags().StringVar(&kubecfg, "kubeconfig", "", "audit a live cluster through this kubeconfig instead of manifests")
	c.Flags().StringSliceVarP(&nsList, "namespace", "n", nil, "with --kubeconfig: the namespaces to audit (default all)")
	c.Flags().StringSliceVar(&failOn, "fail-on", nil, "exit 1 when a row is never-fits or untranslatable")
	c.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "deadline of one feasibility check (a check that hits it is Unknown)")
	pol.add(c)
	fc.add(c)
	return c
}

func failure(rep *report.Report, failOn []string) error {
	for _, row := range rep.Items {
		if slices.Contains(failOn, failNever) && row.Verdict == string(feasibility.NeverFits) {
			return exitError{exitInvalid}
		}
		if slices.Contains(failOn, failUntranslatable) && row.Outcome == translate.OutcomeKeepLegacy {
			return exitError{exitInvalid}
		}
		if slices.Contains(failOn, failBreaks) && row.Cutover != nil && row.Cutover.Result == report.CutoverBreaks {
			return exitError{exitInvalid}
		}
	}
	return nil
}

func clientFor(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return kubernetes.NewForConfig(cfg)
}
