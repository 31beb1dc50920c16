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
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/certs"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/server"
	"github.com/claimbridge/claimbridge/internal/testing/benchinput"
	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
	"github.com/claimbridge/claimbridge/internal/testing/staticinventory"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/livereport"
	"github.com/claimbridge/claimbridge/metrics"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
	"github.com/claimbridge/claimbridge/webhook"
)

// benchNamespace is the enforce-mode namespace of the requests.
const benchNamespace = "research"

// realisticPod is the pod of translate's BenchmarkTranslate sized to fit a
// DGX H100: a trainer with 7 GPUs and an RDMA NIC, a profiler with a GPU (8
// GPUs in all), GFD product and memory selectors and a preferred driver
// version.
func realisticPod() *corev1.Pod { return benchinput.TrainerPod(benchNamespace, 7) }

// benchPolicy is the built-in default policy with rdma/hca mapped as one NIC
// per pod.
var benchPolicy = benchinput.TrainerPolicy(v1alpha1.DefaultProfileNames())

// admissionReview is the request kube-apiserver sends for creating pod.
func admissionReview(pod *corev1.Pod) ([]byte, error) {
	raw, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "5f3c6a2e-0000-4000-8000-000000000001",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: pod.Namespace, Name: pod.Name,
			Operation: admissionv1.Create,
			UserInfo:  authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller"},
			Object:    runtime.RawExtension{Raw: raw},
		},
	})
}

// noopHandler is the floor: decode the pod, allow it; with an answer, give
// that answer instead (a canned patch or warnings).
type noopHandler struct {
	decoder admission.Decoder
	answer  *atomic.Pointer[admissionv1.AdmissionResponse]
}

var _ admission.Handler = noopHandler{}

func (h noopHandler) Handle(_ context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := h.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if h.answer != nil {
		if a := h.answer.Load(); a != nil {
			return admission.Response{AdmissionResponse: *a}
		}
	}
	return admission.Allowed("")
}

// unsynced is an inventory whose fleet is never ready: the handler translates
// and then skips the allocator (verdict Unknown, the pod admitted as submitted
// with a warning). It is the webhook without feasibility.
type unsynced struct {
	*staticinventory.StaticInventory
}

func (unsynced) Snapshot(time.Time) (*feasibility.Snapshot, error) {
	return nil, inventory.ErrNotSynced
}

// target is one webhook server under load.
type target struct {
	key, title string
	handler    admission.Handler
	url        string
	client     *http.Client
	fixed      stats
	saturated  stats
	response   string
}

