package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/testing/placementcorpus"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
)

// The placement corpus of feasibility (testdata/placement) on the
// real control plane: every pod is created through kube-apiserver in an
// enforce namespace, on the fleet its file names, under its file's policy.
// The offline test (feasibility's TestPlacementCorpus) proves where each
// translation lands; this one checks that kube-scheduler agrees.

const placementCorpusDir = "../../feasibility/testdata/placement"

type (
	corpusFile   = placementcorpus.File
	corpusCase   = placementcorpus.Case
	corpusResult = placementcorpus.Result
)

// policyDocument is the file's policy as the server's policy file would
// hold it: its own, its profiles, or the default policy.
func policyDocument(f *corpusFile) *v1alpha1.TranslationPolicy {
	if doc := f.PolicyDocument(); doc != nil {
		return doc
	}
	return defaultPolicyDocument()
}

// loadPlacementCorpus reads every corpus file and its golden results, by name.
func loadPlacementCorpus(t *testing.T) (map[string]*corpusFile, map[string]corpusResult) {
	t.Helper()
	files, err := placementcorpus.Load(placementCorpusDir)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := placementcorpus.LoadGolden(placementCorpusDir, files)
	if err != nil {
		t.Fatal(err)
	}
	return files, golden
}

// corpusFleet is one corpus fleet published under a prefix.
type corpusFleet struct {
	*cluster.Fleet
	// fileName maps a published node name to its name in the fleet's files
	// (and so in the golden files).
	fileName map[string]string
}

// publishCorpusFleet publishes a corpus fleet and waits until claimbridge's
// snapshot holds exactly its DRA nodes: the golden node sets are over this
// fleet alone.
func publishCorpusFleet(t *testing.T, name, probeNS string) *corpusFleet {
	t.Helper()
	dir := filepath.Join(placementCorpusDir, "fleets", name)
	inv, err := cluster.ReadFleet(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The fleet's DeviceClasses decide what a claim matches; one of the same
	// name that another fleet left in the cluster would change decisions.
	for _, dc := range inv.DeviceClasses {
		have, err := client.ResourceV1().DeviceClasses().Get(t.Context(), dc.Name, metav1.GetOptions{})
		if err == nil && !equality.Semantic.DeepEqual(have.Spec, dc.Spec) {
			t.Fatalf("DeviceClass %s in the cluster differs from the corpus fleet's: %+v, want %+v", dc.Name, have.Spec, dc.Spec)
		}
	}
	fleet, err := tc.ApplyFleet(t.Context(), dir, cluster.WithNamePrefix("corpus-"+name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cluster.PollTimeout)
		defer cancel()
		if err := fleet.Remove(ctx); err != nil {
			t.Errorf("remove fleet %s: %v", name, err)
		}
	})
	cf := &corpusFleet{Fleet: fleet, fileName: map[string]string{}}
	for _, n := range inv.Nodes {
		cf.fileName[fleet.NodeName(n.Name)] = n.Name
	}
	draNodes := map[string]bool{}
	for _, s := range fleet.Published.ResourceSlices {
		if s.Spec.NodeName != nil {
			draNodes[*s.Spec.NodeName] = true
		}
	}
	// The probe asks for the GPUs of the fleet's driver: AMD's alone where
	// no class serves NVIDIA GPUs.
	gpu := corev1.ResourceName("nvidia.com/gpu")
	if !slices.ContainsFunc(inv.DeviceClasses, func(dc *resourceapi.DeviceClass) bool { return dc.Name == "gpu.nvidia.com" }) {
		gpu = "amd.com/gpu"
	}
	waitInventory(t)
	waitDRANodes(t, probeNS, draNodes, gpu)
	return cf
}

