// Package layers checks the import rules between claimbridge's packages,
// with every dependency counted, direct or not (what `go list -deps` shows).
// It runs in `make test` and `make verify`.
package layers

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/claimbridge/claimbridge"

// rules: for a package (or a prefix ending in "/"), the packages of this
// module it may depend on; anything else of the module is forbidden. The
// layers, bottom up: reason (codes and catalog), podfacts (what a pod asks for) → api (names only) → api/v1alpha1 (the policy API) → translate/celgen (the CEL it writes), translate/gpulabels (GFD's and GKE's label strings) → translate (pure) → feasibility/identity (devices' identities held apart) → feasibility/signature (devices and nodes that answer alike), feasibility/upstream (Kubernetes behaviour mirrored; it depends on nothing), feasibility/allocview (the allocator's view of a node) → feasibility/legacy (the device plugin's side) → feasibility →
// decide → decisions (a decision's record), cutover (what the switch does) → forecast; report, explain (over records) → inventory, metrics → webhook,
// controllers, livereport; certs apart → internal → cmd. Test support
// lives in internal/testing/ and no product package depends on it
// (TestNoProductPackageUsesTestSupport).
var rules = []struct {
	pkg     string
	mayUse  []string
	because string
}{
	{"reason", nil, "the reason codes, their catalog and severities sit at the bottom: every layer says why with them"},
	{"podfacts", nil, "what a pod asks for, as Kubernetes reads it, is plain reading of API objects: every layer asks it there"},
	{"api", nil, "the names claimbridge writes into the cluster depend on nothing"},
	{"api/v1alpha1", []string{"podfacts", "api"}, "the policy API is plain types, their defaults and validation (an extended resource name is podfacts' reading)"},
	{"platform", []string{"podfacts", "api", "api/v1alpha1"}, "the platform model is facts with their sources, read from objects and documents: no client"},
	{"translate/celgen", []string{"podfacts", "api", "api/v1alpha1"}, "the CEL the translator writes (selectors, matchConditions) and its compile check: pure, no translation"},
	{"translate/gpulabels", []string{"podfacts", "api", "api/v1alpha1"}, "the GPU label vocabularies of GFD and GKE as strings: no policy, no translation"},
	{"translate", []string{"reason", "podfacts", "api", "api/v1alpha1", "platform", "translate/celgen", "translate/gpulabels"}, "the translator is the pure core"},
	{"feasibility/identity", nil, "the identities of devices held apart from their shared attribute maps: plain API objects, nothing of claimbridge"},
	{"feasibility/signature", []string{"reason", "podfacts", "api", "api/v1alpha1", "platform", "translate", "translate/celgen", "translate/gpulabels", "feasibility/identity"}, "when two devices or two nodes answer alike: what a selector reads, the memo of its answers, the class key of a node; no snapshot, no allocator"},
	{"feasibility/upstream", []string{"podfacts", "feasibility/identity"}, "what kube-apiserver and kube-scheduler do with pods, claims, slices and allocations, mirrored on plain API objects: it depends on nothing of claimbridge but the devices' identities"},
	{"feasibility/allocview", []string{"feasibility/identity"}, "the allocator's view of a node with the selectors answered: plain API objects and the upstream allocator, the answers given by its caller, the devices' identities read where they are held apart"},
	{"feasibility/legacy", []string{"reason", "podfacts", "api", "api/v1alpha1", "platform", "translate", "translate/celgen", "translate/gpulabels", "feasibility/identity", "feasibility/upstream"}, "the device plugin's side: the legacy view of a node, the pod as submitted and its fallbacks, what the device plugins offer; no snapshot, no allocator"},
	{"feasibility", []string{"reason", "podfacts", "api", "api/v1alpha1", "platform", "translate", "translate/celgen", "translate/gpulabels", "feasibility/signature", "feasibility/identity", "feasibility/upstream", "feasibility/legacy", "feasibility/allocview"}, "feasibility runs the allocator over what translate produced"},
	{"cutover", nil, "what the switch does to a workload is plain data that the forecast fills and the report renders"},
	{"forecast", []string{"reason", "podfacts", "api", "api/v1alpha1", "platform", "cutover", "translate", "translate/celgen", "translate/gpulabels", "feasibility", "feasibility/signature", "feasibility/identity", "feasibility/upstream", "feasibility/legacy", "feasibility/allocview", "decide"}, "the forecast reads the vocabulary backwards into an inventory, and judges decide's decisions against it"},
	{"decide", []string{"reason", "podfacts", "api", "api/v1alpha1", "platform", "translate", "translate/celgen", "translate/gpulabels", "feasibility", "feasibility/signature", "feasibility/identity", "feasibility/upstream", "feasibility/legacy", "feasibility/allocview"}, "the one decision path sits right above translation and feasibility"},
	{"decisions", []string{"reason", "podfacts", "api", "api/v1alpha1", "platform", "decide", "translate", "translate/celgen", "translate/gpulabels", "feasibility", "feasibility/signature", "feasibility/identity", "feasibility/upstream", "feasibility/legacy", "feasibility/allocview"}, "a decision's record is data built from decide's decisions: no forecast, no rendering"},
	{"report", []string{"reason", "podfacts", "api", "api/v1alpha1", "platform", "decisions", "cutover", "decide", "translate", "translate/celgen", "translate/gpulabels", "feasibility", "feasibility/signature", "feasibility/identity", "feasibility/upstream", "feasibility/legacy", "feasibility/allocview"}, "the report only renders decision records and the cutover forecast's results"},
	{"explain", []string{"reason", "podfacts", "api", "api/v1alpha1", "platform", "decisions", "decide", "translate", "translate/celgen", "translate/gpulabels", "feasibility", "feasibility/signature", "feasibility/identity", "feasibility/upstream", "feasibility/legacy", "feasibility/allocview"}, "what a decision says is text over its record: no client, no cache, no forecast"},
	{"metrics", nil, "the metrics are plain Prometheus collectors"},
	{"inventory", []string{"reason", "podfacts", "api", "api/v1alpha1", "platform", "translate", "translate/celgen", "translate/gpulabels", "feasibility", "feasibility/signature", "feasibility/identity", "feasibility/upstream", "feasibility/legacy", "feasibility/allocview"}, "the informer caches feed feasibility; they know nothing of admission"},
	{"webhook", []string{"reason", "podfacts", "api", "api/v1alpha1", "platform", "explain", "inventory", "metrics", "decisions", "decide", "translate", "translate/celgen", "translate/gpulabels", "feasibility", "feasibility/signature", "feasibility/identity", "feasibility/upstream", "feasibility/legacy", "feasibility/allocview"}, "the admission handler is a thin edge: no controller, no live report, no import from internal/"},
	{"controllers", []string{"reason", "podfacts", "api", "api/v1alpha1", "platform", "explain", "inventory", "metrics", "decisions", "decide", "translate", "translate/celgen", "translate/gpulabels", "feasibility", "feasibility/signature", "feasibility/identity", "feasibility/upstream", "feasibility/legacy", "feasibility/allocview"}, "the leader's controllers read the inventory and say what admission decided; never the handler"},
	{"livereport", []string{"reason", "podfacts", "api", "api/v1alpha1", "platform", "explain", "inventory", "decisions", "cutover", "report", "decide", "translate", "translate/celgen", "translate/gpulabels", "feasibility", "feasibility/signature", "feasibility/identity", "feasibility/upstream", "feasibility/legacy", "feasibility/allocview"}, "the live report reads the inventory and the decisions pods carry; never the handler"},
	{"internal/testing/fleetgen", nil, "fleets are plain API objects"},
	{"certs", nil, "certificates know nothing of translation"},
	{"internal/k8sbins", nil, "finding, downloading and building the control-plane binaries knows nothing of claimbridge"},
	{"internal/controlplane", nil, "the local control plane runs Kubernetes' own binaries on plain API objects: it knows nothing of claimbridge"},
}

