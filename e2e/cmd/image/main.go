// Command image builds claimbridge's container image without a container engine (`make
// image`): an OCI image layout with a linux/amd64 + linux/arm64 index, and a docker-style
// tarball per platform. See package image.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/claimbridge/claimbridge/e2e/image"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	out := flag.String("o", "", "output directory (default: _output/image in the repository)")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	version := flag.String("version", "", "version to stamp (default: the chart's appVersion)")
	commit := flag.String("commit", "", "commit to stamp (default: the checkout's HEAD)")
	k8sBin := flag.String("k8s-bin", "", "directories of control-plane binaries (etcd, kube-apiserver, kube-controller-manager, kube-scheduler), comma-separated, the default release first, for this machine's linux platform: also build the rehearsal image of that platform into OUT/rehearse")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := image.Options{Version: *version, Commit: *commit, Progress: os.Stderr}
	for _, p := range strings.Split(*platforms, ",") {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok {
			return fmt.Errorf("-platforms: %q is not os/arch", p)
		}
		o.Platforms = append(o.Platforms, v1.Platform{OS: goos, Architecture: goarch})
	}
	root, err := image.RepoRoot()
	if err != nil {
		return err
	}
	o.Root = root
	if *out == "" {
		*out = filepath.Join(root, "_output", "image")
	}
	start := time.Now()
	fmt.Fprintf(os.Stderr, "image: building %s for %s (the first build compiles every dependency for each platform: minutes)\n", image.Repository, *platforms)
	b, err := image.Build(ctx, o)
	if err != nil {
		return err
	}
	w, err := image.Write(*out, b)
	if err != nil {
		return err
	}
	digest, err := b.Index.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "%s:%s (version %s, commit %s) in %.0f s\n", image.Repository, b.Tag(), b.Version, b.Commit, time.Since(start).Seconds())
	fmt.Fprintf(os.Stdout, "  index    %s\n", digest)
	for _, plat := range slices.Sorted(maps.Keys(b.Images)) {
		if err := printImage(b.Images[plat], plat, rel(root, w.Tarballs[plat])); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stdout, "  layout   %s\n", rel(root, w.Layout))
	fmt.Fprintf(os.Stdout, "push: crane push %s REGISTRY/claimbridge:%s\n", rel(root, w.Layout), b.Tag())
	fmt.Fprintf(os.Stdout, "  or: skopeo copy --all oci:%s:%s docker://REGISTRY/claimbridge:%s\n", rel(root, w.Layout), b.Tag(), b.Tag())
	if *k8sBin == "" {
		fmt.Fprintln(os.Stderr, "image: no -k8s-bin: no rehearsal image")
		return nil
	}
	return rehearsal(ctx, b, *k8sBin, filepath.Join(*out, "rehearse"), root)
}

// rehearsal builds and writes the rehearsal image of this machine's linux platform, with the
// control-plane binaries of each directory of bins (comma-separated, the default first).
func rehearsal(ctx context.Context, b *image.Built, bins, out, root string) error {
	start := time.Now()
	var planes []image.ControlPlane
	for _, bin := range strings.Split(bins, ",") {
		version, err := kubeVersion(ctx, bin)
		if err != nil {
			return err
		}
		planes = append(planes, image.ControlPlane{Release: version, Dir: bin})
	}
	plat := "linux/" + runtime.GOARCH
	if _, ok := b.Images[plat]; !ok {
		fmt.Fprintf(os.Stderr, "image: %s was not built: no rehearsal image\n", plat)
		return nil
	}
	var releases []string
	for _, p := range planes {
		fmt.Fprintf(os.Stderr, "image: adding the control plane of Kubernetes %s from %s to the %s image\n", p.Release, p.Dir, plat)
		releases = append(releases, p.Release)
	}
	r, err := image.BuildRehearsal(b, map[string][]image.ControlPlane{plat: planes})
	if err != nil {
		return err
	}
	w, err := image.Write(out, r)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "%s:%s (Kubernetes %s) in %.0f s\n", r.Name(), r.Tag(), strings.Join(releases, ", "), time.Since(start).Seconds())
	if err := printImage(r.Images[plat], plat, rel(root, w.Tarballs[plat])); err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "  layout   %s\n", rel(root, w.Layout))
	fmt.Fprintf(os.Stdout, "run: docker load -i %s && docker run --rm -v \"$PWD:/in\" %s:%s rehearse -f /in/examples/cutover --fleet /in/examples/fleets/before-cutover\n",
		rel(root, w.Tarballs[plat]), r.Name(), r.Tag())
	return nil
}

// printImage prints a platform's image: its digest, compressed size and tarball.
func printImage(img v1.Image, plat, tarball string) error {
	d, err := img.Digest()
	if err != nil {
		return err
	}
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	var size int64
	for _, l := range m.Layers {
		size += l.Size
	}
	fmt.Fprintf(os.Stdout, "  %-8s %s (%.1f MB compressed)  %s\n", plat, d, float64(size)/1e6, tarball)
	return nil
}

// kubeVersion is the release kube-apiserver of bin reports ("v1.37.2").
func kubeVersion(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "kube-apiserver"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("-k8s-bin %s: kube-apiserver --version: %w", bin, err)
	}
	f := strings.Fields(string(out)) // "Kubernetes v1.37.2"
	if len(f) != 2 || !strings.HasPrefix(f[1], "v") {
		return "", fmt.Errorf("-k8s-bin %s: kube-apiserver --version says %q", bin, strings.TrimSpace(string(out)))
	}
	return f[1], nil
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}