// waitDRANodes waits until claimbridge's snapshot has exactly the DRA nodes
// want: an audit-mode probe pod that lands nowhere reports how many DRA
// nodes the placement check compared. The fleet's last slice is created
// last, so its node being counted means every slice before it was seen.
func waitDRANodes(t *testing.T, probeNS string, want map[string]bool, gpu corev1.ResourceName) {
	t.Helper()
	list, err := client.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if s.Spec.NodeName != nil && !want[*s.Spec.NodeName] {
			t.Fatalf("node %s publishes DRA devices and is not of the corpus fleet: the golden node sets would not hold", *s.Spec.NodeName)
		}
	}
	i := 0
	eventually(t, fmt.Sprintf("claimbridge compares over the fleet's %d DRA nodes", len(want)), func(ctx context.Context) (bool, error) {
		i++
		name := fmt.Sprintf("probe-%d", i)
		probe := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: probeNS},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{corev1.LabelTopologyZone: "nowhere"},
				Containers: []corev1.Container{{Name: "probe", Image: "registry.example/probe:1", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{gpu: resource.MustParse("1")},
				}}},
			},
		}
		if _, err := client.CoreV1().Pods(probeNS).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
			return false, err
		}
		podGone(ctx, probeNS, name)
		row, err := reportRow(ctx, probeNS, name)
		if err != nil {
			return false, err
		}
		if row.Placement == nil {
			return false, fmt.Errorf("the probe got no placement check: %s", row.Headline())
		}
		if row.Placement.Nodes != len(want) {
			return false, fmt.Errorf("the placement check compared %d DRA nodes", row.Placement.Nodes)
		}
		return true, nil
	})
}

// fetchReport reads claimbridge's live report of a namespace ("" for all).
func fetchReport(ctx context.Context, ns string) (*report.Report, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL+"/report?namespace="+ns, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /report: %s", resp.Status)
	}
	var rep report.Report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return nil, fmt.Errorf("decode /report: %w", err)
	}
	return &rep, nil
}

// reportRow is the latest row the webhook recorded for a pod.
func reportRow(ctx context.Context, ns, name string) (report.Row, error) {
	rep, err := fetchReport(ctx, ns)
	if err != nil {
		return report.Row{}, err
	}
	for _, r := range slices.Backward(rep.Items) {
		if r.Name == name {
			return r, nil
		}
	}
	return report.Row{}, fmt.Errorf("no report row for pod %s/%s", ns, name)
}

// corpusTally counts what the run did, for the summary line.
type corpusTally struct {
	pods, translated, kept int
	onVerdictNode          int
	// rejected: kept, and refused by kube-apiserver's validation as submitted.
	rejected    []string
	slowest     time.Duration
	slowestCase string
}

func TestPlacementCorpusTranslatedPodsAreBoundInsideTheProvenSetAndKeptPodsSayWhy(t *testing.T) {
	start := time.Now()
	ns, _ := setup(t, "enforce")
	probeNS := tc.Namespace(t, "corpus-probe-", map[string]string{cluster.ModeLabel: "audit"})
	files, golden := loadPlacementCorpus(t)
	byFleet := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		byFleet[files[name].Fleet] = append(byFleet[files[name].Fleet], name)
	}
	var tally corpusTally
	for _, fleetName := range slices.Sorted(maps.Keys(byFleet)) {
		// One fleet at a time, removed before the next is published.
		t.Run(fleetName, func(t *testing.T) {
			fleet := publishCorpusFleet(t, fleetName, probeNS)
			for _, fileName := range byFleet[fleetName] {
				f := files[fileName]
				usePolicy(t, policyDocument(f))
				policy, err := f.CompilePolicy()
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range f.Cases {
					began := time.Now()
					t.Run(fileName+"/"+c.Name, func(t *testing.T) {
						plugin, _, _ := policy.RunsExtendedResourceToleration(c.Pod)
						runCorpusCase(t, ns, fleet, c, golden[c.Name], plugin, &tally)
					})
					// With the cleanup: the pod deleted and its claim gone.
					if d := time.Since(began); d > tally.slowest {
						tally.slowest, tally.slowestCase = d, fileName+"/"+c.Name
					}
				}
			}
		})
	}
	if want := len(golden); tally.pods != want {
		t.Errorf("%d of the corpus's %d pods were created", tally.pods, want)
	}
	t.Logf("%d pods in %v: %d translated and bound inside their proven set (%d on the node of the webhook's verdict), %d kept as submitted for their golden reason (of which refused by kube-apiserver's validation as submitted: %v); slowest case %s (%v)",
		tally.pods, time.Since(start).Round(time.Millisecond), tally.translated, tally.onVerdictNode, tally.kept, tally.rejected,
		tally.slowestCase, tally.slowest.Round(time.Millisecond))
}

