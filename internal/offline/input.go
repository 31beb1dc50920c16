package offline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/translate"
)

// The offline front door: what translate, explain, audit and audit
// --forecast read, opened one way. The DeviceClasses the manifests ship
// (the DRA drivers' demos put them beside their pods) join the fleet
// everywhere, a class of the same name replacing the fleet's: the fleet
// an audit checks against, and the fleet a forecast starts from, whose
// classes stay after the switch unless the switch creates one of the same
// name. Without a fleet they are the classes KEP-5004 deference knows.

// Sources say where an offline run's input comes from.
type Sources struct {
	// Docs are the manifests.
	Docs []manifest.Document
	// FleetPaths are the fleet's YAML files or directories (--fleet).
	FleetPaths []string
	// Cluster is the live cluster's inventory, read when no FleetPaths
	// are given (audit --kubeconfig).
	Cluster *feasibility.Inventory
	// Source names the fleet in the report (the paths, or "cluster").
	Source string
	// Timeout is the deadline of one check.
	Timeout time.Duration
}

// Input is an offline run's input, opened.
type Input struct {
	Docs []manifest.Document
	// Fleet is the inventory the manifests are checked against, with the
	// manifests' DeviceClasses joined; nil without one.
	Fleet  *feasibility.Inventory
	Source string
	// Classes are the manifests' own DeviceClasses; Quotas their
	// ResourceQuotas, by namespace.
	Classes []*resourceapi.DeviceClass
	Quotas  map[string][]*corev1.ResourceQuota
	Timeout time.Duration
}

// Open reads the fleet, when there is one, and gathers what the manifests
// ship. An error means a fleet file is unreadable or invalid.
func Open(s Sources) (*Input, error) {
	in := &Input{Docs: s.Docs, Fleet: s.Cluster, Source: s.Source, Classes: ClassesOf(s.Docs), Quotas: QuotasOf(s.Docs), Timeout: s.Timeout}
	if len(s.FleetPaths) > 0 {
		inv, err := feasibility.LoadInventory(s.FleetPaths...)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		if err := notEmpty(inv, s.FleetPaths); err != nil {
			return nil, err
		}
		in.Fleet = inv
	}
	if in.Fleet != nil {
		in.Fleet = in.Fleet.WithClasses(in.Classes...)
	}
	return in, nil
}

// notEmpty refuses a fleet that holds no Node, ResourceSlice or
// DeviceClass: checked against it, every row would be NeverFits for a
// missing class, which says nothing of the cluster (a wrong directory, a
// file of manifests given as the fleet).
func notEmpty(inv *feasibility.Inventory, paths []string) error {
	if len(inv.Nodes)+len(inv.Slices)+len(inv.Classes) > 0 {
		return nil
	}
	msg := fmt.Sprintf("fleet %s: no Node, ResourceSlice or DeviceClass in it (a fleet is the cluster's nodes, slices and classes: kubectl get nodes,resourceslices,deviceclasses -o yaml)", strings.Join(paths, ", "))
	if n := len(inv.Ignored); n > 0 {
		msg += fmt.Sprintf("; %d documents of other kinds left out, the first %s", n, inv.Ignored[0])
	}
	return errors.New(msg)
}

// Deadline bounds a whole run: Timeout for each document.
func (in *Input) Deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, in.Timeout*time.Duration(max(1, len(in.Docs))))
}

// Check opens the fleet for checks (a snapshot and a checker with Timeout);
// nil without a fleet.
func (in *Input) Check() (*feasibility.Fleet, error) {
	if in.Fleet == nil {
		return nil, nil
	}
	fleet, err := feasibility.NewFleet(in.Fleet, feasibility.Options{Timeout: in.Timeout})
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return fleet, nil
}

// Options are Translate's options for this input under policy, checked
// against fleet when it is not nil.
func (in *Input) Options(policy *translate.Policy, fleet *feasibility.Fleet) Options {
	opts := Options{Policy: policy, Classes: in.Classes, Quotas: in.Quotas}
	if fleet != nil {
		opts.Classes, opts.Snapshot, opts.Checker = fleet.Inventory.Classes, fleet.Snapshot, fleet.Checker
	}
	return opts
}
