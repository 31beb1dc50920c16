// Package layers checks the import rules between claimbridge's packages,
// with every dependency counted, direct or not (what `go list -deps` shows).
// It runs in `make test` and `make verify`.
package layers

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/claimbridge/claimbridge"

// rules: for a package (or a prefix ending in "/"), the packages of this
// module it may depend on; anything else of the module is forbidden. The
// layers, bottom up: translate (pure) → translate/feasibility → decide →
// report → webhook, certs → internal → cmd.
var rules = []struct {
	pkg     string
	mayUse  []string
	because string
}{
	{"translate", nil, "the translator is the pure core"},
	{"translate/feasibility", []string{"translate"}, "feasibility runs the allocator over what translate produced"},
	{"translate/feasibility/fleetgen", nil, "fleets are plain API objects"},
	{"decide", []string{"translate", "translate/feasibility"}, "the one decision path sits right above translation and feasibility"},
	{"report", []string{"decide", "translate", "translate/feasibility"}, "the report only renders decisions"},
	{"webhook", []string{"report", "decide", "translate", "translate/feasibility"}, "the webhook is a thin edge: no import from internal/"},
	{"certs", nil, "certificates know nothing of translation"},
}

type pkg struct {
	ImportPath string
	Deps       []string
}

func TestImportRules(t *testing.T) {
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
	checked := 0
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		for _, r := range rules {
			if rel != r.pkg {
				continue
			}
			checked++
			for _, d := range p.Deps {
				dep, ours := strings.CutPrefix(d, module+"/")
				if !ours || d == p.ImportPath {
					continue
				}
				if !slices.Contains(r.mayUse, dep) {
					t.Errorf("%s depends on %s; it may only use %v of this module (%s)", rel, dep, r.mayUse, r.because)
				}
			}
		}
	}
	if checked != len(rules) {
		t.Errorf("checked %d packages, want %d (a package was renamed?)", checked, len(rules))
	}
}
