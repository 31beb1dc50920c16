package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/syncbuffer"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/webhook"
)

// memSample is what a probe process reports.
type memSample struct {
	// HeapAlloc is the live Go heap after a full GC (MiB resolution for the
	// server, from gctrace).
	HeapAlloc uint64 `json:"heapAlloc"`
	// RSS and HWM (peak RSS) of the process, from /proc/self/status.
	RSS uint64 `json:"rss"`
	HWM uint64 `json:"hwm"`
	// Objects probe: the heap the listed objects hold, and their protobuf size.
	ObjectsHeap  uint64 `json:"objectsHeap,omitempty"`
	ObjectsProto uint64 `json:"objectsProto,omitempty"`
	Nodes        int    `json:"nodes"`
	Slices       int    `json:"slices"`
	Devices      int    `json:"devices"`
	Pods         int    `json:"pods"`
	// Server: after its start, when the inventory held every node and when
	// it translated the first pod; how long that first translation took.
	SyncSeconds        float64 `json:"syncSeconds,omitempty"`
	TranslatingSeconds float64 `json:"translatingSeconds,omitempty"`
	FirstSeconds       float64 `json:"firstSeconds,omitempty"`
	// GCs is the server's garbage collections from its start to the
	// measurement (before the one the measurement forces).
	GCs int `json:"gcs,omitempty"`
}

func readMem() memSample {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := procMem(os.Getpid())
	s.HeapAlloc = ms.HeapAlloc
	return s
}

