//go:build unix

package controlplane

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options configure a control plane. BinDir is required. The PKI, kubeconfigs, etcd data and
// component logs go to a new temporary directory (Cluster.Dir), which Stop removes unless
// KeepDir is set.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager and kube-scheduler of one
	// Kubernetes version (package k8sbins finds or fetches them). Required.
	BinDir string
	// KeepDir keeps Cluster.Dir after Stop, for inspection. Default: false.
	KeepDir bool
	// Progress receives one line per startup step. Default: discarded.
	Progress io.Writer
	// APIServerArgs are flags added to kube-apiserver's own, such as
	// --enable-admission-plugins or --egress-selector-config-file. Default: none.
	APIServerArgs []string
}

// Component names, in start order.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
)

// ServiceCIDR is the cluster's service IP range.
const ServiceCIDR = "10.0.0.0/24"

// Cluster is a control plane on loopback: etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler, with RBAC on and the Kubernetes defaults of its version (DRA included). It
// has no kubelet: nodes are API objects (AddNode) and devices are ResourceSlices (Publish).
type Cluster struct {
	// Kubeconfig is the path of the admin kubeconfig (system:masters).
	Kubeconfig string
	// Dir holds the cluster's files (see Options).
	Dir string
	// BinDir holds the binaries the cluster runs.
	BinDir string
	// Host is the apiserver's URL.
	Host string

	opts       Options
	ca         *authority
	restConfig *rest.Config
	client     kubernetes.Interface

	mu         sync.Mutex
	components []*component // start order

	stopOnce sync.Once
}

// New starts a cluster and returns once every component is ready: the apiserver answers
// /readyz, the controller-manager and the scheduler answer /healthz and the controller-manager
// has created the default ServiceAccount. ctx bounds the startup only; the processes run until
// Stop. On error nothing is left running.
func New(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.BinDir == "" {
		return nil, errors.New("no directory of control-plane binaries given")
	}
	binDir := opts.BinDir
	sweepStaleDirs()
	dir, err := os.MkdirTemp("", tempDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("create cluster dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, fmt.Errorf("write cluster dir owner: %w", err)
	}

	// Ports are picked free and released before the components bind them; another process
	// may take one in between. A start that fails on a taken port is retried on new ports.
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		c := &Cluster{Dir: dir, BinDir: binDir, opts: opts}
		err := c.start(ctx, attempt)
		if err == nil {
			return c, nil
		}
		lastErr = err
		retry := c.portTaken()
		c.stopComponents()
		if !retry {
			lastErr = fmt.Errorf("%w\n%s", err, c.LogTail(60))
			break
		}
		fmt.Fprintf(opts.Progress, "cluster: a port was taken, retrying (%v)\n", err)
	}
	if !opts.KeepDir {
		_ = os.RemoveAll(dir)
	}
	return nil, lastErr
}

const (
	tempDirPrefix = "claimbridge-controlplane-"
	ownerFile     = "owner.pid"
	// startTimeout bounds the whole startup (not a binary build); a cluster is normally
	// ready in about 10 seconds.
	startTimeout = 2 * time.Minute
)