// runCorpusCase creates one corpus pod and checks it against its golden
// result: a translated pod is bound by kube-scheduler to a node of the
// proven set with its claim allocated there, then deleted with its claim
// so that the next case finds the fleet empty; a pod kept as submitted is
// admitted unchanged, for the golden reason. The suite's control plane does
// not run the ExtendedResourceToleration admission plugin: where the cluster
// runs it (plugin: the file's policy says so, implicitTolerations or the gke
// profile, or says nothing and the pod requires a label only GKE nodes carry,
// translate.Policy.RunsExtendedResourceToleration), the pod is created with
// the tolerations the plugin would have
// given it before the webhook, as on such a cluster (the plugin itself runs
// in faults' TestGKEPodWithoutTolerationsIsTranslatedOntoTheTaintedGPUNode).
func runCorpusCase(t *testing.T, ns string, fleet *corpusFleet, c corpusCase, want corpusResult, plugin bool, tally *corpusTally) {
	t.Logf("%s: %s", c.Name, c.Why)
	pod := corpusPod(c, ns)
	fleet.RenamePodNodeReferences(pod)
	if plugin {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, podfacts.AdmissionTolerations(pod)...)
	}
	submitted := pod.DeepCopy()
	mark := warnings.mark()
	got, createErr := client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
	ws := warnings.since(mark)
	tally.pods++
	if createErr == nil {
		// Also when the case fails: the next one must find the fleet empty.
		t.Cleanup(func() { deleteAndWaitClaimsGone(t, ns, got.Name) })
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pod %s/%s:\n%s\nadmission warnings: %q", ns, pod.Name, describePod(ns, pod.Name), ws)
		}
	})
	row, err := reportRow(t.Context(), ns, pod.Name)
	if err != nil {
		t.Fatalf("%v (create: %v)", err, createErr)
	}
	if row.Outcome != want.Outcome || row.Decisive == nil || string(row.Decisive.Code) != want.Reason {
		t.Fatalf("webhook decided %s (%s), golden %s (%s)", row.Outcome, row.Headline(), want.Outcome, want.Reason)
	}
	if createErr != nil {
		// The webhook decided, then kube-apiserver's validation refused the
		// pod. That is right only if it refuses the pod as submitted, too.
		if want.Outcome == reason.OutcomeTranslate || !apierrors.IsInvalid(createErr) {
			t.Fatalf("create pod: %v", createErr)
		}
		if err := invalidAsSubmitted(t, submitted, createErr); err != nil {
			t.Fatal(err)
		}
		t.Logf("kept as submitted (%s), and kube-apiserver rejects the pod as submitted: %v", want.Reason, createErr)
		tally.kept++
		tally.rejected = append(tally.rejected, c.Name)
		return
	}
	if want.Placement != nil {
		if row.Placement == nil {
			t.Fatalf("the webhook ran no placement check; golden: legacy %v, translated %v", want.Placement.Legacy, want.Placement.Translated)
		}
		if row.Placement.Legacy != len(want.Placement.Legacy) || row.Placement.Translated != len(want.Placement.Translated) {
			t.Errorf("the webhook's placement check: legacy on %d, translated on %d of %d DRA nodes; golden %d (%v) and %d (%v)",
				row.Placement.Legacy, row.Placement.Translated, row.Placement.Nodes,
				len(want.Placement.Legacy), want.Placement.Legacy, len(want.Placement.Translated), want.Placement.Translated)
		}
	}
	if row.Verdict != want.Verdict {
		// Usage is the only input that differs from the offline check's, and
		// the previous case's claim may still be in the webhook's cache.
		if want.Verdict == "FitsNow" && row.Verdict == "FitsWhenFree" {
			t.Logf("verdict %s, golden FitsNow (a claim of an earlier case still counted)", row.Verdict)
		} else {
			t.Errorf("verdict %s, golden %s", row.Verdict, want.Verdict)
		}
	}

	if want.Outcome != reason.OutcomeTranslate {
		if diff := unchanged(submitted, got); diff != "" {
			t.Errorf("pod kept as submitted was changed: %s", diff)
		}
		if want.Outcome == reason.OutcomeKeepLegacy && !warned(ws, want.Reason+": kept as submitted; ") {
			t.Errorf("admission warnings %q do not name the reason %s", ws, want.Reason)
		}
		tally.kept++
		return
	}

	if !hasClaim(got) || got.Annotations[api.AnnotationTemplate] == "" {
		t.Fatalf("not translated: claims %v, annotations %v", got.Spec.ResourceClaims, got.Annotations)
	}
	if !warned(ws, "Translated: uses ResourceClaimTemplate "+got.Annotations[api.AnnotationTemplate]) {
		t.Errorf("admission warnings %q do not name the template", ws)
	}
	p := bound(t, ns, got.Name)
	alloc := allocation(t, p)
	node, ok := fleet.fileName[p.Spec.NodeName]
	if !ok {
		t.Fatalf("bound to %s, a node outside the corpus fleet", p.Spec.NodeName)
	}
	// The proven set is the legacy set (placement Exact) or part of it
	// (Subset): the pod lands where it could have landed as submitted. A
	// case whose policy turns the check off (placement-off) has no proven
	// set; it must still be bound, its claim allocated on its node.
	if want.Placement != nil && (!slices.Contains(want.Placement.Translated, node) || !slices.Contains(want.Placement.Legacy, node)) {
		t.Errorf("bound to %s, outside the proven set %v or the legacy set %v", node, want.Placement.Translated, want.Placement.Legacy)
	}
	for _, r := range alloc.Devices.Results {
		if r.Pool != p.Spec.NodeName {
			t.Errorf("device %s/%s/%s allocated for request %s is not on the pod's node %s", r.Driver, r.Pool, r.Device, r.Request, p.Spec.NodeName)
		}
	}
	tally.translated++
	if row.Node == p.Spec.NodeName {
		tally.onVerdictNode++
	}
}

