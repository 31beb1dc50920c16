// Package certmanager runs a real cert-manager next to an e2e control plane: the CRDs of the
// pinned release, its controller and its cainjector, built from cert-manager's Go modules by
// hack/cert-manager-bins.sh (see e2e/third_party/cert-manager). Its tests install the chart in
// cert-manager TLS mode and check that claimbridge serves with what cert-manager issues.
//
// There is no cert-manager webhook (it only validates and defaults cert-manager's own
// objects; the CRD schemas still apply) and no kubelet: SyncSecret plays the kubelet's part
// of projecting the serving certificate's Secret into claimbridge's certificate directory.
package certmanager

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/claimbridge/claimbridge/e2e/cluster"
)

// DirEnv names the environment variable that points the harness at a directory holding
// controller, cainjector and crds/. When it is unset the harness runs
// hack/cert-manager-bins.sh, which builds them once into a cache outside the repository.
const DirEnv = "CLAIMBRIDGE_CERT_MANAGER_BIN"

// Resources of cert-manager the tests read and write.
var (
	CertificateResource        = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	CertificateRequestResource = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificaterequests"}
	IssuerResource             = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "issuers"}
)

// ResolveDir returns the directory of the cert-manager binaries: $CLAIMBRIDGE_CERT_MANAGER_BIN
// if set, else the output of hack/cert-manager-bins.sh, whose progress goes to progress.
func ResolveDir(ctx context.Context, progress io.Writer) (string, error) {
	dir := os.Getenv(DirEnv)
	if dir == "" {
		root, err := cluster.RepoRoot()
		if err != nil {
			return "", fmt.Errorf("find the cert-manager binaries (or set %s): %w", DirEnv, err)
		}
		if dir, err = cluster.RunHackScript(ctx, root, "cert-manager-bins.sh", progress); err != nil {
			return "", err
		}
	}
	for _, f := range []string{"controller", "cainjector", "crds", "stamp"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return "", fmt.Errorf("cert-manager dir %s: %w", dir, err)
		}
	}
	return dir, nil
}

// CertManager is a running cert-manager.
type CertManager struct {
	// Dir holds the binaries and the CRDs.
	Dir string
	// Version is the release, from the stamp.
	Version string
	// Controller and CAInjector are the processes.
	Controller, CAInjector *cluster.Process
}

// Start installs the CRDs from dir/crds, waits until they are established, and starts the
// controller and the cainjector with the cluster's admin kubeconfig (leader election off,
// metrics and health on free loopback ports). The processes stop with the cluster.
func Start(ctx context.Context, c *cluster.Cluster, dir string) (*CertManager, error) {
	cm := &CertManager{Dir: dir}
	if stamp, err := os.ReadFile(filepath.Join(dir, "stamp")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(stamp))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "cert-manager "); ok {
				cm.Version = v
			}
		}
	}
	if err := applyCRDs(ctx, c, filepath.Join(dir, "crds")); err != nil {
		return nil, err
	}
	ports, err := cluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(c.Dir, "cert-manager-controller.yaml")
	// The healthz address has no flag; everything else is given as flags.
	if err := os.WriteFile(config, []byte(`apiVersion: controller.config.cert-manager.io/v1alpha1
kind: ControllerConfiguration
healthzListenAddress: 127.0.0.1:`+strconv.Itoa(ports[1])+`
`), 0o600); err != nil {
		return nil, err
	}
	cm.Controller, err = c.StartProcess("cert-manager-controller", filepath.Join(dir, "controller"), []string{
		"--config=" + config,
		"--kubeconfig=" + c.Kubeconfig,
		"--leader-elect=false",
		"--metrics-listen-address=127.0.0.1:" + strconv.Itoa(ports[0]),
		"--cluster-resource-namespace=kube-system",
		"--v=2",
	}, []string{"KUBECONFIG=" + c.Kubeconfig})
	if err != nil {
		return nil, err
	}
	cm.CAInjector, err = c.StartProcess("cert-manager-cainjector", filepath.Join(dir, "cainjector"), []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--leader-elect=false",
		"--metrics-listen-address=127.0.0.1:" + strconv.Itoa(ports[2]),
		"--v=2",
		// cainjector's own --kubeconfig flag hides controller-runtime's, which it reads;
		// controller-runtime also reads $KUBECONFIG.
	}, []string{"KUBECONFIG=" + c.Kubeconfig})
	if err != nil {
		return nil, err
	}
	return cm, nil
}

// applyCRDs creates every CustomResourceDefinition in dir and waits until each is
// established.
func applyCRDs(ctx context.Context, c *cluster.Cluster, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s", dir)
	}
	slices.Sort(files)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	crds := dyn.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("decode %s: %w", f, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			if _, err := crds.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create CRD %s: %w", obj.GetName(), err)
			}
			names = append(names, obj.GetName())
		}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, cluster.PollTimeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			u, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
				return false, err
			}
			established := slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			})
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
}