// sweepStaleDirs removes the temporary directories of control planes whose process is gone:
// a process killed by a signal or a timeout runs no cleanup (its control plane dies with it,
// see spawn, but its files stay).
func sweepStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or still being set up
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// start runs one startup attempt in a fresh subdirectory.
func (c *Cluster) start(ctx context.Context, attempt int) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	begin := time.Now()
	progress := func(format string, args ...any) {
		fmt.Fprintf(c.opts.Progress, "cluster: %5.1fs "+format+"\n", append([]any{time.Since(begin).Seconds()}, args...)...)
	}

	dir := filepath.Join(c.Dir, "run-"+strconv.Itoa(attempt))
	if err := makeRunDir(dir); err != nil {
		return err
	}
	files, err := c.writePKI(filepath.Join(dir, "pki"))
	if err != nil {
		return err
	}
	ports, err := FreePorts(5)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort, kcmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4]
	c.Host = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	kubeconfigs, err := c.writeKubeconfigs(dir)
	if err != nil {
		return err
	}

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	if err := c.run(dir, Etcd,
		"--name=controlplane",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=controlplane="+peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	); err != nil {
		return err
	}
	if err := c.waitReady(ctx, Etcd, etcdHealthy(etcdURL+"/health")); err != nil {
		return err
	}
	progress("etcd ready on %s", etcdURL)

	apiserverFlags := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + filepath.Join(dir, "kube-apiserver"),
		"--tls-cert-file=" + files.apiserverCert,
		"--tls-private-key-file=" + files.apiserverKey,
		"--client-ca-file=" + files.caCert,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + files.saPublic,
		"--service-account-signing-key-file=" + files.saPrivate,
		"--service-cluster-ip-range=" + ServiceCIDR,
		// The default reconciler publishes the advertise address as the kubernetes Service's
		// endpoint and refuses a loopback one.
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		"--profiling=false",
	}
	apiserverFlags = append(apiserverFlags, c.opts.APIServerArgs...)
	if err := c.run(dir, KubeAPIServer, apiserverFlags...); err != nil {
		return err
	}
	if err := c.waitReady(ctx, KubeAPIServer, c.apiserverReady); err != nil {
		return err
	}
	progress("kube-apiserver ready on %s", c.Host)

	if err := c.run(dir, KubeControllerManager, append(componentArgs(dir, KubeControllerManager, kubeconfigs[KubeControllerManager], kcmPort),
		// Without a kubelet nothing would keep the nodes alive and there are no pod CIDRs.
		"--controllers=*,-node-lifecycle-controller,-node-ipam-controller",
		// With shared credentials the resourceclaim controller is forbidden to create claims.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+files.saPrivate,
		"--root-ca-file="+files.caCert,
		"--cluster-signing-cert-file="+files.caCert,
		"--cluster-signing-key-file="+files.caKey,
	)...); err != nil {
		return err
	}
	if err := c.run(dir, KubeScheduler, componentArgs(dir, KubeScheduler, kubeconfigs[KubeScheduler], schedPort)...); err != nil {
		return err
	}
	if err := c.waitReady(ctx, KubeControllerManager, healthz(kcmPort)); err != nil {
		return err
	}
	if err := c.waitReady(ctx, KubeScheduler, healthz(schedPort)); err != nil {
		return err
	}
	if err := c.waitReady(ctx, KubeControllerManager, c.serviceAccountExists(metav1.NamespaceDefault)); err != nil {
		return err
	}
	progress("kube-controller-manager and kube-scheduler ready; cluster up")
	return nil
}

// writeKubeconfigs writes the kubeconfigs of the admin (Cluster.Kubeconfig), the
// controller-manager and the scheduler into dir, by name, and makes the admin client.
func (c *Cluster) writeKubeconfigs(dir string) (map[string]string, error) {
	kubeconfigs := map[string]string{}
	for _, u := range []struct{ name, cn, org string }{
		{"admin", "claimbridge-controlplane-admin", "system:masters"},
		{KubeControllerManager, "system:kube-controller-manager", ""},
		{KubeScheduler, "system:kube-scheduler", ""},
	} {
		path := filepath.Join(dir, u.name+".kubeconfig")
		if err := c.writeKubeconfig(path, u.cn, u.org); err != nil {
			return nil, err
		}
		kubeconfigs[u.name] = path
	}
	c.Kubeconfig = kubeconfigs["admin"]
	var err error
	c.restConfig, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load admin kubeconfig: %w", err)
	}
	c.restConfig.QPS = 200
	c.restConfig.Burst = 400
	c.client, err = kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	return kubeconfigs, nil
}

// makeRunDir makes the directory of one startup attempt and its subdirectories.
func makeRunDir(dir string) error {
	for _, d := range []string{"pki", "logs", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return fmt.Errorf("create cluster dir: %w", err)
		}
	}
	return nil
}

type pkiFiles struct {
	caCert, caKey, apiserverCert, apiserverKey, saPrivate, saPublic string
}

