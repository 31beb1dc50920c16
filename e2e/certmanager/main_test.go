package certmanager_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/claimbridge/claimbridge/e2e/binary"
	"github.com/claimbridge/claimbridge/e2e/certmanager"
	"github.com/claimbridge/claimbridge/e2e/chart"
	"github.com/claimbridge/claimbridge/e2e/cluster"
)

var (
	tc *cluster.Cluster
	cm *certmanager.CertManager
	// dyn reads and writes cert-manager's objects.
	dyn dynamic.Interface
	// packaged is the chart as `helm package` writes it; the tests install that archive.
	packaged string
	// bin is the claimbridge binary taken out of the container image.
	bin     string
	rootDir string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	if err != nil {
		return fail(err)
	}
	rootDir = root
	dir, err := certmanager.ResolveDir(ctx, os.Stderr)
	if err != nil {
		return fail(err)
	}
	c, err := cluster.New(ctx, cluster.Options{Progress: os.Stderr, ServiceNetwork: true})
	if err != nil {
		return fail(fmt.Errorf("start cluster: %w", err))
	}
	defer c.Stop()
	tc = c
	if dyn, err = dynamic.NewForConfig(c.RESTConfig()); err != nil {
		return fail(err)
	}
	if cm, err = certmanager.Start(ctx, c, dir); err != nil {
		fmt.Fprintln(os.Stderr, c.LogTail(100))
		return fail(fmt.Errorf("start cert-manager: %w", err))
	}
	fmt.Fprintf(os.Stderr, "cert-manager %s running (controller, cainjector) from %s\n", cm.Version, dir)
	if packaged, err = chart.Package(c.Dir); err != nil {
		return fail(err)
	}
	if bin, err = binary.FromImage(ctx, c.Dir); err != nil {
		return fail(err)
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, c.LogTail(150))
	}
	return code
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, err)
	return 1
}
