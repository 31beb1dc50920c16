package main

import (
	"bytes"
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/certs"
	"github.com/claimbridge/claimbridge/e2e/chart"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/webhook"
)

const ownNamespace = "claimbridge-system"

// creation is what creating one namespace's pods measured.
type creation struct {
	ns         string
	latency    stats // per create, client side
	translated int
	// events claimbridge recorded in the namespace (each one a write
	// kube-apiserver and etcd serve), in all and by reason.
	events       int
	eventReasons map[string]int
	// Histograms of the batches into this namespace: kube-apiserver's
	// webhook call, claimbridge's request and its feasibility check.
	apiserver, self, feasibility histogram
	// whole is claimbridge_admission_duration_seconds: the admissions
	// inside the handler, in fine buckets (the tail's quantiles).
	whole histogram
	// Where claimbridge's admissions spent their time, and the slow ones
	// as its log tells them.
	stages stageTimes
	slow   []slowAdmission
	// cpu is the CPU time each process spent during this namespace's batches.
	cpu map[string]time.Duration
	// created is the CPU time each process spent while the batches' pods
	// were created (the creates alone, before their claims).
	created map[string]time.Duration
	// wall is how long the batches took, from their first create to the
	// last claim (enforce and floor).
	wall time.Duration
	// claims is how many ResourceClaims kube-controller-manager created
	// during this namespace's batches (enforce and floor, which watch them).
	claims int
	// pod makes the namespace's pods; nil: legacyPod.
	pod func(name, ns string) *corev1.Pod
}

// podOf is the pod named name of the namespace.
func (cr *creation) podOf(name string) *corev1.Pod {
	if cr.pod != nil {
		return cr.pod(name, cr.ns)
	}
	return legacyPod(name, cr.ns)
}

// apiserverResult is the section's figures.
type apiserverResult struct {
	legacy, noop, audit, enforce creation
	// floor is a namespace the webhook never sees whose pods carry, as
	// written, the claim the translation gives a pod of enforce: the
	// template reference of a translated pod, the template created
	// beforehand. It prices what kube-apiserver pays for such a pod and
	// the ResourceClaim kube-controller-manager creates for it, webhook
	// or not: enforce's floor.
	floor creation
	// The no-op webhook answering as claimbridge answers an audit pod, in
	// part: with its warnings only, or with its annotation patch only.
	// Against noop and audit they price each part of the audit response
	// in kube-apiserver's CPU.
	noopWarn, noopPatch creation
	batches, batchSize  int
	// idle is each process's CPU time per second with nothing created,
	// measured before the batches: what a batch is charged for its length
	// alone (an enforce or floor batch waits for kube-controller-manager,
	// which creates the claims at its client's rate).
	idle map[string]float64
	// What the webhook answers kube-apiserver for a pod of the audit and
	// the enforce namespace.
	auditResponse, enforceResponse responseShape
}

// responseShape is the size of an admission response and what it holds.
type responseShape struct {
	bytes, patchBytes, patchOps, warnings, warningBytes int
	// patch and warningTexts are the response's own.
	patch        []byte
	warningTexts []string
}

// namespaces lists the result's namespaces with the kind each profile and
// progress line names, in batch order.
func (r *apiserverResult) namespaces() []*creation {
	return []*creation{&r.legacy, &r.floor, &r.noop, &r.noopWarn, &r.noopPatch, &r.audit, &r.enforce}
}

// kindOf names a namespace of the result.
func (r *apiserverResult) kindOf(cr *creation) string {
	return map[*creation]string{&r.legacy: "legacy", &r.floor: "floor", &r.noop: "noop", &r.noopWarn: "noop-warn", &r.noopPatch: "noop-patch",
		&r.audit: "audit", &r.enforce: "enforce"}[cr]
}