type pkg struct {
	ImportPath string
	Deps       []string
}

// modulePackages lists the module's packages with all their dependencies.
func modulePackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps=false", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(importPath string) string {
	return strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
}

func TestImportRules(t *testing.T) {
	checked := 0
	for _, p := range modulePackages(t) {
		name := rel(p.ImportPath)
		for _, r := range rules {
			if name != r.pkg {
				continue
			}
			checked++
			for _, d := range p.Deps {
				dep, ours := strings.CutPrefix(d, module+"/")
				if !ours || d == p.ImportPath {
					continue
				}
				if !slices.Contains(r.mayUse, dep) {
					t.Errorf("%s depends on %s; it may only use %v of this module (%s)", name, dep, r.mayUse, r.because)
				}
			}
		}
	}
	if checked != len(rules) {
		t.Errorf("checked %d packages, want %d (a package was renamed?)", checked, len(rules))
	}
}

// TestAdmissionNeverForecasts: the admission handler, the leader's
// controllers, the live report and what a decision says never forecast,
// so none of them depends, directly or not, on the forecast's machinery
// (package forecast); what the switch does to a workload is plain data in
// package cutover.
func TestAdmissionNeverForecasts(t *testing.T) {
	edge := []string{"webhook", "controllers", "livereport", "explain"}
	checked := 0
	for _, p := range modulePackages(t) {
		name := rel(p.ImportPath)
		if !slices.Contains(edge, name) {
			continue
		}
		checked++
		if slices.Contains(p.Deps, module+"/forecast") {
			t.Errorf("%s depends on forecast: admission and what it says never forecast", name)
		}
	}
	if checked != len(edge) {
		t.Errorf("checked %d packages, want %d (a package was renamed?)", checked, len(edge))
	}
}

