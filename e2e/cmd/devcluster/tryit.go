package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// exampleWorkloads are the workloads of examples/workloads the try-it commands may suggest,
// in the order they are preferred: a Deployment of L4 inference first, as the docs tell it,
// then what shows a fleet best (MIG, TPU, GPU shares).
var exampleWorkloads = []string{"inference-l4.yaml", "notebook-mig.yaml", "tpu-statefulset.yaml", "batch-preferred.yaml", "training-dgx.yaml", "embeddings-shared.yaml"}

// tryIt is what the ready message suggests on a fleet.
type tryIt struct {
	// Forecast: the fleet has no DRA device (the day before a cutover): forecast the switch.
	Forecast bool
	// Workload is a file of examples/workloads whose pods the fleet's DRA devices serve, and
	// Namespace the namespace it names; "" when no example is served.
	Workload, Namespace string
}

// chooseTryIt decides the examples of the ready message for a fleet directory: a fleet with
// no DRA device suggests the cutover forecast; else the first example workload that the
// default policy translates against the fleet, as the webhook would decide it.
func chooseTryIt(ctx context.Context, root, fleetDir string) (tryIt, error) {
	in, err := offline.Open(offline.Sources{FleetPaths: []string{fleetDir}})
	if err != nil {
		return tryIt{}, fmt.Errorf("read fleet %s: %w", fleetDir, err)
	}
	fleet, err := in.Check()
	if err != nil {
		return tryIt{}, fmt.Errorf("read fleet %s: %w", fleetDir, err)
	}
	if fleet.Snapshot.DRADevices() == 0 {
		return tryIt{Forecast: true}, nil
	}
	for _, name := range exampleWorkloads {
		path := filepath.Join(root, "examples", "workloads", name)
		docs, err := manifest.Read([]string{path}, nil)
		if err != nil {
			return tryIt{}, err
		}
		items, _, err := offline.Translate(ctx, docs, offline.Options{Policy: translate.DefaultPolicy(), Classes: fleet.Inventory.Classes,
			Checker: fleet.Checker, Snapshot: fleet.Snapshot})
		if err != nil {
			return tryIt{}, fmt.Errorf("decide %s: %w", path, err)
		}
		for _, it := range items {
			if it.Decision != nil && it.Decision.Outcome == reason.OutcomeTranslate {
				return tryIt{Workload: path, Namespace: it.Pod.Namespace}, nil
			}
		}
	}
	return tryIt{}, nil
}

// commands are the try-it commands of the ready message.
func (t tryIt) commands(root, reportURL, curl string) string {
	var b strings.Builder
	switch {
	case t.Forecast:
		fmt.Fprintf(&b, `  # 1. the workloads of the day before the switch, in namespaces that audit them
  kubectl apply -f %s

  # 2. forecast what the switch to DRA does to each, from the cluster's nodes and workloads
  claimbridge audit --forecast --kubeconfig "$KUBECONFIG" -o table
  claimbridge audit --forecast --kubeconfig "$KUBECONFIG" -o html > cutover.html   # open it in a browser

  # 3. opt the namespaces in, then switch the nodes to DRA as the forecast says: every pod is
  #    recreated at once, and each workload's pods bound are printed beside the forecast's
  kubectl label namespace research lab inference claimbridge.io/mode=enforce --overwrite
  make dev-cluster-switch
`, filepath.Join(root, "examples", "cutover"))
	case t.Workload != "":
		fmt.Fprintf(&b, `  # 1. opt a namespace in and apply a legacy workload this fleet's DRA devices serve
  kubectl create namespace %[1]s && kubectl label namespace %[1]s claimbridge.io/mode=enforce
  kubectl apply -f %[2]s

  # 2. watch the pods get translated (a claimbridge claim, no extended resource) and bound
  kubectl -n %[1]s get pods -o wide && kubectl -n %[1]s get resourceclaims,resourceclaimtemplates
  kubectl -n %[1]s get resourceclaims -o jsonpath='{range .items[*]}{.status.allocation.devices.results}{"\n"}{end}'
`, t.Namespace, t.Workload)
	default:
		fmt.Fprintf(&b, `  # 1. no workload of %s is served by this fleet's DRA devices: opt a namespace in and
  #    apply one that asks for what the slices offer
  kubectl get resourceslices -o wide && kubectl get deviceclasses
  kubectl create namespace demo && kubectl label namespace demo claimbridge.io/mode=enforce
`, filepath.Join(root, "examples", "workloads"))
	}
	step := 3
	switch {
	case t.Forecast:
		step = 4 // the switch before it
	case t.Workload == "":
		step = 2 // one step before it
	}
	fmt.Fprintf(&b, `
  # %d. read the report of what claimbridge decided, as a table or as the readiness page
  #    (HTTPS, for readers kube-apiserver authorizes, as the chart serves it)
  TOKEN=$(kubectl -n %s create token %s)
  %s '%s?format=table'
  %s '%s?format=html' > report.html   # open it in a browser
  kubectl get policyreports -A   # the same, one PolicyReport per opted-in namespace, a result per workload
`, step, namespace, readerName, curl, reportURL, curl, reportURL)
	return b.String()
}
