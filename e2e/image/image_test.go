package image_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/claimbridge/claimbridge/e2e/image"
)

// ImageEnv is the environment variable `make e2e` sets to the layout `make image` wrote;
// without it the tests build the image themselves (both platforms) into a temporary
// directory.
const imageEnv = "CLAIMBRIDGE_IMAGE"

var (
	layoutDir string
	rootDir   string
)

func TestMain(m *testing.M) {
	root, err := image.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rootDir = root
	layoutDir = os.Getenv(imageEnv)
	if layoutDir == "" {
		dir, err := os.MkdirTemp("", "claimbridge-image-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		b, err := image.Build(context.Background(), image.Options{Progress: os.Stderr})
		if err == nil {
			var out *image.Output
			out, err = image.Write(dir, b)
			if out != nil {
				layoutDir = out.Layout
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		code := m.Run()
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func openIndex(t *testing.T) (v1.ImageIndex, string) {
	t.Helper()
	idx, tag, err := image.Open(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	return idx, tag
}

func platformImage(t *testing.T, p v1.Platform) v1.Image {
	t.Helper()
	idx, _ := openIndex(t)
	img, err := image.PlatformImage(idx, p)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func appVersion(t *testing.T) string {
	t.Helper()
	v, err := image.ChartAppVersion(rootDir)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestTheIndexServesAmd64AndArm64UnderTheChartsAppVersion(t *testing.T) {
	idx, tag := openIndex(t)
	if want := appVersion(t); tag != want {
		t.Errorf("layout tag %q, want the chart's appVersion %q", tag, want)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", m.MediaType, types.OCIImageIndex)
	}
	var got []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Errorf("manifest %s has no platform", d.Digest)
			continue
		}
		got = append(got, image.PlatformString(*d.Platform))
		if d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: media type %s, want %s", image.PlatformString(*d.Platform), d.MediaType, types.OCIManifestSchema1)
		}
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, got); diff != "" {
		t.Errorf("platforms (-want,+got):\n%s", diff)
	}
	if m.Annotations[image.LabelVersion] != tag || m.Annotations[image.LabelSource] != image.Source {
		t.Errorf("index annotations %v lack the version and the source", m.Annotations)
	}
}

// TestTheConfigRunsTheBinaryAsNonRootWithoutAShell checks what a container runtime reads:
// the user, the entrypoint, the labels, and that the filesystem holds no shell nor any program
// other than claimbridge.
func TestTheConfigRunsTheBinaryAsNonRootWithoutAShell(t *testing.T) {
	for _, p := range image.DefaultPlatforms {
		t.Run(image.PlatformString(p), func(t *testing.T) {
			img := platformImage(t, p)
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS != p.OS || cf.Architecture != p.Architecture {
				t.Errorf("config platform %s/%s", cf.OS, cf.Architecture)
			}
			c := cf.Config
			if c.User != "65532:65532" {
				t.Errorf("user %q, want 65532:65532 (non-root)", c.User)
			}
			if diff := cmp.Diff([]string{"/usr/local/bin/claimbridge"}, c.Entrypoint); diff != "" {
				t.Errorf("entrypoint (-want,+got):\n%s", diff)
			}
			if len(c.Cmd) != 0 || len(c.Env) != 0 || len(c.ExposedPorts) != 0 || len(c.Volumes) != 0 {
				t.Errorf("unexpected cmd %q, env %q, ports %v, volumes %v", c.Cmd, c.Env, c.ExposedPorts, c.Volumes)
			}
			wantLabels := map[string]string{
				image.LabelTitle: "claimbridge", image.LabelVersion: appVersion(t), image.LabelSource: image.Source,
			}
			for k, v := range wantLabels {
				if c.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
				}
			}
			if !regexp.MustCompile(`^([0-9a-f]{40}(-dirty)?|unknown)$`).MatchString(c.Labels[image.LabelRevision]) {
				t.Errorf("label %s = %q, want a commit", image.LabelRevision, c.Labels[image.LabelRevision])
			}

			files, err := image.Files(img)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range files {
				h := f.Header
				names = append(names, h.Name)
				if h.Mode&(04000|02000) != 0 {
					t.Errorf("%s is setuid or setgid", h.Name)
				}
				if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink {
					t.Errorf("%s is a link", h.Name)
				}
				if h.Typeflag == tar.TypeReg && h.Mode&0o111 != 0 && path.Clean(h.Name) != "usr/local/bin/claimbridge" {
					t.Errorf("%s is executable: the image holds one program", h.Name)
				}
				if writable := h.Mode&0o002 != 0; writable && h.Name != "tmp/" {
					t.Errorf("%s is world-writable", h.Name)
				}
				if h.Uid != 0 && h.Name != "home/nonroot/" {
					t.Errorf("%s is owned by %d: only the home directory belongs to the user", h.Name, h.Uid)
				}
			}
			want := []string{
				"etc/", "etc/passwd", "etc/group", "etc/nsswitch.conf", "home/", "home/nonroot/", "root/", "tmp/",
				"usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/claimbridge",
			}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("files (-want,+got):\n%s", diff)
			}
			for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
				if slices.Contains(names, shell) {
					t.Errorf("the image has a shell: %s", shell)
				}
			}
			passwd := fileData(t, files, "etc/passwd")
			if !bytes.Contains(passwd, []byte("nonroot:x:65532:65532:")) {
				t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", passwd)
			}
		})
	}
}

func fileData(t *testing.T, files []image.File, name string) []byte {
	t.Helper()
	for _, f := range files {
		if f.Header.Name == name {
			return f.Data
		}
	}
	t.Fatalf("no %s in the image", name)
	return nil
}

// TestTheBinaryInEachImageIsStaticAndStamped opens the binary in the layer: an ELF for the
// image's architecture with no interpreter and no shared library, built without cgo and with
// -trimpath, with the commit it is labelled with stamped in (the version too: see
// TestTheBinaryTakenOutOfTheImageReportsItsVersion).
func TestTheBinaryInEachImageIsStaticAndStamped(t *testing.T) {
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, p := range image.DefaultPlatforms {
		t.Run(image.PlatformString(p), func(t *testing.T) {
			files, err := image.Files(platformImage(t, p))
			if err != nil {
				t.Fatal(err)
			}
			data := fileData(t, files, "usr/local/bin/claimbridge")
			f, err := elf.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("not an ELF binary: %v", err)
			}
			if f.Machine != machines[p.Architecture] {
				t.Errorf("ELF machine %v, want %v", f.Machine, machines[p.Architecture])
			}
			for _, prog := range f.Progs {
				if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
					t.Errorf("dynamically linked: program header %v", prog.Type)
				}
			}
			if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
				t.Errorf("imported libraries %v (%v)", libs, err)
			}
			bi, err := buildinfo.Read(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			settings := map[string]string{}
			for _, s := range bi.Settings {
				settings[s.Key] = s.Value
			}
			for k, v := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": p.OS, "GOARCH": p.Architecture} {
				if settings[k] != v {
					t.Errorf("build setting %s = %q, want %q", k, settings[k], v)
				}
			}
			// -trimpath keeps -ldflags out of the build info; the stamped commit is in the data.
			cf, err := platformImage(t, p).ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if commit := cf.Config.Labels[image.LabelRevision]; !bytes.Contains(data, []byte(commit)) {
				t.Errorf("the binary does not hold the commit %s it is labelled with", commit)
			}
			if bi.Path != "github.com/claimbridge/claimbridge/cmd/claimbridge" {
				t.Errorf("main package %s", bi.Path)
			}
		})
	}
}