func (c *Cluster) writePKI(dir string) (pkiFiles, error) {
	ca, err := newAuthority()
	if err != nil {
		return pkiFiles{}, err
	}
	c.ca = ca
	serviceIP := net.ParseIP("10.0.0.1") // first address of ServiceCIDR: the kubernetes Service
	servingCert, servingKey, err := ca.issue(certRequest{
		commonName: "kube-apiserver",
		dnsNames: []string{
			"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local",
		},
		ips:    []net.IP{net.IPv4(127, 0, 0, 1), serviceIP},
		server: true,
	})
	if err != nil {
		return pkiFiles{}, err
	}
	saPrivate, saPublic, err := newServiceAccountKey()
	if err != nil {
		return pkiFiles{}, err
	}
	f := pkiFiles{
		caCert:        filepath.Join(dir, "ca.crt"),
		caKey:         filepath.Join(dir, "ca.key"),
		apiserverCert: filepath.Join(dir, "apiserver.crt"),
		apiserverKey:  filepath.Join(dir, "apiserver.key"),
		saPrivate:     filepath.Join(dir, "sa.key"),
		saPublic:      filepath.Join(dir, "sa.pub"),
	}
	for path, data := range map[string][]byte{
		f.caCert: ca.certPEM, f.caKey: ca.keyPEM,
		f.apiserverCert: servingCert, f.apiserverKey: servingKey,
		f.saPrivate: saPrivate, f.saPublic: saPublic,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return pkiFiles{}, fmt.Errorf("write %s: %w", filepath.Base(path), err)
		}
	}
	return f, nil
}

func (c *Cluster) writeKubeconfig(path, commonName, org string) error {
	var orgs []string
	if org != "" {
		orgs = []string{org}
	}
	cert, key, err := c.ca.issue(certRequest{commonName: commonName, organizations: orgs, client: true})
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["claimbridge"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.ca.certPEM}
	cfg.AuthInfos[commonName] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["claimbridge"] = &clientcmdapi.Context{Cluster: "claimbridge", AuthInfo: commonName}
	cfg.CurrentContext = "claimbridge"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig for %s: %w", commonName, err)
	}
	return nil
}

// run starts one component with the given flags.
func (c *Cluster) run(dir, name string, args ...string) error {
	comp, err := startComponent(name, filepath.Join(c.BinDir, name), filepath.Join(dir, "logs", name+".log"), args, nil)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.components = append(c.components, comp)
	c.mu.Unlock()
	return nil
}

func (c *Cluster) component(name string) *component {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, comp := range c.components {
		if comp.name == name {
			return comp
		}
	}
	return nil
}

// StartProcess runs another program next to the control plane (claimbridge's binary, say)
// the way the components run: own process group, output in a log file that LogTail
// includes, killed when this process dies, stopped by Stop before the control plane. env is
// added to this process's environment.
func (c *Cluster) StartProcess(name, path string, args, env []string) (*Process, error) {
	logDir := filepath.Join(c.Dir, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	comp, err := startComponent(name, path, filepath.Join(logDir, name+".log"), args, env)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.components = append(c.components, comp)
	c.mu.Unlock()
	return newProcess(comp), nil
}

// readyFunc reports whether a component is ready; an error is a reason to keep waiting.
type readyFunc func(ctx context.Context) error

// waitReady polls ready until it succeeds, the component exits or ctx ends.
func (c *Cluster) waitReady(ctx context.Context, name string, ready readyFunc) error {
	comp := c.component(name)
	var last error
	for {
		if err := comp.running(); err != nil {
			return err
		}
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = ready(attempt)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %w)", name, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func etcdHealthy(url string) readyFunc {
	return func(ctx context.Context) error {
		body, err := get(ctx, http.DefaultClient, url)
		if err != nil {
			return err
		}
		var h struct {
			Health string `json:"health"`
		}
		if err := json.Unmarshal(body, &h); err != nil {
			return fmt.Errorf("decode etcd health: %w", err)
		}
		if h.Health != "true" {
			return fmt.Errorf("etcd health %q", h.Health)
		}
		return nil
	}
}

func (c *Cluster) apiserverReady(ctx context.Context) error {
	client, err := rest.HTTPClientFor(c.restConfig)
	if err != nil {
		return fmt.Errorf("apiserver client: %w", err)
	}
	_, err = get(ctx, client, c.Host+"/readyz")
	return err
}

// healthz probes a component's /healthz, which is always allowed anonymously. The
// component serves a self-signed certificate.
func healthz(port int) readyFunc {
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // self-signed loopback certificate of a control-plane component
	}}
	return func(ctx context.Context) error {
		_, err := get(ctx, client, "https://127.0.0.1:"+strconv.Itoa(port)+"/healthz")
		return err
	}
}

