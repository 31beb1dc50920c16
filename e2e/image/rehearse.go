package image

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/claimbridge/claimbridge/internal/k8sbins"
)

// The rehearsal image is the webhook's image with a layer of the control planes
// `claimbridge rehearse` runs, one per Kubernetes minor it builds (k8sbins.Buildable), in the
// cache the binary looks in ($CLAIMBRIDGE_CACHE), each where a build would have put it: with
// it, `docker run -v $PWD:/in IMAGE rehearse -f /in/... --fleet /in/...` downloads and builds
// nothing, and `rehearse --kubeconfig` of a cluster of either minor runs that minor.
const (
	// RehearsalRepository is the rehearsal image's name.
	RehearsalRepository = Repository + "-rehearse"
	// CacheDir is the rehearsal image's $CLAIMBRIDGE_CACHE: CacheDir/k8s/<release>-etcd-<etcd>/
	// holds the control plane of a release.
	CacheDir = "/opt/claimbridge/cache"
	// LabelKubernetesVersion names the Kubernetes release a rehearsal runs by default (the
	// pinned one); LabelKubernetesVersions every release the image carries, space-separated.
	LabelKubernetesVersion  = "io.claimbridge.kubernetes.version"
	LabelKubernetesVersions = "io.claimbridge.kubernetes.versions"
)

// RehearsalBinaries are the control-plane binaries the rehearsal image carries of a release.
var RehearsalBinaries = k8sbins.Required

// ControlPlane is the directory of one release's control-plane binaries.
type ControlPlane struct {
	Release, Dir string
}

// BinDir is where the image holds the binaries of a release.
func BinDir(release string) string {
	return path.Join(CacheDir, filepath.ToSlash(k8sbins.CacheSubdir(release)))
}

// BuildRehearsal makes the rehearsal image of each platform of b that planes gives control
// planes for (by "os/arch"; the first is the default release): b's image of that platform,
// plus one layer of those binaries, with $CLAIMBRIDGE_CACHE pointing at them and `rehearse
// --help` as the default command. A platform without binaries gets no rehearsal image; none
// at all is an error.
func BuildRehearsal(b *Built, planes map[string][]ControlPlane) (*Built, error) {
	r := &Built{Repository: RehearsalRepository, Images: map[string]v1.Image{}, Version: b.Version, Commit: b.Commit, Created: b.Created}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var releases []string
	for _, plat := range sortedKeys(b.Images) {
		cps, ok := planes[plat]
		if !ok || len(cps) == 0 {
			continue
		}
		img, err := rehearsalImage(b.Images[plat], cps, b.Created)
		if err != nil {
			return nil, fmt.Errorf("rehearsal image for %s: %w", plat, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		releases = releasesOf(cps)
		r.Images[plat] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}},
		})
	}
	if len(r.Images) == 0 {
		return nil, fmt.Errorf("rehearsal image: no control-plane binaries for any of the platforms built (%s)", strings.Join(sortedKeys(b.Images), ", "))
	}
	labels := map[string]string{LabelKubernetesVersion: releases[0], LabelKubernetesVersions: strings.Join(releases, " ")}
	for k, v := range annotations(Options{Version: b.Version, Commit: b.Commit, Created: b.Created}) {
		labels[k] = v
	}
	labels[LabelTitle] = "claimbridge-rehearse"
	r.Index = mutate.Annotations(idx, labels).(v1.ImageIndex)
	return r, nil
}

func releasesOf(cps []ControlPlane) []string {
	out := make([]string, len(cps))
	for i, cp := range cps {
		out[i] = cp.Release
	}
	return out
}

// rehearsalImage is img with the binaries of each control plane in its BinDir, stamped as
// a complete cache directory.
func rehearsalImage(img v1.Image, cps []ControlPlane, created time.Time) (v1.Image, error) {
	var entries []entry
	seen := map[string]bool{}
	addDirs := func(p string) {
		var parts []string
		for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
			parts = append(parts, part)
			d := strings.Join(parts, "/") + "/"
			if !seen[d] {
				seen[d] = true
				entries = append(entries, entry{name: d, mode: 0o755, dir: true})
			}
		}
	}
	for _, cp := range cps {
		dir := BinDir(cp.Release)
		addDirs(dir)
		for _, name := range RehearsalBinaries {
			data, err := os.ReadFile(filepath.Join(cp.Dir, name))
			if err != nil {
				return nil, fmt.Errorf("control-plane binary of %s: %w", cp.Release, err)
			}
			entries = append(entries, entry{name: path.Join(strings.TrimPrefix(dir, "/"), name), mode: 0o555, data: data})
		}
		stamp := fmt.Sprintf("kubernetes %s\ncarried by the claimbridge rehearsal image\n", cp.Release)
		entries = append(entries, entry{name: path.Join(strings.TrimPrefix(dir, "/"), k8sbins.StampFile), mode: 0o444, data: []byte(stamp)})
	}
	layer, err := newLayer(entries, created)
	if err != nil {
		return nil, err
	}
	releases := releasesOf(cps)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer, History: v1.History{
		Created: v1.Time{Time: created}, CreatedBy: "claimbridge e2e/image: the control planes of Kubernetes " + strings.Join(releases, " and ") + " (" + strings.Join(RehearsalBinaries, ", ") + ")",
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	// The rehearsal writes its control plane's files under $TMPDIR (/tmp); the cache it reads
	// is the image's, read-only.
	cf.Config.Env = append(cf.Config.Env, k8sbins.CacheEnv+"="+CacheDir, "HOME=/home/nonroot")
	cf.Config.Cmd = []string{"rehearse", "--help"}
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	cf.Config.Labels[LabelKubernetesVersion] = releases[0]
	cf.Config.Labels[LabelKubernetesVersions] = strings.Join(releases, " ")
	cf.Config.Labels[LabelTitle] = "claimbridge-rehearse"
	return mutate.ConfigFile(img, cf)
}
