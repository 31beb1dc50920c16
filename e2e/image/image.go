// Package image builds claimbridge's container image without a container engine, and opens
// it again for the tests and for the e2e harness, which runs the binary taken out of it.
//
// The image is built from an empty base with go-containerregistry: a distroless-style root
// filesystem (passwd and group with the nonroot user 65532, nsswitch.conf, an empty /tmp and
// home, no shell and no other program), and the static binary cross-compiled for each
// platform (CGO_ENABLED=0, -trimpath, version and commit stamped). The result is an OCI image
// index in an OCI image layout (what `crane push` and `skopeo copy --all` read) and a
// docker-style tarball per platform (`docker load`, `kind load image-archive`).
//
// Builds are reproducible: every file time and the created time are the commit's time (or
// SOURCE_DATE_EPOCH), so one commit always gives the same digests. The Dockerfile at the
// repository root builds the equivalent image with a container engine.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

// What the image is.
const (
	// Repository is the image's name, the chart's default image.repository.
	Repository = "ghcr.io/claimbridge/claimbridge"
	// Source is the repository the image is built from (org.opencontainers.image.source).
	Source = "https://github.com/claimbridge/claimbridge"
	// BinaryPath is the binary's path in the image, the entrypoint.
	BinaryPath = "/usr/local/bin/claimbridge"
	// User is the user and group the image runs as: distroless' nonroot.
	User = "65532:65532"
	// Description is org.opencontainers.image.description.
	Description = "Mutating admission webhook that moves GPU, TPU and NIC pods onto Kubernetes DRA"
)

// Label keys (OCI image spec, annotations.md).
const (
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelSource      = "org.opencontainers.image.source"
	LabelURL         = "org.opencontainers.image.url"
	LabelCreated     = "org.opencontainers.image.created"
	// RefName annotates the index's entry in the layout's index.json with the tag.
	RefName = "org.opencontainers.image.ref.name"
)

// DefaultPlatforms are the platforms `make image` builds.
var DefaultPlatforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64"},
}

// Options of Build. Every field has a default.
type Options struct {
	// Root is the repository root. Default: found from the working directory (see RepoRoot).
	Root string
	// Version is stamped into the binary and labels the image. Default: the chart's
	// appVersion, so that the chart runs an image that reports the version it names.
	Version string
	// Commit is stamped into the binary (org.opencontainers.image.revision). Default: the
	// checkout's HEAD, with "-dirty" when tracked files differ from it.
	Commit string
	// Created is the time of every file and of the image. Default: $SOURCE_DATE_EPOCH, else
	// the commit's time, else the Unix epoch.
	Created time.Time
	// Platforms to build. Default: DefaultPlatforms.
	Platforms []v1.Platform
	// Progress receives one line per step. Default: discarded.
	Progress io.Writer
}

// Built is a built image.
type Built struct {
	// Repository is the image's name. Default: Repository.
	Repository string
	// Index is the multi-platform image index.
	Index v1.ImageIndex
	// Images by platform ("linux/amd64").
	Images map[string]v1.Image
	// Version, Commit and Created as stamped.
	Version, Commit string
	Created         time.Time
}

// Tag is the image's tag: the version.
func (b *Built) Tag() string { return b.Version }

// Name is the image's repository (Repository by default).
func (b *Built) Name() string {
	if b.Repository == "" {
		return Repository
	}
	return b.Repository
}

// sortedKeys are the platforms of an image map, sorted.
func sortedKeys(m map[string]v1.Image) []string { return slices.Sorted(maps.Keys(m)) }

// Build cross-compiles cmd/claimbridge for every platform and assembles the image index.
func Build(ctx context.Context, o Options) (*Built, error) {
	if err := o.defaults(ctx); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "claimbridge-image-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(work) }()

	base, err := baseLayer(o.Created)
	if err != nil {
		return nil, err
	}
	b := &Built{Images: map[string]v1.Image{}, Version: o.Version, Commit: o.Commit, Created: o.Created}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.Platforms {
		start := time.Now()
		bin := filepath.Join(work, "claimbridge-"+p.OS+"-"+p.Architecture)
		if err := buildBinary(ctx, o, p, bin); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Progress, "image: built the %s binary in %.0f s\n", PlatformString(p), time.Since(start).Seconds())
		img, err := platformImage(o, p, base, bin)
		if err != nil {
			return nil, err
		}
		b.Images[PlatformString(p)] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}},
		})
	}
	b.Index = mutate.Annotations(idx, annotations(o)).(v1.ImageIndex)
	return b, nil
}