// shapeOf posts the AdmissionReview of a benchmark pod of namespace ns to
// the webhook and measures its response.
func shapeOf(ctx context.Context, srv *serveProc, ns string) (responseShape, error) {
	body, err := admissionReview(legacyPod("shape-probe", ns))
	if err != nil {
		return responseShape{}, err
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: srv.roots, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.webhookURL, bytes.NewReader(body))
	if err != nil {
		return responseShape{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return responseShape{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return responseShape{}, err
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(b, &review); err != nil || review.Response == nil {
		return responseShape{}, fmt.Errorf("decode admission response %q: %w", b, err)
	}
	out := responseShape{bytes: len(b), patchBytes: len(review.Response.Patch), warnings: len(review.Response.Warnings),
		patch: review.Response.Patch, warningTexts: review.Response.Warnings}
	var ops []json.RawMessage
	if len(review.Response.Patch) > 0 {
		if err := json.Unmarshal(review.Response.Patch, &ops); err != nil {
			return responseShape{}, err
		}
	}
	out.patchOps = len(ops)
	for _, w := range review.Response.Warnings {
		out.warningBytes += len(w)
	}
	return out, nil
}

// installWebhook installs the MutatingWebhookConfiguration the chart
// renders, pointed at url and trusting the CA in certDir.
func installWebhook(ctx context.Context, c *cluster.Cluster, url, certDir string) error {
	mwc, err := chart.RenderWebhookConfiguration(ctx, map[string]any{}, chart.Options{Namespace: ownNamespace})
	if err != nil {
		return fmt.Errorf("render the chart's webhook configuration: %w", err)
	}
	ca, err := os.ReadFile(certDir + "/ca.crt")
	if err != nil {
		return err
	}
	_, err = c.InstallWebhookConfiguration(ctx, mwc, url, ca)
	return err
}

// issueCert writes a serving certificate from the cluster's CA for
// 127.0.0.1, and the CA as ca.crt, into a new directory.
func issueCert(c *cluster.Cluster) (string, error) {
	cert, err := c.IssueServingCert([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(c.Dir, "claimbridge-tls-")
	if err != nil {
		return "", err
	}
	if err := cert.WriteTo(dir); err != nil {
		return "", err
	}
	return dir, os.WriteFile(dir+"/ca.crt", cert.CABundle, 0o600)
}

// waitNodes waits until claimbridge's inventory holds n nodes, or the
// server stops (done).
func waitNodes(ctx context.Context, metricsURL string, n int, timeout time.Duration, done <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if text, err := httpGet(ctx, metricsURL); err == nil && gauge(text, "claimbridge_inventory_nodes") == float64(n) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return errors.New("claimbridge stopped")
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("claimbridge's inventory does not hold %d nodes after %v", n, timeout)
}

// benchAPIServer creates o.pods legacy pods in a namespace the webhook never
// sees and as many in an enforce namespace, in alternating batches of
// o.batch with o.clients concurrent clients, and reads the admission latency
// histograms of kube-apiserver and claimbridge for the enforce batches.
func benchAPIServer(ctx context.Context, c *cluster.Cluster, srv *serveProc, o options) (apiserverResult, error) {
	metricsURL, claimbridgePID := srv.metricsURL, srv.cmd.Process.Pid
	res := apiserverResult{batchSize: o.batch}
	for _, cr := range res.namespaces() {
		cr.cpu, cr.created = map[string]time.Duration{}, map[string]time.Duration{}
	}
	client, err := fastClient(c.RESTConfig())
	if err != nil {
		return res, err
	}
	legacyNS, err := c.CreateNamespace(ctx, "", "bench-legacy-", nil)
	if err != nil {
		return res, err
	}
	floorNS, err := c.CreateNamespace(ctx, "", "bench-floor-", nil)
	if err != nil {
		return res, err
	}
	noops, err := noopWebhooks(ctx, c, srv)
	if err != nil {
		return res, err
	}
	auditNS, err := c.CreateNamespace(ctx, "", "bench-audit-", map[string]string{cluster.ModeLabel: "audit"})
	if err != nil {
		return res, err
	}
	enforceNS, err := c.CreateNamespace(ctx, "", "bench-enforce-", map[string]string{cluster.ModeLabel: "enforce"})
	if err != nil {
		return res, err
	}
	res.legacy.ns, res.floor.ns, res.audit.ns, res.enforce.ns = legacyNS.Name, floorNS.Name, auditNS.Name, enforceNS.Name
	res.noop.ns, res.noopWarn.ns, res.noopPatch.ns = noops[answerNothing].ns, noops[answerWarnings].ns, noops[answerPatch].ns
	// The namespaces stay: the control plane stops after this part, and
	// deleting their thousands of pods first would only take minutes.

	// The ResourceClaims kube-controller-manager creates for the pods of an
	// enforce or floor batch are the batch's cost: each such batch ends
	// once they exist, or the next namespace's batch would be charged for
	// them.
	claims := map[*creation]*atomic.Int64{}
	for _, cr := range []*creation{&res.enforce, &res.floor} {
		if claims[cr], err = watchClaims(ctx, client, cr.ns); err != nil {
			return res, err
		}
	}

	// Warm-up, not measured: connections, the template of the enforce
	// namespace, the verdict cache, the webhook configuration in the
	// apiserver's informer (polled until a pod comes back translated).
	deadline := time.Now().Add(time.Minute)
	var translated *corev1.Pod
	for i := 0; ; i++ {
		p, err := client.CoreV1().Pods(enforceNS.Name).Create(ctx, legacyPod(fmt.Sprintf("warmup-%d", i), enforceNS.Name), metav1.CreateOptions{})
		if err != nil {
			return res, err
		}
		if len(p.Spec.ResourceClaims) > 0 {
			translated = p
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("pods of %s are not translated after a minute", enforceNS.Name)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The no-op webhooks answer with parts of what claimbridge answers for
	// an audit pod.
	if res.auditResponse, err = shapeOf(ctx, srv, auditNS.Name); err != nil {
		return res, err
	}
	if res.enforceResponse, err = shapeOf(ctx, srv, enforceNS.Name); err != nil {
		return res, err
	}
	if res.auditResponse.patchOps == 0 || res.auditResponse.warnings == 0 {
		return res, fmt.Errorf("claimbridge answers an audit pod with %s: the no-op webhooks that price its parts need a patch and a warning", res.auditResponse)
	}
	noops[answerWarnings].answer.Store(&admissionv1.AdmissionResponse{Allowed: true, Warnings: res.auditResponse.warningTexts})
	jp := admissionv1.PatchTypeJSONPatch
	noops[answerPatch].answer.Store(&admissionv1.AdmissionResponse{Allowed: true, Patch: res.auditResponse.patch, PatchType: &jp})
	template, err := setUpFloor(ctx, client, &res.floor, translated)
	if err != nil {
		return res, err
	}
	for _, cr := range res.namespaces() {
		if _, err := createPods(ctx, client, cr.podOf, "warmup-b-", 50, o.clients); err != nil {
			return res, err
		}
	}
	settleClaims(ctx, claims[&res.enforce], 51)
	settleClaims(ctx, claims[&res.floor], 50)
	// The apiserver's informer may have missed a no-op webhook's
	// configuration during the warm-up: poll until it calls each.
	for _, n := range noops {
		for i := 0; n.calls.Load() == 0; i++ {
			if _, err := createPods(ctx, client, func(name string) *corev1.Pod { return legacyPod(name, n.ns) }, fmt.Sprintf("warmup-c%d-", i), 1, 1); err != nil {
				return res, err
			}
			if i > 300 {
				return res, fmt.Errorf("kube-apiserver does not call the no-op webhook of %s", n.ns)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	res.idle = idleRates(c.BinDir, claimbridgePID, 3*time.Second)
	res.batches = o.pods / o.batch
	for b := range res.batches {
		order := res.namespaces()
		order = slices.Concat(order[b%len(order):], order[:b%len(order)])
		for _, cr := range order {
			progress("apiserver: batch %d/%d, %d pods into %s", b+1, res.batches, o.batch, cr.ns)
			before, stagesBefore, err := scrapeAdmission(ctx, client, metricsURL)
			if err != nil {
				return res, err
			}
			logFrom := srv.stderr.Len()
			var profiled, apiserverProfiled chan error
			if o.serveProfile != "" {
				profiled = profileServe(ctx, srv.pprofURL, fmt.Sprintf("%s-%s-%d.pprof", o.serveProfile, res.kindOf(cr), b))
			}
			if o.apiserverProfile != "" {
				apiserverProfiled = profileAPIServer(ctx, client, fmt.Sprintf("%s-%s-%d.pprof", o.apiserverProfile, res.kindOf(cr), b))
			}
			cpuBefore, began := cpuTimes(c.BinDir, claimbridgePID), time.Now()
			var claimsBefore int64
			if w := claims[cr]; w != nil {
				claimsBefore = w.Load()
			}
			s, err := createPods(ctx, client, cr.podOf, fmt.Sprintf("b%d-", b), o.batch, o.clients)
			if err != nil {
				return res, err
			}
			for name, t := range cpuTimes(c.BinDir, claimbridgePID) {
				cr.created[name] += t - cpuBefore[name]
			}
			if w := claims[cr]; w != nil {
				settleClaims(ctx, w, claimsBefore+int64(o.batch))
				cr.claims += int(w.Load() - claimsBefore)
			}
			for _, p := range []chan error{profiled, apiserverProfiled} {
				if p == nil {
					continue
				}
				if err := <-p; err != nil {
					return res, err
				}
			}
			for name, t := range cpuTimes(c.BinDir, claimbridgePID) {
				cr.cpu[name] += t - cpuBefore[name]
			}
			cr.wall += time.Since(began)
			after, stagesAfter, err := scrapeAdmission(ctx, client, metricsURL)
			if err != nil {
				return res, err
			}
			cr.stages = cr.stages.plus(stagesAfter, stagesBefore)
			cr.slow = append(cr.slow, slowAdmissions(srv.stderr.From(logFrom))...)
			cr.latency.add(s)
			cr.apiserver = cr.apiserver.plus(after[0].minus(before[0]))
			cr.self = cr.self.plus(after[1].minus(before[1]))
			cr.feasibility = cr.feasibility.plus(after[2].minus(before[2]))
			cr.whole = cr.whole.plus(after[3].minus(before[3]))
		}
	}
	listed := map[*creation][]corev1.Pod{}
	for _, cr := range res.namespaces() {
		pods, err := client.CoreV1().Pods(cr.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return res, err
		}
		listed[cr] = pods.Items
		for _, p := range pods.Items {
			if len(p.Spec.ResourceClaims) > 0 && p.Name[0] == 'b' {
				cr.translated++
			}
		}
		events, err := client.CoreV1().Events(cr.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return res, err
		}
		for _, e := range events.Items {
			if strings.Contains(e.Source.Component+e.ReportingController, "claimbridge") {
				cr.events++
				if cr.eventReasons == nil {
					cr.eventReasons = map[string]int{}
				}
				cr.eventReasons[e.Reason]++
			}
		}
	}
	return res, checkFloor(&res, template, listed[&res.floor], listed[&res.enforce])
}

// watchClaims counts the ResourceClaims created in namespace ns from now on
// (a watch: no list of them per batch).
func watchClaims(ctx context.Context, client kubernetes.Interface, ns string) (*atomic.Int64, error) {
	list, err := client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	w, err := client.ResourceV1().ResourceClaims(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return nil, err
	}
	n := &atomic.Int64{}
	go func() {
		defer w.Stop()
		for e := range w.ResultChan() {
			if e.Type == watch.Added {
				n.Add(1)
			}
		}
	}()
	return n, nil
}

// settleClaims waits until n reaches want, or stops growing for 5 s (a
// pod kept as submitted has no claim; kube-controller-manager may take
// seconds to start on a batch), at most 30 s.
func settleClaims(ctx context.Context, n *atomic.Int64, want int64) {
	deadline, last, still := time.Now().Add(30*time.Second), n.Load(), time.Now()
	for n.Load() < want && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		if v := n.Load(); v != last {
			last, still = v, time.Now()
		} else if time.Since(still) > 5*time.Second {
			return
		}
	}
}

// profileServe fetches a CPU profile of one second of claimbridge serve
// into file, in the background.
func profileServe(ctx context.Context, pprofURL, file string) chan error {
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, pprofURL+"/profile?seconds=1", nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("profile claimbridge serve: %w", err)
			}
			defer func() { _ = resp.Body.Close() }()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("profile claimbridge serve: %s", resp.Status)
			}
			f, err := os.Create(file)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, resp.Body); err != nil {
				_ = f.Close()
				return err
			}
			return f.Close()
		}()
	}()
	return done
}

// profileAPIServer fetches a CPU profile of one second of kube-apiserver
// into file, in the background.
func profileAPIServer(ctx context.Context, client kubernetes.Interface, file string) chan error {
	done := make(chan error, 1)
	go func() {
		raw, err := client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "1").DoRaw(ctx)
		if err != nil {
			done <- fmt.Errorf("profile kube-apiserver: %w", err)
			return
		}
		done <- os.WriteFile(file, raw, 0o600)
	}()
	return done
}

// noopLabel selects the namespaces a no-op webhook is called for; its
// value is the answer.
const noopLabel = "bench.claimbridge.io/noop"

// What a no-op webhook answers: nothing (allowed), claimbridge's warnings
// for an audit pod, or its annotation patch.
const (
	answerNothing  = "nothing"
	answerWarnings = "warnings"
	answerPatch    = "patch"
)

// noop is one no-op webhook: its namespace, its calls, and the response it
// gives after decoding the pod (nil: allowed, nothing else).
type noop struct {
	ns     string
	calls  *atomic.Int64
	answer *atomic.Pointer[admissionv1.AdmissionResponse]
}

// noopWebhooks serves the no-op webhooks (decode the pod, answer) with
// claimbridge's certificate and TLS settings in this process, installs a
// MutatingWebhookConfiguration that sends each the pods of a new
// namespace, and returns them by answer: the baseline of kube-apiserver's
// own cost of calling a webhook, and of each part of an audit response.
func noopWebhooks(ctx context.Context, c *cluster.Cluster, srv *serveProc) (map[string]*noop, error) {
	ports, err := cluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	ws := crwebhook.NewServer(crwebhook.Options{
		Host: "127.0.0.1", Port: ports[0], CertDir: srv.certDir,
		TLSOpts: []func(*tls.Config){certs.TLSConfig(tls.VersionTLS12)},
	})
	ca, err := os.ReadFile(filepath.Join(srv.certDir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	out := map[string]*noop{}
	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	for _, answer := range []string{answerNothing, answerWarnings, answerPatch} {
		n := &noop{calls: &atomic.Int64{}, answer: &atomic.Pointer[admissionv1.AdmissionResponse]{}}
		ws.Register("/"+answer, &admission.Webhook{Handler: countingHandler{noopHandler{admission.NewDecoder(clientgoscheme.Scheme), n.answer}, n.calls}})
		ns, err := c.CreateNamespace(ctx, "", "bench-noop-"+answer+"-", map[string]string{noopLabel: answer})
		if err != nil {
			return nil, err
		}
		n.ns = ns.Name
		mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "claimbridge-bench-noop-" + answer},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: answer + ".noop.bench.claimbridge.io", AdmissionReviewVersions: []string{"v1"}, SideEffects: &none, FailurePolicy: &ignore,
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{noopLabel: answer}},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}},
			}},
		}
		if _, err := c.InstallWebhookConfiguration(ctx, mwc, "https://127.0.0.1:"+strconv.Itoa(ports[0])+"/"+answer, ca); err != nil {
			return nil, err
		}
		out[answer] = n
	}
	go func() { _ = ws.Start(ctx) }()
	if err := waitStarted(ctx, ws); err != nil {
		return nil, err
	}
	return out, nil
}

