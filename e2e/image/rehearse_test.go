package image_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/claimbridge/claimbridge/e2e/image"
	"github.com/claimbridge/claimbridge/internal/k8sbins"
	"github.com/claimbridge/claimbridge/report"
)

// k8sBinEnv is the directory of the pinned control-plane binaries (`make e2e` sets it).
const k8sBinEnv = "CLAIMBRIDGE_K8S_BIN"

// hostPlatform is the platform whose rehearsal image `make image` builds.
var hostPlatform = v1.Platform{OS: "linux", Architecture: runtime.GOARCH}

// rehearsalImage opens the rehearsal image `make image` wrote beside the image
// (OUT/rehearse/oci), or builds one from the image and $CLAIMBRIDGE_K8S_BIN.
func rehearsalImage(t *testing.T) (v1.ImageIndex, v1.Image) {
	t.Helper()
	dir := filepath.Join(filepath.Dir(layoutDir), "rehearse", "oci")
	if _, err := os.Stat(dir); err != nil {
		bin := os.Getenv(k8sBinEnv)
		if bin == "" {
			t.Skipf("no rehearsal image in %s and no $%s to build one from", dir, k8sBinEnv)
		}
		idx, tag := openIndex(t)
		img, err := image.PlatformImage(idx, hostPlatform)
		if err != nil {
			t.Fatal(err)
		}
		r, err := image.BuildRehearsal(&image.Built{Images: map[string]v1.Image{image.PlatformString(hostPlatform): img}, Version: tag},
			map[string][]image.ControlPlane{image.PlatformString(hostPlatform): {{Release: k8sbins.Pinned().Kubernetes, Dir: bin}}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := image.Write(t.TempDir(), r)
		if err != nil {
			t.Fatal(err)
		}
		dir = out.Layout
	}
	idx, _, err := image.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.PlatformImage(idx, hostPlatform)
	if err != nil {
		t.Fatal(err)
	}
	return idx, img
}

// TestTheRehearsalImageCarriesAControlPlanePerMinor: the rehearsal image is the image of its
// platform, layer for layer, plus one layer of control planes, one per release its label
// names — the pinned one first, the very files of the pinned build ($CLAIMBRIDGE_K8S_BIN), and
// with `make image` one per minor claimbridge builds — each stamped where a build caches it,
// in the cache $CLAIMBRIDGE_CACHE points the rehearsal at.
func TestTheRehearsalImageCarriesAControlPlanePerMinor(t *testing.T) {
	_, img := rehearsalImage(t)
	base := platformImage(t, hostPlatform)
	baseLayers, err := base.Layers()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != len(baseLayers)+1 {
		t.Fatalf("%d layers, want the image's %d and one more", len(layers), len(baseLayers))
	}
	for i, l := range baseLayers {
		want, _ := l.Digest()
		if got, _ := layers[i].Digest(); got != want {
			t.Errorf("layer %d is %s, the image's is %s", i, got, want)
		}
	}
	files, err := image.Files(img)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	releases := strings.Fields(cf.Config.Labels[image.LabelKubernetesVersions])
	if len(releases) == 0 || releases[0] != k8sbins.Pinned().Kubernetes || cf.Config.Labels[image.LabelKubernetesVersion] != releases[0] {
		t.Fatalf("labels %q: want the pinned %s first", cf.Config.Labels, k8sbins.Pinned().Kubernetes)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(layoutDir), "rehearse", "oci")); err == nil && !slices.Equal(releases, k8sbins.Buildable()) {
		t.Errorf("make image's rehearsal image carries %v, want every release claimbridge builds, %v", releases, k8sbins.Buildable())
	}
	bin := os.Getenv(k8sBinEnv)
	for _, release := range releases {
		dir := image.BinDir(release)
		if findFile(files, path.Join(dir, k8sbins.StampFile)) == nil {
			t.Errorf("%s: no stamp: the cache would not take the directory as complete", dir)
		}
		for _, name := range image.RehearsalBinaries {
			f := findFile(files, path.Join(dir, name))
			if f == nil {
				t.Errorf("no %s in the image", path.Join(dir, name))
				continue
			}
			if f.Layer != len(baseLayers) || f.Header.Mode&0o111 == 0 || !bytes.HasPrefix(f.Data, []byte("\x7fELF")) {
				t.Errorf("%s: layer %d, mode %o: want an executable in the last layer", f.Header.Name, f.Layer, f.Header.Mode)
			}
			if bin == "" || release != releases[0] {
				continue
			}
			pinned, err := os.ReadFile(filepath.Join(bin, name))
			if err != nil {
				t.Fatal(err)
			}
			if sha256.Sum256(pinned) != sha256.Sum256(f.Data) {
				t.Errorf("%s is not the pinned build's %s", f.Header.Name, filepath.Join(bin, name))
			}
		}
	}
	if !slices.Contains(cf.Config.Env, k8sbins.CacheEnv+"="+image.CacheDir) {
		t.Errorf("env %q does not point the rehearsal at the cache %s", cf.Config.Env, image.CacheDir)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{image.BinaryPath}) || !slices.Equal(cf.Config.Cmd, []string{"rehearse", "--help"}) || cf.Config.User != image.User {
		t.Errorf("entrypoint %q, cmd %q, user %q", cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.User)
	}
}

func findFile(files []image.File, name string) *image.File {
	for i := range files {
		if "/"+path.Clean(files[i].Header.Name) == name && files[i].Header.Typeflag == tar.TypeReg {
			return &files[i]
		}
	}
	return nil
}

// TestTheRehearsalRunsFromTheImagesFilesystem runs `claimbridge rehearse` as the rehearsal
// image runs it, from its filesystem taken out of the layers: the image's binary, with the
// image's environment (its $CLAIMBRIDGE_CACHE, moved under the extracted root) and downloads
// off, on the cutover example, once per release the image carries. It finds that control
// plane in the image, downloads and builds nothing, and every workload is bound as forecast
// (exit 0).
func TestTheRehearsalRunsFromTheImagesFilesystem(t *testing.T) {
	_, img := rehearsalImage(t)
	files, err := image.Files(img)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, f := range files {
		dest := filepath.Join(root, filepath.FromSlash(path.Clean(f.Header.Name)))
		switch f.Header.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dest, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dest, f.Data, os.FileMode(f.Header.Mode)&0o755|0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// The image's environment, its paths under root; nothing of the harness's binaries.
	env := []string{"PATH=/usr/bin:/bin", "TMPDIR=" + t.TempDir()}
	for _, e := range cf.Config.Env {
		k, v, _ := strings.Cut(e, "=")
		if strings.HasPrefix(v, "/") {
			v = filepath.Join(root, v)
		}
		env = append(env, k+"="+v)
	}
	examples := filepath.Join(rootDir, "examples")
	for _, release := range strings.Fields(cf.Config.Labels[image.LabelKubernetesVersions]) {
		t.Run(release, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), filepath.Join(root, cf.Config.Entrypoint[0]), "rehearse",
				"-f", filepath.Join(examples, "cutover"), "--fleet", filepath.Join(examples, "fleets", "before-cutover"),
				"-o", "json", "--settle", "5s", "--settle-timeout", "3m", "--k8s-download=false", "--k8s-version", release)
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err = cmd.Run()
			t.Logf("claimbridge rehearse from the image's filesystem:\n%s", stderr.String())
			if err != nil {
				t.Fatalf("claimbridge rehearse: %v", err)
			}
			rep, err := report.Read(&stdout)
			if err != nil {
				t.Fatal(err)
			}
			if x := rep.Rehearsal; x == nil || x.Binaries != "cache" || x.Workloads == 0 || x.Disagree != 0 || x.Kubernetes != release {
				t.Errorf("the page's rehearsal: %+v; want the image's control plane of %s (cache), every workload as forecast", x, release)
			}
		})
	}
}
