// Package k8sbins finds the control-plane binaries a local control plane runs (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler), in this order:
//
//  1. a directory given (--k8s-bin), then $KUBEBUILDER_ASSETS (envtest's layout, with
//     kube-controller-manager and kube-scheduler added), then $CLAIMBRIDGE_K8S_BIN;
//  2. a complete directory of the cache: one downloaded before, or one built from Go modules
//     (what hack/e2e-bins.sh builds);
//  3. the official release binaries, downloaded into the cache and verified against the
//     checksums their projects publish (Download);
//  4. a build from the embedded Go modules with the go toolchain (Build), when downloading is
//     refused or fails: the pinned release, or the one of the minor before it (Buildable).
//
// The cache is $CLAIMBRIDGE_CACHE, else os.UserCacheDir()/claimbridge. A cache directory is
// complete when its stamp file exists: everything is fetched or built into a directory next
// to it and renamed into place once verified, under a lock file that two runs share.
package k8sbins

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// Environment variables that name a directory of binaries or the cache.
const (
	AssetsEnv = "KUBEBUILDER_ASSETS"
	BinDirEnv = "CLAIMBRIDGE_K8S_BIN"
	CacheEnv  = "CLAIMBRIDGE_CACHE"
)

// Where the official binaries are published.
const (
	// DefaultKubernetesURL serves <v>/bin/<os>/<arch>/<name> and <name>.sha512.
	DefaultKubernetesURL = "https://dl.k8s.io/release"
	// DefaultEtcdURL serves <v>/etcd-<v>-<os>-<arch>.tar.gz and <v>/SHA256SUMS.
	DefaultEtcdURL = "https://github.com/etcd-io/etcd/releases/download"
)

// Required are the binaries a control plane runs.
var Required = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// Options of Find. The zero value looks in the environment and the cache, then downloads
// the pinned versions from the official sites.
type Options struct {
	// Dir is a directory of the binaries given by the user; it must hold all of Required.
	Dir string
	// Kubernetes is the release to run, vMAJOR.MINOR.PATCH. Default: Pinned().Kubernetes.
	Kubernetes string
	// NoDownload refuses downloading: the cache, else a build. Default: false.
	NoDownload bool
	// KubernetesURL and EtcdURL are the download sites (a mirror's). Defaults:
	// DefaultKubernetesURL, DefaultEtcdURL.
	KubernetesURL, EtcdURL string
	// CacheDir is the cache. Default: $CLAIMBRIDGE_CACHE, else os.UserCacheDir()/claimbridge.
	CacheDir string
	// Progress receives what is found, downloaded or built, and how far it is.
	// Default: discarded.
	Progress io.Writer
	// Client downloads. Default: an http.Client without an overall timeout (a download
	// may take minutes; a stalled one is reported every ProgressEvery).
	Client *http.Client
	// ProgressEvery is how often a download or a build says how far it is. Default: 5 s.
	ProgressEvery time.Duration
	// Attempts: how often a download is tried, each resuming the last. Default: 3.
	Attempts int
}

// Found is the directory Find chose.
type Found struct {
	// Dir holds the binaries.
	Dir string
	// Kubernetes is their release (in a directory given, what kube-apiserver --version
	// says; "" when it says none).
	Kubernetes string
	// How says where they come from: "--k8s-bin", "$KUBEBUILDER_ASSETS",
	// "$CLAIMBRIDGE_K8S_BIN", "cache", "download" or "build".
	How string
}