// countingHandler counts the requests it passes on.
type countingHandler struct {
	admission.Handler
	calls *atomic.Int64
}

func (h countingHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	h.calls.Add(1)
	return h.Handler.Handle(ctx, req)
}

// createPods creates n pods, pod(prefix<i>), with clients concurrent clients.
func createPods(ctx context.Context, client kubernetes.Interface, pod func(name string) *corev1.Pod, prefix string, n, clients int) (stats, error) {
	var (
		mu  sync.Mutex
		out stats
	)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	start := time.Now()
	err := parallel(ctx, idx, clients, func(ctx context.Context, i int) error {
		t := time.Now()
		p := pod(prefix + strconv.Itoa(i))
		_, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		lat := time.Since(t)
		if err != nil {
			return fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		mu.Lock()
		out.latencies = append(out.latencies, lat)
		mu.Unlock()
		return nil
	})
	out.elapsed = time.Since(start)
	return out, err
}

// scrapeAdmission reads kube-apiserver's admission webhook histogram (the
// call as the apiserver sees it: TLS, network, claimbridge), and
// controller-runtime's webhook latency and claimbridge's feasibility
// histograms from claimbridge.
func scrapeAdmission(ctx context.Context, client kubernetes.Interface, metricsURL string) ([4]histogram, stageTimes, error) {
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return [4]histogram{}, stageTimes{}, fmt.Errorf("read kube-apiserver metrics: %w", err)
	}
	self, err := httpGet(ctx, metricsURL)
	if err != nil {
		return [4]histogram{}, stageTimes{}, fmt.Errorf("read claimbridge metrics: %w", err)
	}
	return [4]histogram{
		scrapeHistogram(string(raw), "apiserver_admission_webhook_admission_duration_seconds", `operation="CREATE"`, `type="admit"`),
		scrapeHistogram(self, "controller_runtime_webhook_latency_seconds", `webhook="`+webhook.Path+`"`),
		scrapeHistogram(self, "claimbridge_feasibility_duration_seconds"),
		scrapeHistogram(self, "claimbridge_admission_duration_seconds"),
	}, scrapeStages(self), nil
}

