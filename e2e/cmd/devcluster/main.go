// Command devcluster starts the e2e control plane with a fake device fleet for manual
// experiments, prints how to reach it and runs until interrupted (Ctrl-C or SIGTERM), then
// stops everything and removes its files.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/claimbridge/claimbridge/e2e/cluster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	fleetDir := flag.String("fleet", "", "fleet directory to publish (default: examples/fleets/mixed of the repository)")
	kubeconfigOut := flag.String("kubeconfig", "", "also write the admin kubeconfig to this path")
	keep := flag.Bool("keep", false, "keep the cluster's directory (PKI, etcd data, logs) after stopping")
	flag.Parse()

	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	if *fleetDir == "" {
		*fleetDir = filepath.Join(root, "examples", "fleets", "mixed")
		if _, err := os.Stat(*fleetDir); err != nil {
			*fleetDir = filepath.Join(root, "e2e", "testdata", "fleet-minimal")
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	c, err := cluster.New(ctx, cluster.Options{Progress: os.Stderr, KeepDir: *keep})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "devcluster: stopping")
		c.Stop()
		if *keep {
			fmt.Fprintf(os.Stderr, "devcluster: kept %s\n", c.Dir)
		}
	}()

	fleet, err := c.ApplyFleet(ctx, *fleetDir)
	if err != nil {
		return fmt.Errorf("apply fleet %s: %w", *fleetDir, err)
	}
	kubeconfig := c.Kubeconfig
	if *kubeconfigOut != "" {
		data, err := os.ReadFile(c.Kubeconfig)
		if err != nil {
			return fmt.Errorf("read kubeconfig: %w", err)
		}
		if err := os.WriteFile(*kubeconfigOut, data, 0o600); err != nil {
			return fmt.Errorf("write kubeconfig: %w", err)
		}
		kubeconfig = *kubeconfigOut
	}

	fmt.Fprintf(os.Stdout, `
Cluster ready in %s: %s
Fleet %s: %d nodes, %d resource slices, %d device classes

  export KUBECONFIG=%s
  export PATH=%s:$PATH   # kubectl %s

  kubectl get nodes -L nvidia.com/gpu.product,node.kubernetes.io/instance-type
  kubectl get resourceslices,deviceclasses
  kubectl get resourceslice %s -o yaml
  kubectl create namespace demo && kubectl label namespace demo claimbridge.io/mode=enforce

Pods are scheduled and their claims allocated; no container ever runs (there is no kubelet).
Delete bound pods with --grace-period=0 --force.
Component logs: %s
Press Ctrl-C to stop.
`,
		time.Since(start).Round(100*time.Millisecond), c.Host,
		*fleetDir, len(fleet.Published.Nodes), len(fleet.Published.ResourceSlices), len(fleet.Published.DeviceClasses),
		kubeconfig, c.BinDir, cluster.KubeletVersion, firstSlice(fleet),
		strings.Join(c.LogFiles(), " "),
	)

	<-ctx.Done()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func firstSlice(f *cluster.Fleet) string {
	if len(f.Published.ResourceSlices) == 0 {
		return "<name>"
	}
	return f.Published.ResourceSlices[0].Name
}
