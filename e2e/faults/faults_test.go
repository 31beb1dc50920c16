package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
)

const indexAnnotation = "faults.claimbridge.io/index"

// legacyPod asks for one L4 GPU the device-plugin way; the l4-inference
// fleet serves it.
func legacyPod(ns, generateName string) *corev1.Pod {
	p := builders.MakePod("", ns).Container("server").Limit("nvidia.com/gpu", "1").
		NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj()
	p.GenerateName = generateName + "-"
	return p
}

func translated(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.ResourceClaims, func(c corev1.PodResourceClaim) bool { return c.Name == api.ClaimName })
}

func legacy(p *corev1.Pod) bool {
	_, ok := p.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
	return ok && !translated(p)
}

// createPod creates a pod (a server-side dry run if asked) and returns it as
// the apiserver answered, with the admission warnings of this request.
func createPod(ctx context.Context, pod *corev1.Pod, dryRun bool) (*corev1.Pod, []string, error) {
	cfg := tc.RESTConfig()
	w := &warningLog{}
	cfg.WarningHandler = w
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	got, err := c.CoreV1().Pods(pod.Namespace).Create(ctx, pod, opts)
	return got, w.since(0), err
}

// eventually polls cond until it holds, failing the test after waitTimeout.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	cluster.Eventually(t, waitTimeout, what, cond)
}

// setup gives a test an enforce namespace and its own copy of a fleet, and
// waits until claimbridge translates a legacy pod there (a dry run).
func setup(t *testing.T, prefix, fleetName string) (string, *cluster.Fleet, *cluster.Inventory) {
	t.Helper()
	tc.DumpLogsOnFailure(t)
	ns := tc.Namespace(t, prefix+"-", map[string]string{cluster.ModeLabel: "enforce"})
	dir := filepath.Join(rootDir, "examples", "fleets", fleetName)
	files, err := cluster.ReadFleet(dir)
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := tc.ApplyFleet(t.Context(), dir, cluster.WithNamePrefix(fmt.Sprintf("%s%d", prefix, time.Now().UnixNano()%100_000)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cluster.PollTimeout)
		defer cancel()
		if err := fleet.Remove(ctx); err != nil {
			t.Errorf("remove fleet: %v", err)
		}
	})
	waitVerdict(t, ns, true, "")
	return ns, fleet, files
}

// waitVerdict waits until a dry-run legacy pod in ns comes back translated
// (or, with want false, admitted legacy with a warning containing reason).
func waitVerdict(t *testing.T, ns string, want bool, reason string) {
	t.Helper()
	eventually(t, fmt.Sprintf("a legacy pod in %s translated=%v %s", ns, want, reason), func(ctx context.Context) (bool, error) {
		got, ws, err := createPod(ctx, legacyPod(ns, "probe"), true)
		if err != nil {
			return false, err
		}
		if translated(got) != want {
			return false, fmt.Errorf("translated=%v, warnings %q", translated(got), ws)
		}
		if reason != "" && !slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, reason) }) {
			return false, fmt.Errorf("warnings %q do not say %q", ws, reason)
		}
		return true, nil
	})
}

// admission is one create of a burst.
type admission struct {
	index      int
	start, end time.Time
	pod        *corev1.Pod
	err        error
}