// TestTheBinaryTakenOutOfTheImageReportsItsVersion runs this machine's binary from the image.
func TestTheBinaryTakenOutOfTheImageReportsItsVersion(t *testing.T) {
	p := v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	bin := filepath.Join(t.TempDir(), "claimbridge")
	if err := image.ExtractBinary(layoutDir, p, bin); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("claimbridge version: %v\n%s", err, out)
	}
	idx, _ := openIndex(t)
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("claimbridge %s (commit %s, ", appVersion(t), m.Annotations[image.LabelRevision])
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("claimbridge version = %q, want it to start with %q", out, want)
	}
}

// TestTheLayoutPushesToARegistryAsOneMultiPlatformImage pushes the layout the way `crane
// push` does (remote.WriteIndex of its one index) to a registry on loopback, and pulls it
// back by tag and by platform.
func TestTheLayoutPushesToARegistryAsOneMultiPlatformImage(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	idx, tag := openIndex(t)
	ref, err := name.NewTag(u.Host+"/claimbridge/claimbridge:"+tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx, remote.WithContext(t.Context())); err != nil {
		t.Fatalf("push: %v", err)
	}
	pulled, err := remote.Index(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	got, _ := pulled.Digest()
	if want != got {
		t.Errorf("pulled index %s, pushed %s", got, want)
	}
	for _, p := range image.DefaultPlatforms {
		img, err := remote.Image(ref, remote.WithContext(t.Context()), remote.WithPlatform(p))
		if err != nil {
			t.Fatalf("pull %s: %v", image.PlatformString(p), err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != p.Architecture {
			t.Errorf("pulled %s for %s", cf.Architecture, image.PlatformString(p))
		}
	}
}

// TestTheDockerTarballsLoadAsTheChartsDefaultImage reads the docker-style tarballs back (what
// `docker load` reads): each holds the platform's image under the chart's default name.
func TestTheDockerTarballsLoadAsTheChartsDefaultImage(t *testing.T) {
	idx, tag := openIndex(t)
	for _, p := range image.DefaultPlatforms {
		file := filepath.Join(filepath.Dir(layoutDir), "claimbridge-"+tag+"-"+p.OS+"-"+p.Architecture+".tar")
		ref, err := name.NewTag(image.Repository + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(file, &ref)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		want, err := image.PlatformImage(idx, p)
		if err != nil {
			t.Fatal(err)
		}
		wantCfg, _ := want.ConfigName()
		gotCfg, _ := img.ConfigName()
		if wantCfg != gotCfg {
			t.Errorf("%s: config %s, the index's %s image has %s", file, gotCfg, image.PlatformString(p), wantCfg)
		}
	}
}

// TestTheBuildIsReproducible builds this machine's image again and gets the same digest as
// the image under test, when both are built from a clean checkout of the same commit.
func TestTheBuildIsReproducible(t *testing.T) {
	idx, _ := openIndex(t)
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(m.Annotations[image.LabelRevision], "-dirty") {
		t.Skip("the image under test was built from a modified checkout")
	}
	p := v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	b, err := image.Build(t.Context(), image.Options{Platforms: []v1.Platform{p}})
	if err != nil {
		t.Fatal(err)
	}
	if b.Commit != m.Annotations[image.LabelRevision] {
		t.Skipf("the image under test is of commit %s, the checkout is at %s", m.Annotations[image.LabelRevision], b.Commit)
	}
	want, err := image.PlatformImage(idx, p)
	if err != nil {
		t.Fatal(err)
	}
	wantDigest, _ := want.Digest()
	gotDigest, _ := b.Images[image.PlatformString(p)].Digest()
	if wantDigest != gotDigest {
		t.Errorf("rebuilt %s image %s, want %s", image.PlatformString(p), gotDigest, wantDigest)
	}
}

// goModVersion is the major.minor of the product's go directive.
func goModVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(rootDir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1])
}

// TestTheDockerfileBuildsTheSameImage checks that the Dockerfile, for builders with a
// container engine, agrees with the daemonless build: a Go release of go.mod's version, a
// distroless nonroot base, the user, the entrypoint, the binary
// path, the build flags and every label.
func TestTheDockerfileBuildsTheSameImage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(rootDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	// Join continuation lines.
	df = strings.ReplaceAll(df, "\\\n", " ")
	var instr []string
	sc := bufio.NewScanner(strings.NewReader(df))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			instr = append(instr, strings.Join(strings.Fields(line), " "))
		}
	}
	has := func(prefix string) bool {
		return slices.ContainsFunc(instr, func(s string) bool { return strings.HasPrefix(s, prefix) })
	}
	want := []string{
		"FROM gcr.io/distroless/static-debian12:nonroot",
		"USER " + image.User,
		`ENTRYPOINT ["` + image.BinaryPath + `"]`,
		"COPY --from=build --chmod=0555 /out/claimbridge " + image.BinaryPath,
	}
	if goVersion := goModVersion(t); !has("ARG GO_VERSION=" + goVersion + ".") {
		t.Errorf("the Dockerfile's GO_VERSION is not a Go %s release, the go.mod's version", goVersion)
	}
	for _, w := range want {
		if !has(w) {
			t.Errorf("Dockerfile has no %q", w)
		}
	}
	if !strings.Contains(df, "CGO_ENABLED=0") || !strings.Contains(df, "-trimpath") ||
		!strings.Contains(df, `-ldflags "`+image.LDFlags("${VERSION}", "${COMMIT}")+`"`) {
		t.Error("the Dockerfile does not build the binary with the image's flags (CGO_ENABLED=0, -trimpath, the ldflags)")
	}
	for k, v := range map[string]string{
		image.LabelTitle: "claimbridge", image.LabelDescription: image.Description, image.LabelVersion: "${VERSION}",
		image.LabelRevision: "${COMMIT}", image.LabelSource: image.Source, image.LabelURL: image.Source,
	} {
		if !strings.Contains(df, k+`="`+v+`"`) {
			t.Errorf("the Dockerfile lacks the label %s=%q", k, v)
		}
	}
}
