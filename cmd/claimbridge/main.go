// Command claimbridge moves legacy GPU/TPU/NIC workloads onto Dynamic
// Resource Allocation: an admission webhook (serve) and offline tools
// (translate, explain, audit, report, policy, krm). The commands are in
// package cli.
package main

import (
	"os"

	"github.com/claimbridge/claimbridge/cmd/claimbridge/cli"
)

// Set at build time by `make build` and `make image`:
//
//	-ldflags "-X main.version=0.1.0 -X main.commit=<git commit>[-dirty]"
//
// The version is the chart's appVersion (charts/claimbridge/Chart.yaml), so that the image
// the chart runs by default reports the version the chart names.
var (
	version = "dev"
	commit  = ""
)

func main() {
	cli.Stamp.Version, cli.Stamp.Commit = version, commit
	os.Exit(cli.Main())
}
