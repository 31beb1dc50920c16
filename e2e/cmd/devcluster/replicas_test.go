package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api"
)

// replicaLine is how the ready message names a replica.
var replicaLine = regexp.MustCompile(`(?m)^  (claimbridge-\d): pid \d+, metrics and report on https://(\S+)$`)

// devCluster is a devcluster process started for a test.
type devCluster struct {
	bin, kubeconfig, msg string
	stderr               *syncBuffer
	stop                 func() error
}

// startDevCluster builds devcluster and runs it with args (and -kubeconfig) until the test
// ends, and waits for its ready message.
func startDevCluster(t *testing.T, args ...string) *devCluster {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "devcluster")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cmd := exec.Command(bin, append(args, "-kubeconfig", kubeconfig)...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		var msg strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			msg.WriteString(sc.Text() + "\n")
			if sc.Text() == "Press Ctrl-C to stop." {
				ready <- msg.String()
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-exited:
			return err
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			return fmt.Errorf("devcluster did not stop within a minute of Ctrl-C")
		}
	}
	t.Cleanup(func() { _ = stop() })
	var msg string
	select {
	case msg = <-ready:
	case err := <-exited:
		t.Fatalf("devcluster exited before it was ready: %v\n%s", err, stderr.String())
	case <-time.After(10 * time.Minute):
		t.Fatalf("devcluster not ready within 10 minutes:\n%s", stderr.String())
	}
	t.Logf("devcluster %s ready in %s:\n%s", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond), msg)

	return &devCluster{bin: bin, kubeconfig: kubeconfig, msg: msg, stderr: stderr, stop: stop}
}