func (o *Options) defaults(ctx context.Context) error {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Root == "" {
		root, err := RepoRoot()
		if err != nil {
			return err
		}
		o.Root = root
	}
	if o.Version == "" {
		v, err := ChartAppVersion(o.Root)
		if err != nil {
			return err
		}
		o.Version = v
	}
	commit, at := gitHead(ctx, o.Root)
	if o.Commit == "" {
		o.Commit = commit
	}
	if o.Created.IsZero() {
		o.Created = at
		if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
			sec, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
			}
			o.Created = time.Unix(sec, 0)
		}
	}
	o.Created = o.Created.UTC()
	if len(o.Platforms) == 0 {
		o.Platforms = DefaultPlatforms
	}
	return nil
}

// PlatformString is "os/arch[/variant]".
func PlatformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// LDFlags are the linker flags of the binary in the image.
func LDFlags(version, commit string) string {
	return fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s", version, commit)
}

func buildBinary(ctx context.Context, o Options, p v1.Platform, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-mod=readonly",
		"-ldflags", LDFlags(o.Version, o.Commit), "-o", out, "./cmd/claimbridge")
	cmd.Dir = o.Root
	// Pinned so that the environment cannot change the binary (reproducible builds).
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture,
		"GOAMD64=v1", "GOARM64=v8.0", "GOWORK=off", "GOFLAGS=")
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build claimbridge for %s: %w\n%s", PlatformString(p), err, output)
	}
	return nil
}

func annotations(o Options) map[string]string {
	return map[string]string{
		LabelTitle:       "claimbridge",
		LabelDescription: Description,
		LabelVersion:     o.Version,
		LabelRevision:    o.Commit,
		LabelSource:      Source,
		LabelURL:         Source,
		LabelCreated:     o.Created.Format(time.RFC3339),
	}
}

func platformImage(o Options, p v1.Platform, base v1.Layer, bin string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	binLayer, err := newLayer([]entry{
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(BinaryPath, "/"), mode: 0o555, data: data},
	}, o.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Variant:      p.Variant,
		Created:      v1.Time{Time: o.Created},
		Config: v1.Config{
			User:       User,
			Entrypoint: []string{BinaryPath},
			WorkingDir: "/",
			// No PATH: nothing in the image to look up; the entrypoint is absolute.
			Labels: annotations(o),
		},
	})
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{
			Created: v1.Time{Time: o.Created}, CreatedBy: "claimbridge e2e/image: root filesystem (passwd, group, nsswitch.conf, /tmp, /home/nonroot)",
		}},
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer, History: v1.History{
			Created: v1.Time{Time: o.Created}, CreatedBy: "claimbridge e2e/image: go build -trimpath -ldflags '" + LDFlags(o.Version, o.Commit) + "' ./cmd/claimbridge",
		}},
	)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, annotations(o)).(v1.Image), nil
}

// entry is one file of a layer.
type entry struct {
	name     string
	mode     int64
	uid, gid int
	dir      bool
	data     []byte
}

