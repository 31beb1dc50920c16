// Command devcluster starts the e2e control plane with a fake device fleet and claimbridge
// (the built binary, `claimbridge serve`, behind the chart's MutatingWebhookConfiguration) for
// manual experiments, prints how to reach it and runs until interrupted (Ctrl-C or SIGTERM),
// then stops everything and removes its files.
//
// Flags for `claimbridge serve` follow "--" or come one word per -serve-arg:
//
//	devcluster -fleet examples/fleets/dgx-h100 -- --template-gc-grace=1m --stranded-after=30s
//
// Each step says what it does and how long it took; a step that runs for a while (building
// claimbridge on an empty Go build cache) says so every 30 s.
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

	"github.com/claimbridge/claimbridge/e2e/binary"
	"github.com/claimbridge/claimbridge/e2e/cluster"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "switch" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := runSwitch(ctx, os.Args[2:], os.Stdout)
		stop()
		switch {
		case errors.Is(err, flag.ErrHelp):
			os.Exit(0)
		case errors.Is(err, errDisagrees):
			fmt.Fprintf(os.Stderr, "devcluster switch: %v\n", err)
			os.Exit(1)
		case err != nil:
			fmt.Fprintf(os.Stderr, "devcluster switch: %v\n", err)
			os.Exit(2)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintf(out, `Usage: devcluster [flags] [-- claimbridge serve flags]
       devcluster switch [-kubeconfig FILE] [flags]   (switch a running dev cluster to DRA)

Starts a control plane on 127.0.0.1 with a fake DRA fleet and claimbridge serve behind the
chart's webhook configuration, and runs until Ctrl-C. make dev-cluster builds it and passes
DEV_CLUSTER_ARGS, e.g.

  make dev-cluster DEV_CLUSTER_ARGS="-fleet examples/fleets/dgx-h100 -- --template-gc-grace=1m"

Flags after -- (or each -serve-arg) are added to claimbridge serve's, after devcluster's own
(--log-level debug, which they may override); paths are relative to the working directory.
devcluster wires these itself: %s.

Flags:
`, strings.Join(wiredServeFlags, ", "))
	flag.PrintDefaults()
}

