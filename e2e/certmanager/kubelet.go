package certmanager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/e2e/cluster"
)

// SecretVolume projects a Secret into a directory the way the kubelet projects a Secret
// volume (its AtomicWriter): each key a file in a new timestamped directory, the ..data
// symlink switched to it with one rename, and a symlink per key through ..data — so that a
// reader sees the old or the new set of files, never a mix. The kubelet resyncs a mounted
// Secret within about a minute; this one polls every 200 ms, so that the timings measure
// cert-manager and claimbridge rather than the resync period.
type SecretVolume struct {
	Dir string

	client          kubernetes.Interface
	namespace, name string
	mode            os.FileMode

	mu    sync.Mutex
	syncs []VolumeSync
	err   error
	done  chan struct{}
}

// VolumeSync is one projection of the Secret.
type VolumeSync struct {
	ResourceVersion string
	At              time.Time
}

// StartSecretVolume projects namespace/name into dir with file mode mode until ctx ends.
func StartSecretVolume(ctx context.Context, client kubernetes.Interface, namespace, name, dir string, mode os.FileMode) (*SecretVolume, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	v := &SecretVolume{Dir: dir, client: client, namespace: namespace, name: name, mode: mode, done: make(chan struct{})}
	go v.run(ctx)
	return v, nil
}

func (v *SecretVolume) run(ctx context.Context) {
	defer close(v.done)
	last := ""
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		s, err := v.client.CoreV1().Secrets(v.namespace).Get(ctx, v.name, metav1.GetOptions{})
		if err == nil && s.ResourceVersion != last {
			if err := v.project(s.Data); err != nil {
				v.mu.Lock()
				v.err = err
				v.mu.Unlock()
				return
			}
			last = s.ResourceVersion
			v.mu.Lock()
			v.syncs = append(v.syncs, VolumeSync{ResourceVersion: s.ResourceVersion, At: time.Now()})
			v.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// project writes data as the kubelet's AtomicWriter does.
func (v *SecretVolume) project(data map[string][]byte) error {
	ts, err := os.MkdirTemp(v.Dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(data)) {
		if err := os.WriteFile(filepath.Join(ts, k), data[k], v.mode); err != nil {
			return err
		}
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return err
	}
	old, _ := os.Readlink(filepath.Join(v.Dir, "..data"))
	tmpLink := filepath.Join(v.Dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(ts), tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, filepath.Join(v.Dir, "..data")); err != nil {
		return err
	}
	for k := range data {
		link := filepath.Join(v.Dir, k)
		if _, err := os.Lstat(link); errors.Is(err, fs.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", k), link); err != nil {
				return err
			}
		}
	}
	if old != "" && old != filepath.Base(ts) {
		return os.RemoveAll(filepath.Join(v.Dir, old))
	}
	return nil
}

// Syncs returns the projections so far and the error that stopped the projection, if any.
func (v *SecretVolume) Syncs() ([]VolumeSync, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.syncs), v.err
}

// Container is what the kubelet would run for the first container of a Deployment's pod
// template: its args and its environment, resolved.
type Container struct {
	Args []string
	Env  []string
	// Mounts maps each volume mount's path to its volume.
	Mounts map[string]corev1.Volume
}

// ContainerOf resolves the Deployment's first container: literal env values, the downward
// API fields a controller's pod reads (metadata.namespace, metadata.name, status.podIP: the
// loopback address the process runs on) and resource fields
// (limits.memory, as the kubelet writes them: a number of bytes). Anything else is an error,
// so that a chart change that needs more of the kubelet shows up here.
func ContainerOf(spec corev1.PodSpec, namespace, podName string) (*Container, error) {
	if len(spec.Containers) == 0 {
		return nil, fmt.Errorf("no containers")
	}
	c := spec.Containers[0]
	out := &Container{Args: slices.Clone(c.Args), Mounts: map[string]corev1.Volume{}}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			out.Env = append(out.Env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			out.Env = append(out.Env, e.Name+"="+namespace)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			out.Env = append(out.Env, e.Name+"="+podName)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			// The process runs on loopback.
			out.Env = append(out.Env, e.Name+"=127.0.0.1")
		case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			q, ok := c.Resources.Limits[corev1.ResourceMemory]
			if !ok {
				return nil, fmt.Errorf("env %s: no memory limit", e.Name)
			}
			out.Env = append(out.Env, e.Name+"="+strconv.FormatInt(q.Value(), 10))
		default:
			return nil, fmt.Errorf("env %s: unsupported source %+v", e.Name, e.ValueFrom)
		}
	}
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			return nil, fmt.Errorf("volume mount %s: no volume", m.Name)
		}
		out.Mounts[m.MountPath] = spec.Volumes[i]
	}
	return out, nil
}

// ServiceAccountKubeconfig writes a kubeconfig that authenticates as the ServiceAccount
// namespace/name with a token from the TokenRequest API, as the kubelet mounts one.
func ServiceAccountKubeconfig(ctx context.Context, c *cluster.Cluster, namespace, name, path string) error {
	tr, err := c.Client().CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for %s/%s: %w", namespace, name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CABundle()}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*cfg, path)
}