// Find returns a directory holding the Required binaries (see the package comment).
func Find(ctx context.Context, o Options) (Found, error) {
	o = o.withDefaults()
	for _, given := range []struct{ dir, how string }{{o.Dir, "--k8s-bin"}, {os.Getenv(AssetsEnv), "$" + AssetsEnv}, {os.Getenv(BinDirEnv), "$" + BinDirEnv}} {
		if given.dir == "" {
			continue
		}
		if err := complete(given.dir); err != nil {
			return Found{}, fmt.Errorf("%s=%s: %w", given.how, given.dir, err)
		}
		v := versionOf(ctx, given.dir)
		fmt.Fprintf(o.Progress, "k8sbins: control-plane binaries %s from %s (%s)\n", cmp.Or(v, "of unknown release"), given.how, given.dir)
		return Found{Dir: given.dir, Kubernetes: v, How: given.how}, nil
	}
	if o.CacheDir == "" {
		return Found{}, errors.New("no cache directory: set $" + CacheEnv)
	}
	// The release asked for, downloaded or built; then the release of its minor a build
	// makes, built before (a patch release does not change what the control plane does).
	cached := []struct{ dir, release string }{{o.downloadDir(), o.Kubernetes}, {o.buildDir(), o.Kubernetes}}
	if v, _ := buildable(o.Kubernetes); v != "" && v != o.Kubernetes {
		same := o
		same.Kubernetes = v
		cached = append(cached, struct{ dir, release string }{same.buildDir(), v})
	}
	for _, c := range cached {
		if _, err := os.Stat(filepath.Join(c.dir, stampFile)); err == nil && complete(c.dir) == nil {
			fmt.Fprintf(o.Progress, "k8sbins: control plane %s cached in %s\n", c.release, c.dir)
			return Found{Dir: c.dir, Kubernetes: c.release, How: "cache"}, nil
		}
	}
	var downloadErr error
	if !o.NoDownload {
		dir, err := Download(ctx, o)
		if err == nil {
			return Found{Dir: dir, Kubernetes: o.Kubernetes, How: "download"}, nil
		}
		if ctx.Err() != nil {
			return Found{}, err
		}
		downloadErr = err
		fmt.Fprintf(o.Progress, "k8sbins: download failed: %v; building from Go modules instead\n", err)
	}
	dir, release, err := Build(ctx, o)
	if err != nil {
		return Found{}, errors.Join(downloadErr, err)
	}
	return Found{Dir: dir, Kubernetes: release, How: "build"}, nil
}

func (o Options) withDefaults() Options {
	if o.Kubernetes == "" {
		o.Kubernetes = Pinned().Kubernetes
	}
	if o.KubernetesURL == "" {
		o.KubernetesURL = DefaultKubernetesURL
	}
	if o.EtcdURL == "" {
		o.EtcdURL = DefaultEtcdURL
	}
	if o.CacheDir == "" {
		o.CacheDir = CacheDir()
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 5 * time.Second
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	return o
}

// CacheDir is $CLAIMBRIDGE_CACHE, else os.UserCacheDir()/claimbridge ("" when neither is
// known).
func CacheDir() string {
	if d := os.Getenv(CacheEnv); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "claimbridge")
}

// downloadDir is where the official binaries of o's release go.
func (o Options) downloadDir() string {
	return filepath.Join(o.CacheDir, "k8s", "release", fmt.Sprintf("%s-etcd-%s-%s-%s", o.Kubernetes, Pinned().Etcd, runtime.GOOS, runtime.GOARCH))
}

// buildDir is where a build from the pinned modules goes, as hack/e2e-bins.sh names it.
func (o Options) buildDir() string {
	return filepath.Join(o.CacheDir, CacheSubdir(o.Kubernetes))
}

// CacheSubdir is the directory of the cache, relative to it, where the control plane of a
// Kubernetes release is built (and found); the rehearsal image carries its control planes
// there.
func CacheSubdir(release string) string {
	return filepath.Join("k8s", fmt.Sprintf("%s-etcd-%s", release, Pinned().Etcd))
}

// StampFile marks a complete cache directory.
const StampFile = "stamp"

const stampFile = StampFile

// complete checks that dir holds every Required binary.
func complete(dir string) error {
	for _, b := range Required {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil {
			return fmt.Errorf("no %s: %w", b, err)
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not an executable file", filepath.Join(dir, b))
		}
	}
	return nil
}

// versionOf is the release kube-apiserver --version of dir reports ("Kubernetes v1.37.2"),
// "" when it says none.
func versionOf(ctx context.Context, dir string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "kube-apiserver"), "--version").Output()
	if err != nil {
		return ""
	}
	v, err := ReleaseOf(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes")))
	if err != nil {
		return ""
	}
	return v
}

var releaseVersion = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)`)

// ReleaseOf is the Kubernetes release vMAJOR.MINOR.PATCH of a server's gitVersion
// ("v1.36.4-eks-1a2b3c" and "v1.36.4+k3s1" are v1.36.4): the official binaries of the
// cluster's own version.
func ReleaseOf(gitVersion string) (string, error) {
	m := releaseVersion.FindStringSubmatch(gitVersion)
	if m == nil {
		return "", fmt.Errorf("server version %q: not vMAJOR.MINOR.PATCH", gitVersion)
	}
	return fmt.Sprintf("v%s.%s.%s", m[1], m[2], m[3]), nil
}
