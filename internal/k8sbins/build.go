package k8sbins

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// modules are the Go modules the binaries are built from: the same go.mod, go.sum and
// source files as e2e/tools/{kube,etcd,kubectl}, which hack/e2e-bins.sh builds (a test keeps
// them equal). They are stored as .txt files: a directory with a go.mod would be a module of
// its own, which go:embed does not reach into.
//
//go:embed modules
var modules embed.FS

// Versions are the releases the modules pin.
type Versions struct {
	Kubernetes, Kubectl, Etcd string
}

// Pinned are the releases of the embedded modules: k8s.io/kubernetes, k8s.io/kubectl
// (tagged v0.x for release v1.x) and go.etcd.io/etcd/server/v3.
func Pinned() Versions {
	return Versions{
		Kubernetes: required("kube", "k8s.io/kubernetes"),
		Kubectl:    "v1." + strings.TrimPrefix(required("kubectl", "k8s.io/kubectl"), "v0."),
		Etcd:       required("etcd", "go.etcd.io/etcd/server/v3"),
	}
}

// required is the version module dir's go.mod requires of mod ("" when none).
func required(dir, mod string) string {
	data, err := modules.ReadFile(path.Join("modules", dir, "go.mod.txt"))
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[0] == "require" && f[1] == mod {
			return f[2]
		}
		if len(f) >= 2 && f[0] == mod {
			return f[1]
		}
	}
	return ""
}

// build is one go build of a module.
type build struct {
	module, label string
	version       string // the -X version stamps; "" for none
	packages      []string
}

// Buildable are the Kubernetes releases a build from Go modules makes, one per minor: the
// pinned release (modules/kube) and the earlier minor (modules/kube-vMAJOR.MINOR), whose DRA
// feature gates differ. Newest first.
func Buildable() []string {
	out := []string{Pinned().Kubernetes}
	entries, _ := modules.ReadDir("modules")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "kube-v") {
			out = append(out, required(e.Name(), "k8s.io/kubernetes"))
		}
	}
	return out
}

// buildable is the release a build makes for release: the one Buildable has of its minor
// (a patch release does not change what the control plane does with DRA), and the module it
// is built from; "" when no module of that minor is embedded.
func buildable(release string) (version, module string) {
	if release == Pinned().Kubernetes || sameMinor(release, Pinned().Kubernetes) {
		return Pinned().Kubernetes, "kube"
	}
	for _, v := range Buildable()[1:] {
		if sameMinor(release, v) {
			return v, "kube-" + minorOf(v)
		}
	}
	return "", ""
}

// minorOf is "v1.36" of "v1.36.3".
func minorOf(release string) string {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return release
	}
	return parts[0] + "." + parts[1]
}

func sameMinor(a, b string) bool { return minorOf(a) == minorOf(b) }

// Build builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl from
// the embedded modules with the go toolchain on PATH into the cache directory hack/e2e-bins.sh
// uses, and returns it and the release built: the one Buildable has of o.Kubernetes' minor.
// A cold build of the pinned release took 857 s on 2 cores with empty Go caches and needs about
// 1 GB of module cache and 6 GB of build cache; the other minor's kube-* took 246 s more with
// Go's caches warm from the first.
func Build(ctx context.Context, o Options) (dir, release string, err error) {
	o = o.withDefaults()
	pinned := Pinned()
	release, module := buildable(o.Kubernetes)
	if release == "" {
		return "", "", fmt.Errorf("a build from Go modules makes %s only, no release of %s: download the binaries or give them with --k8s-bin", strings.Join(Buildable(), " and "), minorOf(o.Kubernetes))
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", "", fmt.Errorf("build the control plane: no go toolchain on PATH (%w): download the binaries or give them with --k8s-bin", err)
	}
	if release != o.Kubernetes {
		fmt.Fprintf(o.Progress, "k8sbins: no build of %s: building %s, the release of minor %s claimbridge pins\n", o.Kubernetes, release, minorOf(release))
	}
	o.Kubernetes = release
	dir = o.buildDir()
	dir, err = intoCache(dir, false, func(tmp string) error {
		fmt.Fprintf(o.Progress, "k8sbins: building the control plane %s (etcd %s) from Go modules into %s: three go builds, 857 s measured on 2 cores with empty Go caches\n", release, pinned.Etcd, dir)
		began := time.Now()
		builds := []build{
			{"etcd", "[1/3] etcd " + pinned.Etcd, "", []string{"."}},
			{"kubectl", "[2/3] kubectl " + pinned.Kubectl, pinned.Kubectl, []string{"."}},
			{module, "[3/3] kube-scheduler, kube-controller-manager, kube-apiserver " + release, release,
				[]string{"k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kube-controller-manager", "k8s.io/kubernetes/cmd/kube-apiserver"}},
		}
		for _, b := range builds {
			if err := runBuild(ctx, o, goBin, tmp, b, began); err != nil {
				return err
			}
		}
		stamp := fmt.Sprintf("kubernetes %s\nkubectl %s\netcd %s\nbuilt %s in %.0f s by claimbridge\n", release, pinned.Kubectl, pinned.Etcd,
			time.Now().UTC().Format(time.RFC3339), time.Since(began).Seconds())
		return os.WriteFile(filepath.Join(tmp, stampFile), []byte(stamp), 0o600)
	})
	return dir, release, err
}

// runBuild writes one module into a temporary directory and builds its packages into out,
// saying every ProgressEvery (at least every 30 s) how long it has taken.
func runBuild(ctx context.Context, o Options, goBin, out string, b build, began time.Time) error {
	src, err := os.MkdirTemp("", "claimbridge-k8s-module-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(src) }()
	entries, err := modules.ReadDir(path.Join("modules", b.module))
	if err != nil {
		return err
	}
	for _, e := range entries {
		data, err := modules.ReadFile(path.Join("modules", b.module, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(src, strings.TrimSuffix(e.Name(), ".txt")), data, 0o600); err != nil {
			return err
		}
	}
	ldflags := "-s -w"
	if b.version != "" {
		// kube-* read their version from component-base, kubectl's client side from
		// client-go too; without these they report v0.0.0-master.
		minor := strings.Split(b.version, ".")[1]
		ldflags += fmt.Sprintf(" -X k8s.io/component-base/version.gitVersion=%s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=%s -X k8s.io/client-go/pkg/version.gitVersion=%s", b.version, minor, b.version)
	}
	args := append([]string{"build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out + string(os.PathSeparator)}, b.packages...)
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	fmt.Fprintf(o.Progress, "k8sbins: building %s\n", b.label)
	start := time.Now()
	done := make(chan struct{})
	every := min(o.ProgressEvery*6, 30*time.Second)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(o.Progress, "k8sbins:   still building %s (%.0f s; %.0f s in all)\n", b.label, time.Since(start).Seconds(), time.Since(began).Seconds())
			}
		}
	}()
	err = cmd.Run()
	close(done)
	if err != nil {
		return fmt.Errorf("build %s: %w\n%s", b.label, err, tail(output.Bytes(), 2000))
	}
	fmt.Fprintf(o.Progress, "k8sbins: built %s in %.0f s\n", b.label, time.Since(start).Seconds())
	return nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// copyTo writes r to path, executable.
func copyTo(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