func run() error {
	// A fresh flag set: controller-runtime's config package, which the switch's imports pull
	// in, registers its own -kubeconfig on the default one when the program starts.
	flag.CommandLine = flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	fleetDir := flag.String("fleet", "", "fleet directory to publish (default: examples/fleets/mixed of the repository)")
	kubeconfigOut := flag.String("kubeconfig", "", "also write the admin kubeconfig to this path")
	keep := flag.Bool("keep", false, "keep the cluster's directory (PKI, etcd data, logs) after stopping")
	noClaimbridge := flag.Bool("no-claimbridge", false, "start only the control plane and the fleet")
	replicas := flag.Int("replicas", 1, "replicas of claimbridge serve: more than one elect a leader, as the chart's do, and admit pods in turn")
	var serveFlags []string
	flag.Func("serve-arg", "one `word` more of claimbridge serve's arguments, e.g. -serve-arg=--template-gc-grace=1m\n(repeatable; or give them after --)", func(v string) error {
		serveFlags = append(serveFlags, v)
		return nil
	})
	flag.CommandLine.Usage = usage
	flag.Parse()
	extra, err := serveArgs(serveFlags, flag.Args())
	if err != nil {
		return err
	}
	if *noClaimbridge && len(extra) > 0 {
		return errors.New("serve arguments given with -no-claimbridge")
	}
	if *replicas < 1 {
		return fmt.Errorf("-replicas %d: at least 1", *replicas)
	}

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
	steps := 4
	if *noClaimbridge {
		steps = 2
	}
	p := &progress{w: os.Stderr, total: steps}
	done := p.step("starting etcd, kube-apiserver, kube-controller-manager and kube-scheduler on 127.0.0.1")
	c, err := cluster.New(ctx, cluster.Options{Progress: os.Stderr, KeepDir: *keep})
	if err != nil {
		return err
	}
	done()
	defer func() {
		fmt.Fprintln(os.Stderr, "devcluster: stopping")
		c.Stop()
		if *keep {
			fmt.Fprintf(os.Stderr, "devcluster: kept %s\n", c.Dir)
		}
	}()

	done = p.step("publishing the fleet " + *fleetDir + " and the PolicyReport CRD")
	fleet, err := c.ApplyFleet(ctx, *fleetDir)
	if err != nil {
		return fmt.Errorf("apply fleet %s: %w", *fleetDir, err)
	}
	if err := installPolicyReportCRD(ctx, c); err != nil {
		return err
	}
	done()
	serveLine := append([]string{"--log-level", "debug"}, extra...)
	var servers []*binary.Server
	var lb *binary.Balancer
	if !*noClaimbridge {
		if err := buildImage(ctx, p, c.Dir); err != nil {
			return err
		}
		what := "claimbridge serve " + strings.Join(serveLine, " ")
		if *replicas > 1 {
			what = fmt.Sprintf("%d replicas of %s", *replicas, what)
		}
		done := p.step("starting " + what + ", its webhook configuration and a reader of /metrics and /report")
		servers, lb, err = binary.StartReplicas(ctx, c, binary.Options{Namespace: namespace, ExtraArgs: serveLine, Replicas: *replicas, SecureMetrics: true})
		if err != nil {
			return fmt.Errorf("claimbridge: %w", err)
		}
		if err := installReader(ctx, c); err != nil {
			return err
		}
		done()
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
	try, err := chooseTryIt(ctx, root, *fleetDir)
	if err != nil {
		return err
	}

	fmt.Fprintf(os.Stdout, `
Cluster ready in %s: %s
Fleet %s: %d nodes, %d resource slices, %d device classes
`,
		time.Since(start).Round(100*time.Millisecond), c.Host,
		*fleetDir, len(fleet.Published.Nodes), len(fleet.Published.ResourceSlices), len(fleet.Published.DeviceClasses))
	if len(servers) > 0 {
		ca, err := writeCA(c, c.Dir)
		if err != nil {
			return err
		}
		fmt.Fprint(os.Stdout, serving(servers, lb, serveLine))
		fmt.Fprintf(os.Stdout, `
  export KUBECONFIG=%s
  export PATH=%s:%s:$PATH   # kubectl %s, claimbridge

Try it:

%s`, kubeconfig, c.BinDir, filepath.Dir(servers[0].Bin), cluster.KubeletVersion,
			try.commands(root, "https://"+servers[0].MetricsAddr+"/report", `curl -s --cacert `+ca+` -H "Authorization: Bearer $TOKEN"`))
	} else {
		fmt.Fprintf(os.Stdout, `
  export KUBECONFIG=%s
  export PATH=%s:$PATH   # kubectl %s
`, kubeconfig, c.BinDir, cluster.KubeletVersion)
	}
	fmt.Fprintf(os.Stdout, `
More: kubectl get nodes -L nvidia.com/gpu.product; kubectl get resourceslices,deviceclasses
Pods are scheduled and their claims allocated; no container ever runs (there is no kubelet).
Delete bound pods with --grace-period=0 --force.
Logs: %s
Press Ctrl-C to stop.
`, strings.Join(c.LogFiles(), " "))

	<-ctx.Done()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// serving says how claimbridge runs: its flags, each replica with its process and metrics
// address, and with several how they share the work and how to try HA.
func serving(servers []*binary.Server, lb *binary.Balancer, serveLine []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "claimbridge serve %s:", strings.Join(serveLine, " "))
	if lb == nil {
		fmt.Fprintf(&b, " serving the webhook (pid %d); metrics and report on https://%s\n", servers[0].Process().Pid(), servers[0].MetricsAddr)
		return b.String()
	}
	fmt.Fprintf(&b, " %d replicas electing a leader (Lease %s/claimbridge), each admitting pods in turn\n"+
		"(kube-apiserver calls https://%s, which sends each admission request to the next replica, as a Service would)\n",
		len(servers), namespace, lb.Addr)
	for _, s := range servers {
		fmt.Fprintf(&b, "  %s: pid %d, metrics and report on https://%s\n", s.Name, s.Process().Pid(), s.MetricsAddr)
	}
	fmt.Fprintf(&b, "To try HA: kill %d — the other replica admits every pod and takes the Lease over\n"+
		"(kubectl -n %s get lease claimbridge -o jsonpath='{.spec.holderIdentity}').\n", servers[0].Process().Pid(), namespace)
	return b.String()
}
