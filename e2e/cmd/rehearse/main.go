// Command rehearse checks a cutover forecast on the real scheduler: it
// forecasts the switch to DRA of a cluster (claimbridge audit --forecast,
// from manifests and fleet files or from a live cluster through
// --kubeconfig, which it only reads), then starts a control plane on
// 127.0.0.1 (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler), publishes the forecast fleet on it — the nodes as they
// will be after the switch, the ResourceSlices the DRA drivers will
// publish, their DeviceClasses — runs claimbridge serve in front of it,
// creates every pod of every workload at once, waits until kube-scheduler
// settles, and reports per workload the pods bound beside the pods the
// forecast said are served. It stops everything and removes its files
// when it ends.
//
//	make rehearse REHEARSE_ARGS="-f examples/cutover -fleet examples/fleets/before-cutover"
//
// The control-plane binaries come from $CLAIMBRIDGE_K8S_BIN, else
// $KUBEBUILDER_ASSETS (envtest's layout, with kube-controller-manager and
// kube-scheduler added), else hack/e2e-bins.sh builds them once into a
// cache (857 s on 2 cores the first time).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	code, err := run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "rehearse: %v\n", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// list is a repeatable flag.
type list []string

func (l *list) String() string { return strings.Join(*l, ",") }
func (l *list) Set(v string) error {
	*l = append(*l, strings.Split(v, ",")...)
	return nil
}

func run() (int, error) {
	var o Options
	var files, fleets, profiles, classes, namespaces, presets list
	flag.Var(&files, "f", "manifest file or directory of the workloads (repeatable)")
	flag.Var(&fleets, "fleet", "fleet inventory before the switch: YAML file or directory (repeatable)")
	flag.StringVar(&o.Kubeconfig, "kubeconfig", "", "read the workloads (and, without -fleet, the nodes) of this cluster instead; it is only read")
	flag.Var(&namespaces, "n", "with -kubeconfig: the namespaces to rehearse (repeatable; default all)")
	flag.StringVar(&o.PolicyFile, "policy", "", "TranslationPolicy file (default: the built-in default policy)")
	flag.Var(&profiles, "profile", "built-in profile(s) instead of a policy file (repeatable)")
	flag.StringVar(&o.ForecastNodes, "forecast-nodes", "", "label selector of the nodes the switch covers (default: every node with an accelerator the forecast knows)")
	flag.StringVar(&o.GFDLabels, "gfd-labels", "drop", "whether GPU Feature Discovery's labels stay after the switch: drop or keep")
	flag.Var(&classes, "forecast-classes", "YAML of the DeviceClasses the switch creates (default: the DRA drivers' own)")
	flag.StringVar(&o.PlatformFile, "platform", "", "a Platform document: each driver's install path, DeviceClasses and what they map, the NVIDIA driver's consumable shares (default: the drivers' own defaults)")
	flag.Var(&presets, "platform-preset", "known install paths whose facts apply before -platform (repeatable): gpu-operator, nvidia-dra-driver, eks-auto-mode, amd-gpu-operator, tpu-dra-driver, gke-managed")
	flag.StringVar(&o.Mode, "mode", "enforce", "claimbridge mode of the workloads' namespaces: enforce or audit")
	flag.StringVar(&o.Output, "o", "table", "output: table, json, yaml, markdown or html")
	flag.StringVar(&o.Claimbridge, "claimbridge", "", "claimbridge binary to run (default: go build ./cmd/claimbridge of the repository)")
	flag.DurationVar(&o.Settle, "settle", 10*time.Second, "kube-scheduler has settled when no pod is bound for this long")
	flag.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "the longest the pods may take to settle")
	flag.BoolVar(&o.Keep, "keep", false, "keep the control plane's directory (PKI, etcd data, logs) after stopping")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), `Usage: rehearse (-f FILE|DIR -fleet DIR | -kubeconfig FILE [-n NS...]) [flags]

Forecasts the switch to DRA, then rehearses it on a real control plane with the forecast fleet:
every pod created at once through claimbridge, kube-scheduler left to settle, each workload's
pods bound beside the pods the forecast said are served. Exit code 1 when a workload is bound
otherwise than forecast (an OrderDependent or Partial workload agrees when the pods bound lie
within the range the forecast gave, "1–2/2").

Flags:
`)
		flag.PrintDefaults()
	}
	flag.Parse()
	o.Files, o.Fleets, o.Profiles, o.Classes, o.Namespaces, o.Presets = files, fleets, profiles, classes, namespaces, presets
	o.Progress = os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := Rehearse(ctx, o)
	if err != nil {
		return 2, err
	}
	if err := res.Report.Write(os.Stdout, o.Output); err != nil {
		return 2, err
	}
	fmt.Fprintf(os.Stderr, "rehearse: %s\n", res.Timings)
	if res.Disagree > 0 {
		return 1, nil
	}
	if errors.Is(context.Cause(ctx), context.Canceled) {
		return 2, context.Cause(ctx)
	}
	return 0, nil
}