// baseLayer is the root filesystem of distroless' static image, reduced to what a static Go
// binary reads: the nonroot user and group, nsswitch.conf for the pure-Go resolver, /tmp and
// the home directory. No CA bundle: claimbridge talks only to kube-apiserver, with the
// ServiceAccount's CA.
func baseLayer(created time.Time) (v1.Layer, error) {
	return newLayer([]entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: 65532, gid: 65532, dir: true},
		{name: "root/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}, created)
}

func newLayer(entries []entry, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: mtime, Format: tar.FormatPAX,
			Uname: userName(e.uid), Gname: userName(e.gid),
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

func userName(id int) string {
	if id == 65532 {
		return "nonroot"
	}
	return "root"
}

// Output is what Write wrote.
type Output struct {
	// Layout is the OCI image layout directory: index.json names the image index by its tag
	// (org.opencontainers.image.ref.name).
	Layout string
	// Tarballs are the docker-style tarballs by platform ("linux/amd64").
	Tarballs map[string]string
}

// Write writes the image into dir: dir/oci (the OCI image layout) and
// dir/<name>-<version>-<os>-<arch>.tar per platform, <name> the last element of its
// repository (claimbridge, claimbridge-rehearse). Whatever dir held is replaced.
func Write(dir string, b *Built) (*Output, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	out := &Output{Layout: filepath.Join(dir, "oci"), Tarballs: map[string]string{}}
	p, err := layout.Write(out.Layout, empty.Index)
	if err != nil {
		return nil, fmt.Errorf("write the image layout: %w", err)
	}
	if err := p.AppendIndex(b.Index, layout.WithAnnotations(map[string]string{RefName: b.Tag()})); err != nil {
		return nil, fmt.Errorf("write the image layout: %w", err)
	}
	ref, err := name.NewTag(b.Name() + ":" + b.Tag())
	if err != nil {
		return nil, err
	}
	for plat, img := range b.Images {
		file := filepath.Join(dir, path.Base(b.Name())+"-"+b.Version+"-"+strings.ReplaceAll(plat, "/", "-")+".tar")
		if err := tarball.WriteToFile(file, ref, img); err != nil {
			return nil, fmt.Errorf("write %s: %w", file, err)
		}
		out.Tarballs[plat] = file
	}
	return out, nil
}

// Open reads the image index that Write put into an OCI image layout, and its tag.
func Open(layoutDir string) (v1.ImageIndex, string, error) {
	top, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		return nil, "", fmt.Errorf("open image layout %s: %w", layoutDir, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		return nil, "", fmt.Errorf("image layout %s: want one image index in index.json, have %d entries", layoutDir, len(m.Manifests))
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return nil, "", err
	}
	return idx, m.Manifests[0].Annotations[RefName], nil
}

// PlatformImage returns the index's image for p.
func PlatformImage(idx v1.ImageIndex, p v1.Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == p.OS && d.Platform.Architecture == p.Architecture && d.Platform.Variant == p.Variant {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("the image index has no %s image", PlatformString(p))
}

// File is one entry of an image's layers.
type File struct {
	Header *tar.Header
	// Layer is the index of the layer that holds it.
	Layer int
	// Data is the content of a regular file.
	Data []byte
}

// Files lists every entry of every layer, in layer order.
func Files(img v1.Image) ([]File, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	var out []File
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				_ = rc.Close()
				return nil, fmt.Errorf("layer %d: %w", i, err)
			}
			f := File{Header: h, Layer: i}
			if h.Typeflag == tar.TypeReg {
				if f.Data, err = io.ReadAll(tr); err != nil {
					_ = rc.Close()
					return nil, err
				}
			}
			out = append(out, f)
		}
		if err := rc.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ExtractBinary writes the claimbridge binary of the layout's image for p to dest
// (mode 0755) — what a container runtime would execute.
func ExtractBinary(layoutDir string, p v1.Platform, dest string) error {
	idx, _, err := Open(layoutDir)
	if err != nil {
		return err
	}
	img, err := PlatformImage(idx, p)
	if err != nil {
		return err
	}
	files, err := Files(img)
	if err != nil {
		return err
	}
	want := strings.TrimPrefix(BinaryPath, "/")
	for _, f := range files {
		if path.Clean(f.Header.Name) == want && f.Header.Typeflag == tar.TypeReg {
			if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
				return err
			}
			return os.WriteFile(dest, f.Data, 0o755)
		}
	}
	return fmt.Errorf("no %s in the %s image", BinaryPath, PlatformString(p))
}

// ChartAppVersion is the appVersion of charts/claimbridge/Chart.yaml under root.
func ChartAppVersion(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "charts", "claimbridge", "Chart.yaml"))
	if err != nil {
		return "", fmt.Errorf("read the chart's version: %w", err)
	}
	var meta struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return "", fmt.Errorf("read the chart's version: %w", err)
	}
	if meta.AppVersion == "" {
		return "", errors.New("read the chart's version: Chart.yaml has no appVersion")
	}
	return meta.AppVersion, nil
}

// gitHead returns the checkout's HEAD ("-dirty" appended when tracked files changed) and its
// commit time; "unknown" and the Unix epoch outside a git checkout.
func gitHead(ctx context.Context, root string) (string, time.Time) {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	commit, err := git("rev-parse", "HEAD")
	if err != nil || commit == "" {
		return "unknown", time.Unix(0, 0)
	}
	at := time.Unix(0, 0)
	if s, err := git("log", "-1", "--format=%ct", "HEAD"); err == nil {
		if sec, err := strconv.ParseInt(s, 10, 64); err == nil {
			at = time.Unix(sec, 0)
		}
	}
	if status, err := git("status", "--porcelain", "--untracked-files=no"); err == nil && status != "" {
		commit += "-dirty"
	}
	return commit, at
}

// RepoRoot is the repository root: the nearest directory at or above the working directory
// with charts/claimbridge/Chart.yaml and a go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "charts", "claimbridge", "Chart.yaml")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no repository root (charts/claimbridge/Chart.yaml and go.mod) at or above the working directory")
		}
		dir = parent
	}
}