// TestTwoReplicasAdmitABurstWithNonePending runs devcluster -replicas 2 as make dev-cluster
// does, on the mixed fleet (16 DRA slots for a two-GPU pod, 16 free device-plugin GPUs): the
// two replicas elect a leader; a Deployment of 22 two-GPU pods created at once, past what DRA
// holds, then one more pod, then every pod recreated at once, are admitted by both (read
// over HTTPS with the reader token the message says how to get). The replica that does not
// lead forwards every admission that would hold DRA devices to the leader (claimbridge_admissions_forwarded_total{decided=
// "leader"}), none is decided without it, each admission is counted once over the two, and
// every pod is bound — none Pending, none translated past what DRA holds. Ctrl-C stops it all.
func TestTwoReplicasAdmitABurstWithNonePending(t *testing.T) {
	dc := startDevCluster(t, "-replicas", "2")
	msg, kubeconfig, stop, stderr := dc.msg, dc.kubeconfig, dc.stop, dc.stderr
	replicas := replicaLine.FindAllStringSubmatch(msg, -1)
	if len(replicas) != 2 {
		t.Fatalf("the ready message names %d replicas, want 2", len(replicas))
	}
	for _, want := range []string{"2 replicas electing a leader", "inference-l4.yaml", "create token " + readerName, "--cacert "} {
		if !strings.Contains(msg, want) {
			t.Errorf("the ready message does not say %q", want)
		}
	}
	ca := regexp.MustCompile(`--cacert (\S+)`).FindStringSubmatch(msg)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()

	lease, err := client.CoordinationV1().Leases(namespace).Get(ctx, "claimbridge", metav1.GetOptions{})
	if err != nil || ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
		t.Errorf("the leader Lease: %v, holder %q; want one replica holding it", err, ptr.Deref(lease.Spec.HolderIdentity, ""))
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "burst", Labels: map[string]string{api.LabelMode: string(api.ModeEnforce)}}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The mixed fleet's DRA GPUs hold 16 two-GPU pods; its device-plugin nodes 8 more.
	const burstPods, draSlots = 22, 16
	labels := map[string]string{"app": "burst"}
	burst := time.Now()
	if _, err := client.AppsV1().Deployments("burst").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "burst"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](burstPods), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "registry.example/app:1",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}},
			}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	settle := func(pods int) (translated int) {
		t.Helper()
		var pending int
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := client.CoreV1().Pods("burst").List(ctx, metav1.ListOptions{LabelSelector: "app=burst"})
			if err != nil {
				return false, nil
			}
			pending, translated = 0, 0
			for _, p := range list.Items {
				if p.Spec.NodeName == "" {
					pending++
				}
				if p.Annotations[api.AnnotationTemplate] != "" {
					translated++
				}
			}
			return len(list.Items) == pods && pending == 0, nil
		})
		if err != nil {
			t.Fatalf("%d of %d pods still Pending after 2 minutes (%d translated, DRA holds %d)", pending, pods, translated, draSlots)
		}
		if translated > draSlots {
			t.Errorf("%d pods translated, more than the %d DRA holds", translated, draSlots)
		}
		t.Logf("%d pods bound in %s, none Pending: %d translated, %d as submitted", pods, time.Since(burst).Round(time.Millisecond), translated, pods-translated)
		return translated
	}
	settle(burstPods)
	if _, err := client.AppsV1().Deployments("burst").UpdateScale(ctx, "burst", &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "burst", Namespace: "burst"}, Spec: autoscalingv1.ScaleSpec{Replicas: burstPods + 1}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	settle(burstPods + 1)
	// Every pod recreated at once, as at the switch to DRA, the way
	// `kubectl delete pods --all --force --grace-period=0` does it: one pod
	// after the other, each replaced by its ReplicaSet at once. The new
	// pods are admitted while the old pods' claims are still allocated, so
	// DRA looks busy and the device plugin's free GPUs are where they may
	// go. The pods kept there count against that room; the others are
	// translated to wait for the DRA devices the old claims free.
	old, err := client.CoreV1().Pods("burst").List(ctx, metav1.ListOptions{LabelSelector: "app=burst"})
	if err != nil {
		t.Fatal(err)
	}
	burst = time.Now()
	for _, p := range old.Items {
		if err := client.CoreV1().Pods("burst").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
	}
	settle(burstPods + 1)

	tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, readerName, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if len(ca) != 2 {
		t.Fatal("the ready message gives no --cacert")
	}
	pem, err := os.ReadFile(ca[1])
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("the CA of --cacert: %v", err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	get := func(addr, path, token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET https://%s%s: %v", addr, path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	var total, forwardedAll int
	for _, r := range replicas {
		name, addr := r[1], r[2]
		if code, _ := get(addr, "/metrics", ""); code != http.StatusUnauthorized {
			t.Errorf("%s: /metrics without a token: %d, want 401", name, code)
		}
		code, body := get(addr, "/metrics", tr.Status.Token)
		if code != http.StatusOK {
			t.Fatalf("%s: /metrics with the reader's token: %d %.200s", name, code, body)
		}
		admitted := counter(body, "claimbridge_admissions_total", "")
		forwarded := counter(body, "claimbridge_admissions_forwarded_total", `decided="leader"`)
		t.Logf("%s decided %d pods of the burst, forwarded %d to the leader", name, admitted, forwarded)
		if admitted+forwarded == 0 {
			t.Errorf("%s admitted none of the burst: the replicas do not share admission", name)
		}
		if here := counter(body, "claimbridge_admissions_forwarded_total", `decided="here"`); here != 0 {
			t.Errorf("%s decided %d holds without the leader", name, here)
		}
		total += admitted
		forwardedAll += forwarded
		if code, body := get(addr, "/report?format=table", tr.Status.Token); code != http.StatusOK || !strings.Contains(body, "burst") {
			t.Errorf("%s: /report with the reader's token: %d %.300s", name, code, body)
		}
	}

	if total != 2*(burstPods+1) {
		t.Errorf("the two replicas counted %d admissions of the burst's %d pods, each created twice: each must count once, where it was decided", total, burstPods+1)
	}
	if forwardedAll == 0 {
		t.Error("no admission was forwarded to the leader: one replica never leads every hold")
	}
	if err := stop(); err != nil {
		t.Errorf("devcluster after Ctrl-C: %v\n%s", err, stderr.String())
	}
}

// counter sums a counter's series in a /metrics page whose labels hold
// label ("": all of them).
func counter(page, name, label string) int {
	n := 0
	for _, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, label) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err == nil {
			n += int(v)
		}
	}
	return n
}
