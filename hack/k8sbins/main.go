// Command k8sbins builds, once, into claimbridge's cache, the control plane of a Kubernetes
// release claimbridge builds from its embedded Go modules (the minor before the pinned one by
// default; hack/e2e-bins.sh builds the pinned one), and prints its directory on the last line
// of stdout. `make image` puts it in the rehearsal image beside the pinned one.
//
//	go run ./hack/k8sbins [-k8s-version v1.36.3]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/claimbridge/claimbridge/internal/k8sbins"
)

func main() {
	buildable := k8sbins.Buildable()
	version := flag.String("k8s-version", buildable[len(buildable)-1], "the Kubernetes release to build (its minor's embedded modules)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir, release, err := k8sbins.Build(ctx, k8sbins.Options{Kubernetes: *version, Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8sbins:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "k8sbins: control plane %s in %s\n", release, dir)
	fmt.Fprintln(os.Stdout, dir)
}