// TestNoProductPackageUsesTestSupport: internal/testing/ holds builders,
// generated fleets, the placement corpus and the browser helpers; only tests,
// hack/ and the e2e module may use them, so none of it reaches the binary.
func TestNoProductPackageUsesTestSupport(t *testing.T) {
	for _, p := range modulePackages(t) {
		name := rel(p.ImportPath)
		if strings.HasPrefix(name, "internal/testing/") || strings.HasPrefix(name, "hack/") {
			continue
		}
		for _, d := range p.Deps {
			if dep, ours := strings.CutPrefix(d, module+"/"); ours && strings.HasPrefix(dep, "internal/testing/") {
				t.Errorf("%s depends on %s: test support is for tests, hack/ and e2e/ only", name, dep)
			}
		}
	}
}

// TestLayoutTableMatchesTree: every package of the module falls under one row
// of CONTRIBUTING.md's Layout table (hack/ aside), and every row names a folder
// that holds packages, so the table a newcomer reads is the tree.
func TestLayoutTableMatchesTree(t *testing.T) {
	contributing, err := os.ReadFile("../../CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(contributing), "### Layout\n")
	if !ok {
		t.Fatal("CONTRIBUTING.md has no Layout section")
	}
	var rows []string
	for line := range strings.Lines(section) {
		if strings.HasPrefix(line, "### ") || strings.HasPrefix(line, "## ") {
			break
		}
		if m := layoutRow.FindStringSubmatch(line); m != nil {
			rows = append(rows, m[1])
		}
	}
	if len(rows) == 0 {
		t.Fatal("CONTRIBUTING.md's Layout table has no rows")
	}
	used := map[string]bool{}
	for _, p := range modulePackages(t) {
		name := rel(p.ImportPath) + "/"
		if strings.HasPrefix(name, "hack/") {
			continue
		}
		best := ""
		for _, r := range rows {
			if strings.HasPrefix(name, r) && len(r) > len(best) {
				best = r
			}
		}
		if best == "" {
			t.Errorf("package %s is under no row of CONTRIBUTING.md's Layout table %v", name, rows)
			continue
		}
		used[best] = true
	}
	for _, r := range rows {
		if !used[r] {
			t.Errorf("CONTRIBUTING.md's Layout table names %s, which holds no package", r)
		}
	}
	for _, r := range rules {
		if !strings.HasPrefix(r.pkg, "internal/") && !slices.Contains(rows, r.pkg+"/") {
			t.Errorf("the import rule for %s has no row of its own in CONTRIBUTING.md's Layout table", r.pkg)
		}
	}
}

// layoutRow matches a row of the Layout table: | `folder/` | ...
var layoutRow = regexp.MustCompile("^\\| `([a-z0-9/]+/)` \\|")
