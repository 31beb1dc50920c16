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
)

// The rehearsal image is the webhook's image with a layer of the control-plane binaries
// `claimbridge rehearse` runs, where the binary finds them ($CLAIMBRIDGE_K8S_BIN): with it,
// `docker run -v $PWD:/in IMAGE rehearse -f /in/... --fleet /in/...` downloads and builds
// nothing.
const (
	// RehearsalRepository is the rehearsal image's name.
	RehearsalRepository = Repository + "-rehearse"
	// K8sBinDir holds the control-plane binaries in the rehearsal image.
	K8sBinDir = "/opt/kubernetes/bin"
	// LabelKubernetesVersion names the Kubernetes release of the binaries it carries.
	LabelKubernetesVersion = "io.claimbridge.kubernetes.version"
)

// RehearsalBinaries are the control-plane binaries the rehearsal image carries.
var RehearsalBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// BuildRehearsal makes the rehearsal image of each platform of b that binDirs gives a
// directory of control-plane binaries for (by "os/arch"), all of the Kubernetes release
// k8sVersion: b's image of that platform, plus one layer of those binaries, with
// $CLAIMBRIDGE_K8S_BIN pointing at them and `rehearse --help` as the default command. A
// platform without binaries gets no rehearsal image; none at all is an error.
func BuildRehearsal(b *Built, binDirs map[string]string, k8sVersion string) (*Built, error) {
	r := &Built{Repository: RehearsalRepository, Images: map[string]v1.Image{}, Version: b.Version, Commit: b.Commit, Created: b.Created}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, plat := range sortedKeys(b.Images) {
		dir, ok := binDirs[plat]
		if !ok {
			continue
		}
		img, err := rehearsalImage(b.Images[plat], dir, k8sVersion, b.Created)
		if err != nil {
			return nil, fmt.Errorf("rehearsal image for %s: %w", plat, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		r.Images[plat] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}},
		})
	}
	if len(r.Images) == 0 {
		return nil, fmt.Errorf("rehearsal image: no control-plane binaries for any of the platforms built (%s)", strings.Join(sortedKeys(b.Images), ", "))
	}
	labels := map[string]string{LabelKubernetesVersion: k8sVersion}
	for k, v := range annotations(Options{Version: b.Version, Commit: b.Commit, Created: b.Created}) {
		labels[k] = v
	}
	labels[LabelTitle] = "claimbridge-rehearse"
	r.Index = mutate.Annotations(idx, labels).(v1.ImageIndex)
	return r, nil
}

// rehearsalImage is img with the binaries of dir in K8sBinDir.
func rehearsalImage(img v1.Image, dir, k8sVersion string, created time.Time) (v1.Image, error) {
	entries := []entry{{name: "opt/", mode: 0o755, dir: true}, {name: "opt/kubernetes/", mode: 0o755, dir: true}, {name: "opt/kubernetes/bin/", mode: 0o755, dir: true}}
	for _, name := range RehearsalBinaries {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("control-plane binary: %w", err)
		}
		entries = append(entries, entry{name: path.Join(strings.TrimPrefix(K8sBinDir, "/"), name), mode: 0o555, data: data})
	}
	layer, err := newLayer(entries, created)
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer, History: v1.History{
		Created: v1.Time{Time: created}, CreatedBy: "claimbridge e2e/image: the control plane of Kubernetes " + k8sVersion + " (" + strings.Join(RehearsalBinaries, ", ") + ")",
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	// The rehearsal writes its control plane's files under $TMPDIR (/tmp) and may cache
	// under $HOME.
	cf.Config.Env = append(cf.Config.Env, "CLAIMBRIDGE_K8S_BIN="+K8sBinDir, "HOME=/home/nonroot")
	cf.Config.Cmd = []string{"rehearse", "--help"}
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	cf.Config.Labels[LabelKubernetesVersion] = k8sVersion
	cf.Config.Labels[LabelTitle] = "claimbridge-rehearse"
	return mutate.ConfigFile(img, cf)
}