// burst creates n legacy pods in ns from workers goroutines. before(i) runs
// on the feeding goroutine before pod i is handed out, while the pods before
// it are in flight: the place to break something mid-burst.
func burst(ctx context.Context, ns string, n, workers int, before func(i int)) []admission {
	out := make([]admission, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				pod := legacyPod(ns, "burst")
				pod.Annotations = map[string]string{indexAnnotation: strconv.Itoa(i)}
				start := time.Now()
				got, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
				out[i] = admission{index: i, start: start, end: time.Now(), pod: got, err: err}
			}
		})
	}
	for i := range n {
		if before != nil {
			before(i)
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// checkNoneLostOrDuplicated: every create succeeded, and the namespace holds
// exactly the pods created, each index once.
func checkNoneLostOrDuplicated(t *testing.T, ns string, adm []admission) map[string]*corev1.Pod {
	t.Helper()
	for _, a := range adm {
		if a.err != nil {
			t.Errorf("create %d failed: %v", a.index, a.err)
		}
	}
	list, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byIndex := map[string]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		idx := p.Annotations[indexAnnotation]
		if prev, dup := byIndex[idx]; dup {
			t.Errorf("index %s twice: pods %s and %s", idx, prev.Name, p.Name)
		}
		byIndex[idx] = p
	}
	if len(list.Items) != len(adm) || len(byIndex) != len(adm) {
		t.Errorf("%d pods (%d distinct indices) in %s, want %d", len(list.Items), len(byIndex), ns, len(adm))
	}
	return byIndex
}

// apiserverWebhookCounts sums kube-apiserver's fail-open and rejection
// counters for one webhook.
func apiserverWebhookCounts(t *testing.T, webhook string) (failOpen, rejected float64) {
	t.Helper()
	body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("read kube-apiserver metrics: %v", err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.Contains(line, `name="`+webhook+`"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "apiserver_admission_webhook_fail_open_count{"):
			failOpen += v
		case strings.HasPrefix(line, "apiserver_admission_webhook_rejection_count{"):
			rejected += v
		}
	}
	return failOpen, rejected
}

// audit runs `claimbridge audit` (the built binary) against the namespace.
func audit(t *testing.T, ns string) report.Report {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), cb.Bin, "audit", "--kubeconfig", tc.Kubeconfig, "-n", ns, "-o", "json")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("claimbridge audit: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("claimbridge audit: %v", err)
	}
	var rep report.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("audit report: %v\n%.500s", err, out)
	}
	return rep
}

func TestWebhookKilledMidBurstFailsOpenAndTranslationResumesAfterRestart(t *testing.T) {
	const n, killAt, restartAt = 500, 167, 334
	ns, _, _ := setup(t, "kill", "l4-inference")
	failOpenBefore, _ := apiserverWebhookCounts(t, cb.WebhookName)

	var killed, restarting, ready time.Time
	adm := burst(t.Context(), ns, n, 8, func(i int) {
		switch i {
		case killAt:
			p := cb.Process()
			if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
				t.Errorf("kill claimbridge: %v", err)
			}
			select {
			case <-p.Exited():
			case <-time.After(10 * time.Second):
				t.Error("claimbridge survived SIGKILL for 10s")
			}
			killed = time.Now()
		case restartAt:
			restarting = time.Now()
			if err := cb.Restart(t.Context()); err != nil {
				t.Fatalf("restart claimbridge: %v", err)
			}
			ready = time.Now()
		}
	})
	byIndex := checkNoneLostOrDuplicated(t, ns, adm)

	var before, down, after, untranslated []string
	for _, a := range adm {
		p := byIndex[strconv.Itoa(a.index)]
		if p == nil {
			continue
		}
		if !translated(p) {
			untranslated = append(untranslated, p.Name)
			if !legacy(p) {
				t.Errorf("pod %d (%s) is neither translated nor asks for nvidia.com/gpu: %+v", a.index, p.Name, p.Spec.Containers[0].Resources)
			}
		}
		switch {
		case a.end.Before(killed) && a.index < killAt-8: // certainly answered before the kill
			before = append(before, p.Name)
			if !translated(p) {
				t.Errorf("pod %d, created before the kill, is not translated", a.index)
			}
		case a.start.After(killed) && a.end.Before(restarting):
			down = append(down, p.Name)
			if translated(p) {
				t.Errorf("pod %d, created while claimbridge was down, is translated", a.index)
			}
		case a.start.After(ready):
			after = append(after, p.Name)
			if !translated(p) {
				t.Errorf("pod %d, created after the restart, is not translated", a.index)
			}
		}
	}
	t.Logf("%d pods: %d answered before the kill, %d created while down, %d after the restart; %d untranslated",
		n, len(before), len(down), len(after), len(untranslated))
	if len(before) < killAt/2 || len(down) < (restartAt-killAt)/2 || len(after) < (n-restartAt)/2 {
		t.Errorf("too few pods in a phase to judge: %d before, %d down, %d after", len(before), len(down), len(after))
	}

	// kube-apiserver failed open once per untranslated pod.
	failOpenAfter, _ := apiserverWebhookCounts(t, cb.WebhookName)
	if got := failOpenAfter - failOpenBefore; got != float64(len(untranslated)) {
		t.Errorf("kube-apiserver failed open %v times, want once per untranslated pod (%d)", got, len(untranslated))
	}

	// The webhook could not report the pods it never saw; the audit does.
	rep := audit(t, ns)
	var reported []string
	for _, r := range rep.Items {
		if r.Outcome == reason.OutcomeTranslate {
			reported = append(reported, r.Name)
		}
	}
	slices.Sort(reported)
	slices.Sort(untranslated)
	if !slices.Equal(reported, untranslated) {
		t.Errorf("audit reports %d pods to translate, want the %d untranslated ones", len(reported), len(untranslated))
	}
}

// writeFileAtomic replaces dir/name the way certs/files.go and the kubelet's
// Secret volumes do: a temporary file renamed over the old one.
func writeFileAtomic(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return errors.Join(err, tmp.Close(), os.Remove(tmp.Name()))
	}
	if err := tmp.Close(); err != nil {
		return errors.Join(err, os.Remove(tmp.Name()))
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}

func TestCertificateRotatedMidBurstFailsNoHandshake(t *testing.T) {
	const n, rotateAt = 300, 150
	ns, _, _ := setup(t, "rotate", "l4-inference")
	failOpenBefore, rejectedBefore := apiserverWebhookCounts(t, cb.WebhookName)
	serialBefore, err := servingSerial(cb)
	if err != nil {
		t.Fatal(err)
	}
	adm := burst(t.Context(), ns, n, 8, func(i int) {
		if i != rotateAt {
			return
		}
		cert, err := tc.IssueServingCert([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		// Key first, certificate last, as certs/files.go writes them.
		if err := writeFileAtomic(cb.CertDir, "tls.key", cert.KeyPEM); err != nil {
			t.Fatal(err)
		}
		if err := writeFileAtomic(cb.CertDir, "tls.crt", cert.CertPEM); err != nil {
			t.Fatal(err)
		}
	})
	byIndex := checkNoneLostOrDuplicated(t, ns, adm)
	for i, p := range byIndex {
		if !translated(p) {
			t.Errorf("pod %s (%s) is not translated: its webhook call failed", i, p.Name)
		}
	}
	failOpenAfter, rejectedAfter := apiserverWebhookCounts(t, cb.WebhookName)
	if failOpenAfter != failOpenBefore || rejectedAfter != rejectedBefore {
		t.Errorf("kube-apiserver webhook failures: fail-open %v→%v, rejections %v→%v; want none", failOpenBefore, failOpenAfter, rejectedBefore, rejectedAfter)
	}
	var serial *big.Int
	eventually(t, "the webhook serves the new certificate", func(context.Context) (bool, error) {
		serial, err = servingSerial(cb)
		return err == nil && serial.Cmp(serialBefore) != 0, err
	})
	// And the apiserver still trusts what is served now.
	got, ws, err := createPod(t.Context(), legacyPod(ns, "after-rotation"), false)
	if err != nil {
		t.Fatal(err)
	}
	if !translated(got) {
		t.Errorf("a pod after the rotation is not translated: %q", ws)
	}
	t.Logf("serving certificate %x → %x during a burst of %d pods", serialBefore, serial, n)
}

// withdrawAll deletes every slice of the fleet; restore publishes them again.
func withdrawAll(ctx context.Context, f *cluster.Fleet, files *cluster.Inventory) error {
	for _, s := range files.ResourceSlices {
		if err := f.DeleteSlice(ctx, s.Name); err != nil {
			return err
		}
	}
	return nil
}

func restore(ctx context.Context, f *cluster.Fleet, files *cluster.Inventory) error {
	for _, s := range files.ResourceSlices {
		if _, err := f.AddSlice(ctx, s.DeepCopy()); err != nil {
			return err
		}
	}
	return nil
}

func TestSlicesChangingMidBurstNeitherCrashNorStaleVerdicts(t *testing.T) {
	const n = 400
	ns, fleet, files := setup(t, "slices", "l4-inference")
	flapping := make(chan struct{})
	flapErr := make(chan error, 1)
	var flaps int
	go func() {
		defer close(flapErr)
		for {
			select {
			case <-flapping:
				return
			default:
			}
			if err := withdrawAll(t.Context(), fleet, files); err != nil {
				flapErr <- err
				return
			}
			time.Sleep(100 * time.Millisecond)
			if err := restore(t.Context(), fleet, files); err != nil {
				flapErr <- err
				return
			}
			flaps++
			time.Sleep(100 * time.Millisecond)
		}
	}()
	adm := burst(t.Context(), ns, n, 8, nil)
	close(flapping)
	if err := <-flapErr; err != nil {
		t.Fatalf("change slices: %v", err)
	}
	byIndex := checkNoneLostOrDuplicated(t, ns, adm)
	translatedCount := 0
	for _, p := range byIndex {
		if translated(p) {
			translatedCount++
		} else if !legacy(p) {
			t.Errorf("pod %s is neither translated nor legacy", p.Name)
		}
	}
	t.Logf("%d pods while the fleet's slices were withdrawn and republished %d times: %d translated", n, flaps, translatedCount)
	if flaps < 2 {
		t.Errorf("the slices changed only %d times during the burst", flaps)
	}
	if !cb.Alive() {
		t.Fatal("claimbridge exited")
	}
	if code, body := cb.Readyz(); code != 200 {
		t.Fatalf("claimbridge not ready after the burst: %d %s", code, body)
	}

	// Verdicts follow the inventory: without slices a pod stays legacy...
	if err := withdrawAll(t.Context(), fleet, files); err != nil {
		t.Fatal(err)
	}
	waitVerdict(t, ns, false, "Infeasible")
	got, ws, err := createPod(t.Context(), legacyPod(ns, "withdrawn"), false)
	if err != nil {
		t.Fatal(err)
	}
	if !legacy(got) || !slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, "Infeasible: kept as submitted") }) {
		t.Errorf("with the slices withdrawn: translated=%v, warnings %q; want legacy with an Infeasible warning", translated(got), ws)
	}
	// ...and with them back it is translated again.
	if err := restore(t.Context(), fleet, files); err != nil {
		t.Fatal(err)
	}
	waitVerdict(t, ns, true, "")
	got, ws, err = createPod(t.Context(), legacyPod(ns, "restored"), false)
	if err != nil {
		t.Fatal(err)
	}
	if !translated(got) {
		t.Errorf("with the slices restored the pod is not translated: %q", ws)
	}
}

func TestAPIServerRestartIsReflectedInReadinessAndInformersRecover(t *testing.T) {
	ns, fleet, files := setup(t, "apiserver", "l4-inference")
	if code, body := cb.Readyz(); code != 200 {
		t.Fatalf("not ready before the restart: %d %s", code, body)
	}
	var downStatus int
	var downBody string
	err := tc.RestartAPIServer(t.Context(), func(ctx context.Context) error {
		// While kube-apiserver is down, readiness says so.
		return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			downStatus, downBody = cb.Readyz()
			return downStatus != 200, nil
		})
	})
	t.Logf("claimbridge's readiness while kube-apiserver was down: %d\n%s", downStatus, downBody)
	if downStatus == 200 {
		t.Errorf("claimbridge stayed ready while kube-apiserver was down: %s", downBody)
	} else if !strings.Contains(downBody, "kube-apiserver") {
		t.Errorf("readiness failed without naming kube-apiserver: %d %s", downStatus, downBody)
	}
	if err != nil && downStatus != 200 {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
	if !cb.Alive() {
		t.Fatal("claimbridge exited while kube-apiserver restarted")
	}
	eventually(t, "claimbridge ready again", func(context.Context) (bool, error) {
		code, body := cb.Readyz()
		if code != 200 {
			return false, fmt.Errorf("%d %s", code, body)
		}
		return true, nil
	})

	// The informers watch again: a fleet change after the restart reaches
	// the verdicts.
	waitVerdict(t, ns, true, "")
	if err := withdrawAll(t.Context(), fleet, files); err != nil {
		t.Fatal(err)
	}
	waitVerdict(t, ns, false, "Infeasible")
	if err := restore(t.Context(), fleet, files); err != nil {
		t.Fatal(err)
	}
	waitVerdict(t, ns, true, "")
	got, ws, err := createPod(t.Context(), legacyPod(ns, "after-restart"), false)
	if err != nil {
		t.Fatal(err)
	}
	if !translated(got) {
		t.Errorf("a pod after the restart is not translated: %q", ws)
	}
}