func (c *Cluster) serviceAccountExists(namespace string) readyFunc {
	return func(ctx context.Context) error {
		_, err := c.client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err
	}
}

func get(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err // *url.Error names the URL
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// FreePorts returns n distinct free loopback ports (held open together while
// they are chosen, so they differ).
func FreePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portTaken reports whether a component failed because its port was in use.
func (c *Cluster) portTaken() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, comp := range c.components {
		if comp.running() != nil && comp.logContains("address already in use") {
			return true
		}
	}
	return false
}

// RESTConfig returns a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Client returns an admin clientset.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// CABundle returns the cluster CA's certificate, PEM encoded. The apiserver trusts serving
// certificates from IssueServingCert with it.
func (c *Cluster) CABundle() []byte { return append([]byte(nil), c.ca.certPEM...) }

// componentArgs are the flags kube-controller-manager and kube-scheduler share: their
// kubeconfig for everything, their secure port on loopback, a directory of their own for its
// certificate, no leader election.
func componentArgs(dir, name, kubeconfig string, port int) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, name),
		"--leader-elect=false",
		"--v=2",
	}
}

// IssueServingCert signs a serving certificate for a webhook reachable under the given DNS
// names and IPs (for a webhook on loopback: "localhost" and 127.0.0.1).
func (c *Cluster) IssueServingCert(dnsNames []string, ips []net.IP) (ServingCert, error) {
	if len(dnsNames) == 0 && len(ips) == 0 {
		return ServingCert{}, errors.New("serving certificate needs a DNS name or an IP")
	}
	cn := "webhook"
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	cert, key, err := c.ca.issue(certRequest{commonName: cn, dnsNames: dnsNames, ips: ips, server: true})
	if err != nil {
		return ServingCert{}, err
	}
	return ServingCert{CertPEM: cert, KeyPEM: key, CABundle: c.CABundle()}, nil
}

// Stop stops the scheduler, the controller-manager, the apiserver and etcd, in that order,
// waiting for each (an apiserver whose etcd is gone can ignore SIGTERM), and removes the
// cluster's directory unless it was kept. It is safe to call more than once.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.stopComponents()
		if !c.opts.KeepDir {
			_ = os.RemoveAll(c.Dir)
		}
	})
}

func (c *Cluster) stopComponents() {
	c.mu.Lock()
	comps := append([]*component(nil), c.components...)
	c.mu.Unlock()
	for i := len(comps) - 1; i >= 0; i-- {
		comps[i].stop(15 * time.Second)
	}
}

// LogTail returns roughly the last maxLines lines of every component's log (it cuts by size,
// assuming 300 bytes a line).
func (c *Cluster) LogTail(maxLines int) string { return c.logs(int64(maxLines) * 300) }

func (c *Cluster) logs(maxBytes int64) string {
	var b strings.Builder
	for _, p := range c.Processes() {
		fmt.Fprintf(&b, "===== %s (%s) =====\n", p.Name, p.LogPath)
		b.WriteString(p.LogSince(0, maxBytes))
	}
	return b.String()
}

// Processes are the control plane's processes and those of StartProcess, in start order.
func (c *Cluster) Processes() []*Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Process, 0, len(c.components))
	for _, comp := range c.components {
		out = append(out, newProcess(comp))
	}
	return out
}