// benchWebhook serves a no-op webhook and claimbridge's handler in three
// configurations from controller-runtime webhook servers on loopback (same
// TLS settings as the server), loads each at a fixed rate and at saturation,
// alternating the targets, and writes the Markdown section.
func benchWebhook(ctx context.Context, w io.Writer, o options) error {
	dir, err := os.MkdirTemp("", "claimbridge-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	roots, err := selfSignedCA(dir)
	if err != nil {
		return err
	}

	gen := fleetgen.Synthetic(o.webhookNodes)
	// The slices as serve's inventory holds them.
	compacted := make([]*resourceapi.ResourceSlice, len(gen.Slices))
	for i, sl := range gen.Slices {
		compacted[i] = sl.DeepCopy()
		inventory.CompactSlice(compacted[i])
	}
	fleet := &feasibility.Inventory{Nodes: gen.Nodes, Slices: compacted, Classes: gen.Classes, Claims: gen.Claims}
	pod := realisticPod()
	// The built-in policy with rdma/hca as one NIC per pod (the rdma
	// profile's rdma/* is shared and would keep the pod legacy).
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(benchPolicy), 0o600); err != nil {
		return err
	}
	policy, err := server.NewPolicyFiles(policyFile, "") // loaded once, as the server does
	if err != nil {
		return err
	}
	res, err := translate.Pod(translate.Input{Pod: pod, Policy: policy.Get(), Classes: fleet.Classes})
	if err != nil || res.Outcome != reason.OutcomeTranslate {
		return fmt.Errorf("translate the benchmark pod: %v %w", res.Outcome, err)
	}
	body, err := admissionReview(pod)
	if err != nil {
		return err
	}
	namespaces := map[string]*corev1.Namespace{benchNamespace: {ObjectMeta: metav1.ObjectMeta{Name: benchNamespace, Labels: map[string]string{api.LabelMode: string(api.ModeEnforce)}}}}
	// The informer cache holds the template once the first pod of the
	// workload created it (with a resourceVersion, as every object an
	// informer holds).
	res.Template.ResourceVersion = "1"
	static := func() *staticinventory.StaticInventory {
		return &staticinventory.StaticInventory{Fleet: fleet, Namespaces: namespaces, Existing: []*resourceapi.ResourceClaimTemplate{res.Template}, Features: feasibility.DefaultFeatures()}
	}
	m := metrics.NewMetrics()
	if err := m.Register(); err != nil {
		return err
	}
	client := fake.NewClientset()
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "claimbridge"})
	// The same policy with the placement proof off: the check's own cost.
	offFile := filepath.Join(dir, "policy-placement-off.yaml")
	if err := os.WriteFile(offFile, []byte(benchPolicy+"  placement: Off\n"), 0o600); err != nil {
		return err
	}
	placementOff, err := server.NewPolicyFiles(offFile, "")
	if err != nil {
		return err
	}
	handler := func(inv webhook.InventoryReader, cacheSize int, policy *server.PolicyFile) *webhook.PodHandler {
		return &webhook.PodHandler{
			Decoder:   admission.NewDecoder(clientgoscheme.Scheme),
			Policy:    policy.Get,
			Inventory: inv,
			Checker:   feasibility.NewChecker(feasibility.Options{Timeout: 2 * time.Second, CacheSize: cacheSize}),
			Templates: webhook.APITemplates{Client: client},
			Namespace: "claimbridge-system",
			Recorder:  recorder,
			Report:    &livereport.ReportStore{},
			Metrics:   m,
			Recent:    &inventory.RecentTemplates{},
		}
	}
	nodes := human(o.webhookNodes)
	targets := []*target{
		{key: "noop", title: "no-op webhook (decode the pod, allow)", handler: noopHandler{decoder: admission.NewDecoder(clientgoscheme.Scheme)}},
		{key: "translate", title: "claimbridge without feasibility (translate; inventory not synced, so no allocator and no patch)", handler: handler(unsynced{static()}, 0, policy)},
		{key: "placement-off", title: "claimbridge with feasibility, " + nodes + " nodes, verdict cache on, placement proof off (`placement: Off`)", handler: handler(static(), 0, placementOff)},
		{key: "feasibility", title: "claimbridge with feasibility, " + nodes + " nodes, verdict cache on (translate, cached placement proof and check, patch)", handler: handler(static(), 0, policy)},
		{key: "feasibility-cold", title: "claimbridge with feasibility, " + nodes + " nodes, verdict cache off (a full allocator check per request)", handler: handler(static(), -1, policy)},
	}
	if len(o.targets) > 0 {
		// The no-op server stays: it is the baseline.
		targets = slices.DeleteFunc(targets, func(t *target) bool { return t.key != "noop" && !slices.Contains(o.targets, t.key) })
	}
	ports, err := cluster.FreePorts(len(targets))
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	for i, t := range targets {
		path := "/" + t.key
		srv := crwebhook.NewServer(crwebhook.Options{
			Host: "127.0.0.1", Port: ports[i], CertDir: dir,
			TLSOpts: []func(*tls.Config){certs.TLSConfig(tls.VersionTLS12)},
		})
		srv.Register(path, &admission.Webhook{Handler: t.handler, RecoverPanic: new(true)})
		go func() { _ = srv.Start(sctx) }()
		if err := waitStarted(ctx, srv); err != nil {
			return err
		}
		t.url = "https://127.0.0.1:" + strconv.Itoa(ports[i]) + path
		t.client = newClient(roots, o.saturation)
		if t.response, err = check(ctx, t, body); err != nil {
			return err
		}
	}

	progress("webhook: warm-up")
	for _, t := range targets {
		saturate(ctx, poster{t.client, t.url, body}, o.saturation, o.warmup)
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	for r := range o.rounds {
		for i := range targets {
			t := targets[(i+r)%len(targets)]
			progress("webhook: round %d/%d, %s at %g req/s for %v", r+1, o.rounds, t.key, o.rate, o.runFor)
			t.fixed.add(fixedRate(ctx, poster{t.client, t.url, body}, o.rate, o.runFor, 64))
		}
		for i := range targets {
			t := targets[(i+r)%len(targets)]
			progress("webhook: round %d/%d, %s with %d in flight for %v", r+1, o.rounds, t.key, o.saturation, o.runFor)
			t.saturated.add(saturate(ctx, poster{t.client, t.url, body}, o.saturation, o.runFor))
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	writeWebhook(w, o, targets)
	return nil
}

func waitStarted(ctx context.Context, srv crwebhook.Server) error {
	started := srv.StartedChecker()
	deadline := time.Now().Add(30 * time.Second)
	for started(nil) != nil {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("webhook server not serving")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// newClient is a keep-alive HTTP/2 client verifying the serving certificate,
// as kube-apiserver calls webhooks.
func newClient(roots *x509.CertPool, conns int) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: conns,
		},
	}
}

// check sends one request and describes the response.
func check(ctx context.Context, t *target, body []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s: %w", t.key, err)
	}
	defer func() { _ = resp.Body.Close() }()
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil {
		return "", fmt.Errorf("%s: decode response: %w", t.key, err)
	}
	r := review.Response
	if r == nil || !r.Allowed {
		return "", fmt.Errorf("%s: not allowed: %+v", t.key, r)
	}
	var ops []any
	if len(r.Patch) > 0 {
		if err := json.Unmarshal(r.Patch, &ops); err != nil {
			return "", fmt.Errorf("%s: patch: %w", t.key, err)
		}
	}
	desc := fmt.Sprintf("allowed, %d patch operations, %d warnings", len(ops), len(r.Warnings))
	if t.key != "noop" && t.key != "translate" {
		if len(ops) == 0 {
			return "", fmt.Errorf("%s: the pod was not translated: %q", t.key, r.Warnings)
		}
	}
	return desc, nil
}