// idleRates is each process's CPU time per second over a window of d in
// which nothing is created.
func idleRates(binDir string, claimbridgePID int, d time.Duration) map[string]float64 {
	before, began := cpuTimes(binDir, claimbridgePID), time.Now()
	time.Sleep(d)
	after, took := cpuTimes(binDir, claimbridgePID), time.Since(began)
	out := map[string]float64{}
	for name, t := range after {
		out[name] = (t - before[name]).Seconds() / took.Seconds()
	}
	return out
}

// cpuTimes reads the CPU time (user + system) of the control-plane
// components (processes this one started whose binary is in binDir),
// claimbridge (pid) and this process, by name. Only this process's
// descendants count: other control planes on the machine run the same
// binaries, and one that exits would take its CPU time out of the sum.
func cpuTimes(binDir string, claimbridgePID int) map[string]time.Duration {
	type proc struct {
		ppid int
		cpu  time.Duration
	}
	all := map[int]proc{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if ppid, cpu, ok := procStat(pid); ok {
			all[pid] = proc{ppid, cpu}
		}
	}
	self := os.Getpid()
	ours := func(pid int) bool {
		for range 64 {
			if pid == self {
				return true
			}
			p, ok := all[pid]
			if !ok || pid <= 1 {
				return false
			}
			pid = p.ppid
		}
		return false
	}
	out := map[string]time.Duration{}
	for pid, p := range all {
		name := ""
		switch exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); {
		case pid == claimbridgePID:
			name = "claimbridge"
		case pid == self:
			name = "bench client"
		case exe != "" && filepath.Dir(exe) == binDir && ours(pid):
			name = filepath.Base(exe)
		default:
			continue
		}
		out[name] += p.cpu
	}
	return out
}

// procStat is a process's parent and utime + stime (clock ticks of 10 ms).
func procStat(pid int) (ppid int, cpu time.Duration, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command may contain spaces: fields start after the last ')'.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return ppid, time.Duration(u+s) * 10 * time.Millisecond, true
}