// probeObjects lists what the webhook's fleet informers list (Nodes,
// ResourceSlices, DeviceClasses, Pods) with the same client configuration, keeps
// the decoded objects and reports the heap they hold: the informer objects'
// own size.
func probeObjects(ctx context.Context, kubeconfig string) (memSample, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return memSample{}, err
	}
	client, err := fastClient(cfg)
	if err != nil {
		return memSample{}, err
	}
	before := readMem()
	var (
		nodes   []*corev1.Node
		slices  []*resourceapi.ResourceSlice
		classes []*resourceapi.DeviceClass
		pods    []*corev1.Pod
		proto   int
	)
	// Pages of 500, as an informer's initial list.
	for cont := ""; ; {
		l, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
		if err != nil {
			return memSample{}, err
		}
		for i := range l.Items {
			nodes = append(nodes, &l.Items[i])
			proto += l.Items[i].Size()
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	for cont := ""; ; {
		l, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
		if err != nil {
			return memSample{}, err
		}
		for i := range l.Items {
			slices = append(slices, &l.Items[i])
			proto += l.Items[i].Size()
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	cl, err := client.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return memSample{}, err
	}
	for i := range cl.Items {
		classes = append(classes, &cl.Items[i])
		proto += cl.Items[i].Size()
	}
	for cont := ""; ; {
		l, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
		if err != nil {
			return memSample{}, err
		}
		for i := range l.Items {
			pods = append(pods, &l.Items[i])
			proto += l.Items[i].Size()
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	after := readMem()
	after.ObjectsHeap = after.HeapAlloc - before.HeapAlloc
	after.ObjectsProto = uint64(proto)
	after.Nodes, after.Slices, after.Devices, after.Pods = len(nodes), len(slices), devices(slices), len(pods)
	runtime.KeepAlive(pods)
	runtime.KeepAlive(nodes)
	runtime.KeepAlive(slices)
	runtime.KeepAlive(classes)
	return after, nil
}

// probeInventory runs claimbridge's inventory (its informers, as serve
// does) until it synced, builds its snapshot and writes a heap profile of
// what stays live to file.
func probeInventory(ctx context.Context, kubeconfig, file string) (memSample, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return memSample{}, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return memSample{}, err
	}
	inv := inventory.New(client, inventory.Options{})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = inv.Start(ctx) }()
	for !inv.Synced() {
		select {
		case <-ctx.Done():
			return memSample{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if _, err := inv.Snapshot(time.Now()); err != nil {
		return memSample{}, err
	}
	s := readMem()
	f, err := os.Create(file)
	if err != nil {
		return memSample{}, err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return memSample{}, err
	}
	runtime.KeepAlive(inv)
	return s, f.Close()
}

// serveLog, when set (-serve-log), gets the log of every serve process too.
var serveLog io.Writer

// serveProc is `claimbridge serve`, the binary, running against the cluster
// in cert-manager mode with GODEBUG=gctrace=1 (its live heap after each GC).
type serveProc struct {
	cmd                    *exec.Cmd
	stderr                 *syncbuffer.Buffer
	webhookURL, metricsURL string
	pprofURL               string // Go's /debug/pprof, on loopback
	certDir                string // its serving certificate and ca.crt
	roots                  *x509.CertPool
	done                   chan struct{} // closed when the process exited
}

// startServe builds nothing: bin is the binary built by buildClaimbridge.
func startServe(ctx context.Context, bin, kubeconfig, certDir string, env ...string) (*serveProc, error) {
	ports, err := cluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(certDir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	p := &serveProc{
		stderr:     &syncbuffer.Buffer{},
		webhookURL: "https://127.0.0.1:" + strconv.Itoa(ports[0]) + webhook.Path,
		metricsURL: "http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/metrics",
		pprofURL:   "http://127.0.0.1:" + strconv.Itoa(ports[2]) + "/debug/pprof",
		certDir:    certDir,
		roots:      x509.NewCertPool(),
		done:       make(chan struct{}),
	}
	p.roots.AppendCertsFromPEM(ca)
	p.cmd = exec.CommandContext(ctx, bin, "serve", "--namespace", ownNamespace, "--tls-mode", "cert-manager", "--cert-dir", certDir,
		"--webhook-port", strconv.Itoa(ports[0]), "--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(ports[1]),
		"--health-probe-bind-address", "0", "--log-level", "info", "--metrics-secure=false",
		"--pprof-bind-address", "127.0.0.1:"+strconv.Itoa(ports[2]))
	p.cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig, "GODEBUG=gctrace=1"), env...)
	p.cmd.Stderr = p.stderr
	if serveLog != nil {
		p.cmd.Stderr = io.MultiWriter(p.stderr, serveLog)
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.cmd.WaitDelay = 10 * time.Second
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *serveProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(40 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// measure waits until the server's inventory holds wantNodes nodes, admits
// a pod of the enforce namespace ns twice (the first builds the inventory
// snapshot and runs the allocator; the inventory is synced then, wantPods
// pods included, as they were created before the server started), waits two seconds and reads the
// process's RSS, peak RSS and live heap after its last GC.
func (p *serveProc) measure(ctx context.Context, ns string, wantNodes, wantPods int) (memSample, error) {
	start := time.Now()
	if err := waitNodes(ctx, p.metricsURL, wantNodes, 5*time.Minute, p.done); err != nil {
		return memSample{}, fmt.Errorf("%w; claimbridge stderr: %s", err, tail(p.stderr.String(), 20))
	}
	synced := time.Since(start)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.roots, MinVersion: tls.VersionTLS12}}}
	body, err := admissionReview(legacyPod("memory-probe", ns))
	if err != nil {
		return memSample{}, err
	}
	// Until the slices are synced too, pods are admitted unchanged; the
	// first translated pod builds the inventory snapshot.
	var first time.Duration
	for i := range 2 {
		var patched bool
		for try := 0; try < 300 && !patched; try++ {
			t := time.Now()
			if patched, err = admit(ctx, hc, p.webhookURL, body); err != nil {
				return memSample{}, err
			}
			if i == 0 {
				first = time.Since(t)
			}
			if !patched && wantNodes == 0 {
				break
			}
			if !patched {
				time.Sleep(100 * time.Millisecond)
			}
		}
		if !patched && wantNodes > 0 {
			return memSample{}, errors.New("the probe pod was not translated")
		}
	}
	translating := time.Since(start)
	time.Sleep(2 * time.Second)
	s := procMem(p.cmd.Process.Pid)
	// The live heap after a collection the measurement forces (pprof's
	// heap?gc=1), read after RSS: the last collection of the process's own
	// can fall in the middle of the first lists.
	s.GCs = len(gcLine.FindAllString(p.stderr.String(), -1))
	if err := forceGC(ctx, p.pprofURL); err != nil {
		return memSample{}, err
	}
	for wait := 0; wait < 50 && len(gcLine.FindAllString(p.stderr.String(), -1)) <= s.GCs; wait++ {
		time.Sleep(100 * time.Millisecond)
	}
	s.HeapAlloc = lastLiveHeap(p.stderr.String())
	s.Nodes, s.Pods, s.SyncSeconds, s.TranslatingSeconds, s.FirstSeconds = wantNodes, wantPods, synced.Seconds(), translating.Seconds(), first.Seconds()
	return s, nil
}

// forceGC has the server collect its garbage (a heap profile with gc=1).
func forceGC(ctx context.Context, pprofURL string) error {
	body, err := httpGet(ctx, pprofURL+"/heap?gc=1")
	if err != nil {
		return fmt.Errorf("force a GC in claimbridge serve: %w", err)
	}
	if body == "" {
		return errors.New("force a GC in claimbridge serve: empty heap profile")
	}
	return nil
}

var gcLine = regexp.MustCompile(`gc \d+ @.* (\d+)->(\d+)->(\d+) MB`)

// lastLiveHeap is the live heap after the last GC gctrace reported.
func lastLiveHeap(stderr string) uint64 {
	m := gcLine.FindAllStringSubmatch(stderr, -1)
	if len(m) == 0 {
		return 0
	}
	mb, _ := strconv.ParseUint(m[len(m)-1][3], 10, 64)
	return mb << 20
}

// procMem reads RSS and peak RSS of a process.
func procMem(pid int) memSample {
	var s memSample
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			s.RSS = kb << 10
		case "VmHWM:":
			s.HWM = kb << 10
		}
	}
	return s
}

// buildClaimbridge builds cmd/claimbridge into dir.
func buildClaimbridge(ctx context.Context, dir string) (string, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "claimbridge")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/claimbridge")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build claimbridge: %w", err)
	}
	return bin, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// admit sends an AdmissionReview and reports whether the response translates
// the pod (its patch adds resource claims).
func admit(ctx context.Context, hc *http.Client, url string, body []byte) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	var review struct {
		Response struct {
			Allowed bool   `json:"allowed"`
			Patch   []byte `json:"patch"`
		} `json:"response"`
	}
	if err := json.Unmarshal(b, &review); err != nil {
		return false, fmt.Errorf("decode admission response: %w", err)
	}
	// Translated, not only annotated: a pod kept while the inventory is not
	// synced gets the decision's annotations, a patch too.
	return bytes.Contains(review.Response.Patch, []byte(`"/spec/resourceClaims`)), nil
}

// legacyPod asks for one GPU the device-plugin way, with a GPU Feature
// Discovery product selector, for kube-scheduler (the scheduler claimbridge
// translates for by default). A scheduling gate keeps kube-scheduler from
// competing for the CPUs while pods are created: gated pods wait outside its
// queue, and claimbridge translates them as any other.
func legacyPod(name, ns string) *corev1.Pod {
	p := builders.MakePod(name, ns).
		Container("app").Limit("nvidia.com/gpu", "1").
		NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").
		Obj()
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "claimbridge.io/bench"}}
	return p
}
