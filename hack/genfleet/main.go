// Command genfleet writes device inventories (fleets) as Kubernetes YAML.
//
//	go run ./hack/genfleet                          # regenerate examples/fleets/* and the placement corpus's fleets
//	go run ./hack/genfleet -nodes 1000 -out DIR     # a synthetic fleet of 1000 nodes in DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
)

func main() {
	out := flag.String("out", "examples/fleets", "output directory; shipped fleets go to <out>/<name>, a synthetic fleet directly to <out>")
	corpus := flag.String("corpus", "feasibility/testdata/placement/fleets", "output directory of the placement corpus's fleets (<corpus>/<name>); empty to skip")
	nodes := flag.Int("nodes", 0, "if > 0, write one synthetic fleet of this many nodes instead of the shipped fleets")
	flag.Parse()
	if err := run(*out, *corpus, *nodes); err != nil {
		fmt.Fprintln(os.Stderr, "genfleet:", err)
		os.Exit(1)
	}
}

func run(out, corpus string, nodes int) error {
	if nodes > 0 {
		return fleetgen.Write(out, fleetgen.Synthetic(nodes))
	}
	for _, f := range fleetgen.Shipped() {
		if err := fleetgen.Write(filepath.Join(out, f.Name), f); err != nil {
			return fmt.Errorf("fleet %s: %w", f.Name, err)
		}
	}
	if corpus == "" {
		return nil
	}
	for _, f := range fleetgen.Corpus() {
		if err := fleetgen.Write(filepath.Join(corpus, f.Name), f); err != nil {
			return fmt.Errorf("fleet %s: %w", f.Name, err)
		}
	}
	return nil
}