// invalidAsSubmitted checks that kube-apiserver refuses the pod as
// submitted, without the webhook: a server-side dry run in a namespace the
// webhook does not see must fail with the same causes.
func invalidAsSubmitted(t *testing.T, submitted *corev1.Pod, admitted error) error {
	plain := tc.Namespace(t, "corpus-plain-", nil)
	pod := submitted.DeepCopy()
	pod.Namespace = plain
	_, err := client.CoreV1().Pods(plain).Create(t.Context(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil {
		return fmt.Errorf("kube-apiserver refused the pod through the webhook but accepts it as submitted: %w", admitted)
	}
	if !apierrors.IsInvalid(err) {
		return fmt.Errorf("kube-apiserver refused the pod through the webhook (%s), and as submitted for another cause: %w", admitted.Error(), err)
	}
	causes := func(err error) []metav1.StatusCause {
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Details != nil {
			return status.Status().Details.Causes
		}
		return nil
	}
	if !equality.Semantic.DeepEqual(causes(admitted), causes(err)) {
		return fmt.Errorf("kube-apiserver refused the pod through the webhook for %v, as submitted for %v", causes(admitted), causes(err))
	}
	return nil
}

// corpusPod is a copy of the case's pod (completed when the corpus was
// loaded: name, images) in ns.
func corpusPod(c corpusCase, ns string) *corev1.Pod {
	pod := c.Pod.DeepCopy()
	pod.Namespace = ns
	return pod
}

// unchanged compares what claimbridge would change in a pod: resources,
// node selector, node affinity, claims and its annotations. kube-apiserver
// defaults requests from limits, so the submitted requests must stay, not
// be all there is.
func unchanged(submitted, got *corev1.Pod) string {
	var diffs []string
	if len(got.Spec.ResourceClaims) != 0 {
		diffs = append(diffs, fmt.Sprintf("resource claims %v", got.Spec.ResourceClaims))
	}
	for k := range got.Annotations {
		// A pod kept as submitted carries its decision, nothing else of
		// claimbridge's.
		decision := k == "claimbridge.io/decision" || k == "claimbridge.io/reason" || k == "claimbridge.io/decision-message"
		if strings.Contains(k, "claimbridge.io/") && !decision {
			diffs = append(diffs, "annotation "+k)
		}
	}
	if !equality.Semantic.DeepEqual(submitted.Spec.NodeSelector, got.Spec.NodeSelector) {
		diffs = append(diffs, fmt.Sprintf("nodeSelector %v, submitted %v", got.Spec.NodeSelector, submitted.Spec.NodeSelector))
	}
	if !equality.Semantic.DeepEqual(submitted.Spec.Affinity, got.Spec.Affinity) {
		diffs = append(diffs, fmt.Sprintf("affinity %+v, submitted %+v", got.Spec.Affinity, submitted.Spec.Affinity))
	}
	pairs := [][2][]corev1.Container{{submitted.Spec.InitContainers, got.Spec.InitContainers}, {submitted.Spec.Containers, got.Spec.Containers}}
	for _, pair := range pairs {
		if len(pair[0]) != len(pair[1]) {
			diffs = append(diffs, fmt.Sprintf("%d containers, submitted %d", len(pair[1]), len(pair[0])))
			continue
		}
		for i, s := range pair[0] {
			g := pair[1][i]
			if !equality.Semantic.DeepEqual(s.Resources.Limits, g.Resources.Limits) || len(g.Resources.Claims) != 0 {
				diffs = append(diffs, fmt.Sprintf("container %s: limits %v claims %v, submitted limits %v", s.Name, g.Resources.Limits, g.Resources.Claims, s.Resources.Limits))
			}
			for name, q := range s.Resources.Requests {
				if gq, ok := g.Resources.Requests[name]; !ok || gq.Cmp(q) != 0 {
					diffs = append(diffs, fmt.Sprintf("container %s: request %s is %v, submitted %v", s.Name, name, g.Resources.Requests[name], q))
				}
			}
		}
	}
	return strings.Join(diffs, "; ")
}

// deleteAndWaitClaimsGone deletes a pod and waits until its namespace holds
// no ResourceClaim: kube-controller-manager deletes the claim it made for a
// translated pod, which frees the devices for the next case.
func deleteAndWaitClaimsGone(t *testing.T, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	podGone(ctx, ns, name)
	var left []string
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		claims, err := client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		left = left[:0]
		for _, c := range claims.Items {
			left = append(left, c.Name)
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("claims %v of pod %s still there after %v: the next case may not find the fleet empty", left, name, waitTimeout)
	}
}

// describePod is what `kubectl describe pod` says that matters here: where
// the pod is, its scheduling condition, the events about it (the
// scheduler's) and the claims of its namespace.
func describePod(ns, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		b.WriteString("  pod is gone\n")
	case err != nil:
		fmt.Fprintf(&b, "  get pod: %v\n", err)
	default:
		fmt.Fprintf(&b, "  node %q, phase %s, claims %v\n", p.Spec.NodeName, p.Status.Phase, p.Status.ResourceClaimStatuses)
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	evs, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		fmt.Fprintf(&b, "  events: %v\n", err)
	} else {
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "  event %s %s from %s (x%d): %s\n", e.Type, e.Reason, e.Source.Component+e.ReportingController, max(e.Count, 1), e.Message)
		}
	}
	claims, err := client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, c := range claims.Items {
			fmt.Fprintf(&b, "  claim %s: allocated %t, reserved for %v\n", c.Name, c.Status.Allocation != nil, c.Status.ReservedFor)
		}
	}
	return b.String()
}
