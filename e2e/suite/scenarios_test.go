package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

const (
	h100 = "NVIDIA-H100-80GB-HBM3"
	a100 = "NVIDIA-A100-SXM4-80GB"
)

func product(p string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpIn, Values: []string{p}}
}

// create creates a pod and returns it as stored, with the admission
// warnings of the request.
func create(t *testing.T, pod *corev1.Pod) (*corev1.Pod, []string) {
	t.Helper()
	mark := warnings.mark()
	got, err := client.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	t.Cleanup(func() { podGone(context.Background(), got.Namespace, got.Name) })
	return got, warnings.since(mark)
}

// bound waits until the scheduler binds the pod and returns it.
func bound(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, "pod "+name+" bound", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return p.Spec.NodeName != "", nil
	})
	return pod
}

// allocation returns the allocated claimbridge claim of a bound pod.
func allocation(t *testing.T, pod *corev1.Pod) *resourceapi.AllocationResult {
	t.Helper()
	var claim *resourceapi.ResourceClaim
	eventually(t, "claim of "+pod.Name+" allocated", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range p.Status.ResourceClaimStatuses {
			if s.Name == api.ClaimName && s.ResourceClaimName != nil {
				c, err := client.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, *s.ResourceClaimName, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				claim = c
				return c.Status.Allocation != nil, nil
			}
		}
		return false, nil
	})
	return claim.Status.Allocation
}

// device finds an allocated device in the published slices.
func device(t *testing.T, r resourceapi.DeviceRequestAllocationResult) resourceapi.Device {
	t.Helper()
	slices, err := client.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slices.Items {
		if s.Spec.Driver != r.Driver || s.Spec.Pool.Name != r.Pool {
			continue
		}
		for _, d := range s.Spec.Devices {
			if d.Name == r.Device {
				return d
			}
		}
	}
	t.Fatalf("device %s/%s/%s is in no slice", r.Driver, r.Pool, r.Device)
	return resourceapi.Device{}
}

func attr(d resourceapi.Device, name string) string {
	a, ok := d.Attributes[resourceapi.QualifiedName(name)]
	switch {
	case !ok:
		return ""
	case a.StringValue != nil:
		return *a.StringValue
	case a.IntValue != nil:
		return fmt.Sprint(*a.IntValue)
	case a.VersionValue != nil:
		return *a.VersionValue
	}
	return ""
}

func hasClaim(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.ResourceClaims, func(c corev1.PodResourceClaim) bool { return c.Name == api.ClaimName })
}

func warned(ws []string, substr string) bool {
	return slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, substr) })
}

func TestEnforcedLegacyPodIsTranslatedAllocatedAndBoundWhereTheVerdictSaid(t *testing.T) {
	ns, fl := setup(t, "enforce", "l4-inference", "dgx-h100")
	pod := builders.MakePod("infer", ns).Container("server").Limit("nvidia.com/gpu", "1").
		NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj()
	got, ws := create(t, pod)
	if !hasClaim(got) || got.Spec.NodeSelector["nvidia.com/gpu.product"] != "" {
		t.Fatalf("pod was not translated: claims %v, nodeSelector %v, warnings %q", got.Spec.ResourceClaims, got.Spec.NodeSelector, ws)
	}
	if _, ok := got.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; ok {
		t.Error("the legacy resource is still in the limits")
	}
	tmplName := got.Annotations[api.AnnotationTemplate]
	if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Get(t.Context(), tmplName, metav1.GetOptions{}); err != nil {
		t.Fatalf("template: %v", err)
	}
	if !warned(ws, "Translated: uses ResourceClaimTemplate "+tmplName+" (FitsNow, e.g. on ") {
		t.Errorf("warnings %q do not name the verdict", ws)
	}
	p := bound(t, ns, got.Name)
	alloc := allocation(t, p)
	if !nodeNames(fl)[p.Spec.NodeName] || !strings.Contains(p.Spec.NodeName, "l4-inference") {
		t.Errorf("bound to %s, want an L4 node of the fleet", p.Spec.NodeName)
	}
	// The verdict named a node of the same class (an L4 node): the scheduler
	// may choose another equivalent one.
	if !warned(ws, "l4-inference") {
		t.Errorf("the verdict did not name an L4 node: %q", ws)
	}
	for _, r := range alloc.Devices.Results {
		d := device(t, r)
		if r.Pool != p.Spec.NodeName || attr(d, "productName") != "NVIDIA L4" {
			t.Errorf("allocated %s/%s (%s), want an NVIDIA L4 on %s", r.Pool, r.Device, attr(d, "productName"), p.Spec.NodeName)
		}
	}
}

func TestPrioritizedAlternativeFallsBackWhenPreferredHardwareIsFull(t *testing.T) {
	ns, _ := setup(t, "enforce", "dgx-h100", "a100-mig")
	// Fill every H100.
	for i := range 2 {
		filler := builders.MakePod(fmt.Sprintf("filler-%d", i), ns).Container("c").Limit("nvidia.com/gpu", "8").
			NodeSelector("nvidia.com/gpu.product", h100).Obj()
		f, ws := create(t, filler)
		if !hasClaim(f) {
			t.Fatalf("filler not translated: %q", ws)
		}
		allocation(t, bound(t, ns, f.Name))
	}
	waitInventory(t)
	pod := builders.MakePod("batch", ns).Container("worker").Limit("nvidia.com/gpu", "2").
		PreferredTerm(100, product(h100)).PreferredTerm(50, product(a100)).Obj()
	got, ws := create(t, pod)
	if !hasClaim(got) {
		t.Fatalf("not translated: %q", ws)
	}
	alloc := allocation(t, bound(t, ns, got.Name))
	for _, r := range alloc.Devices.Results {
		if !strings.HasSuffix(r.Request, "/nvidia-a100-sxm4-80gb") {
			t.Errorf("allocated alternative %s, want the A100 one", r.Request)
		}
		if d := device(t, r); attr(d, "productName") != "NVIDIA A100-SXM4-80GB" {
			t.Errorf("allocated %s", attr(d, "productName"))
		}
	}
}

func TestGPUAndNICAreAllocatedOnOnePCIeRoot(t *testing.T) {
	ns, _ := setup(t, "enforce", "dgx-h100")
	// The default policy's rdma/* is the RDMA shared device plugin's, a
	// shared NIC: the pod stays as submitted.
	mark := warnings.mark()
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), builders.MakePod("shared-nic", ns).Container("c").Limit("nvidia.com/gpu", "1").Limit("rdma/hca", "1").Obj(),
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if !warned(warnings.since(mark), "SharedDeviceNotMapped: kept as submitted") {
		t.Errorf("a shared RDMA NIC was not kept legacy: %q", warnings.since(mark))
	}
	// A site whose rdma/hca is one NIC per pod says so in its policy.
	usePolicy(t, policyOf("e2e-exclusive-nic", v1alpha1.PolicySpec{Profiles: v1alpha1.DefaultProfileNames(),
		Resources: []v1alpha1.ResourceRule{{Name: "rdma/hca", Family: "rdma-nic", DeviceClassName: "dranet-rdma", RequestName: "nic"}}}))
	// Take the first NIC of every node, so that the first free GPU's own NIC
	// is busy: only the constraint makes the allocator skip to an aligned pair.
	for i := range 2 {
		f, _ := create(t, builders.MakePod(fmt.Sprintf("nic-%d", i), ns).Container("c").Limit("rdma/hca", "1").Obj())
		allocation(t, bound(t, ns, f.Name))
	}
	waitInventory(t)
	got, ws := create(t, builders.MakePod("worker", ns).Container("c").Limit("nvidia.com/gpu", "1").Limit("rdma/hca", "1").Obj())
	if !hasClaim(got) {
		t.Fatalf("not translated: %q", ws)
	}
	alloc := allocation(t, bound(t, ns, got.Name))
	roots := map[string]string{}
	for _, r := range alloc.Devices.Results {
		roots[r.Driver] = attr(device(t, r), "resource.kubernetes.io/pcieRoot")
	}
	if roots["gpu.nvidia.com"] == "" || roots["gpu.nvidia.com"] != roots["dra.net"] {
		t.Errorf("GPU on %q, NIC on %q: want one PCIe root (results %+v)", roots["gpu.nvidia.com"], roots["dra.net"], alloc.Devices.Results)
	}
}

func TestMIGPodIsBoundToASliceOfItsProfile(t *testing.T) {
	ns, _ := setup(t, "enforce", "a100-mig")
	got, ws := create(t, builders.MakePod("notebook", ns).Container("jupyter").Limit("nvidia.com/mig-1g.10gb", "1").Obj())
	if !hasClaim(got) {
		t.Fatalf("not translated: %q", ws)
	}
	for _, r := range allocation(t, bound(t, ns, got.Name)).Devices.Results {
		d := device(t, r)
		if attr(d, "type") != "mig" || attr(d, "profile") != "1g.10gb" {
			t.Errorf("allocated %s: type %s profile %s", r.Device, attr(d, "type"), attr(d, "profile"))
		}
	}
}

func TestTPUPodWithGKELabelsIsBoundToTheSlice(t *testing.T) {
	ns, _ := setup(t, "enforce", "tpu-v5e", "l4-inference")
	pod := builders.MakePod("jax", ns).Container("server").Limit("google.com/tpu", "8").
		NodeSelector("cloud.google.com/gke-tpu-accelerator", "tpu-v5-lite-podslice").
		NodeSelector("cloud.google.com/gke-tpu-topology", "2x4").
		Toleration("google.com/tpu", corev1.TaintEffectNoSchedule).Obj()
	got, ws := create(t, pod)
	if !hasClaim(got) || len(got.Spec.NodeSelector) != 0 {
		t.Fatalf("not translated: %q %v", ws, got.Spec.NodeSelector)
	}
	alloc := allocation(t, bound(t, ns, got.Name))
	if len(alloc.Devices.Results) != 8 {
		t.Fatalf("%d devices allocated, want 8", len(alloc.Devices.Results))
	}
	for _, r := range alloc.Devices.Results {
		if d := device(t, r); attr(d, "topology") != "2x4" || r.Driver != "tpu.google.com" {
			t.Errorf("allocated %s/%s topology %s", r.Driver, r.Device, attr(d, "topology"))
		}
	}
}

func TestMultiContainerPodGetsADeviceRequestPerContainer(t *testing.T) {
	ns, _ := setup(t, "enforce", "l4-inference")
	pod := builders.MakePod("pair", ns).Container("a").Limit("nvidia.com/gpu", "1").Container("b").Limit("nvidia.com/gpu", "1").Obj()
	got, ws := create(t, pod)
	if !hasClaim(got) {
		t.Fatalf("not translated: %q", ws)
	}
	p := bound(t, ns, got.Name)
	alloc := allocation(t, p)
	reqs := map[string]string{}
	for _, r := range alloc.Devices.Results {
		reqs[r.Request] = r.Device
	}
	if len(reqs) != 2 || reqs["a-gpu"] == "" || reqs["a-gpu"] == reqs["b-gpu"] {
		t.Errorf("requests %v: want a-gpu and b-gpu on two devices", reqs)
	}
	for i, c := range p.Spec.Containers {
		if len(c.Resources.Claims) != 1 || c.Resources.Claims[0].Request != []string{"a-gpu", "b-gpu"}[i] {
			t.Errorf("container %s refers to %v", c.Name, c.Resources.Claims)
		}
	}
}

func TestPodOnlyLegacyNodesServeStaysLegacyAndIsBoundByTheDevicePlugin(t *testing.T) {
	ns, fl := setup(t, "enforce", "legacy-gfd", "l4-inference")
	pod := builders.MakePod("eval", ns).Container("eval").Limit("nvidia.com/gpu", "2").
		NodeSelector("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB").Obj()
	got, ws := create(t, pod)
	if hasClaim(got) || got.Spec.NodeSelector["nvidia.com/gpu.product"] == "" {
		t.Fatalf("pod was changed: %+v", got.Spec)
	}
	if !warned(ws, "Infeasible: kept as submitted; ") {
		t.Errorf("warnings %q", ws)
	}
	p := bound(t, ns, got.Name)
	if !strings.Contains(p.Spec.NodeName, "legacy-gfd") || !nodeNames(fl)[p.Spec.NodeName] {
		t.Errorf("bound to %s, want a device-plugin node", p.Spec.NodeName)
	}
}

func TestAuditNamespaceKeepsPodsUnchangedAndWarns(t *testing.T) {
	ns, _ := setup(t, "audit", "l4-inference")
	pod := builders.MakePod("infer", ns).Container("server").Limit("nvidia.com/gpu", "1").
		NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj()
	got, ws := create(t, pod)
	if hasClaim(got) || got.Spec.NodeSelector["nvidia.com/gpu.product"] != "NVIDIA-L4" {
		t.Fatalf("audit mode changed the pod: %+v", got.Spec)
	}
	if !warned(ws, "claimbridge (audit): Translated: would use ResourceClaimTemplate") {
		t.Errorf("warnings %q", ws)
	}
	list, err := client.ResourceV1().ResourceClaimTemplates(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("audit mode created templates: %v %v", list, err)
	}
	if rep := liveReport(t, ns); rep.Summary.Total != 1 || rep.Items[0].Outcome != reason.OutcomeTranslate {
		t.Errorf("report of %s: %+v", ns, rep.Summary)
	}
	if got.Annotations["claimbridge.io/decision"] != "WouldTranslate" {
		t.Errorf("decision %q, want WouldTranslate", got.Annotations["claimbridge.io/decision"])
	}
	eventually(t, "an Event on the pod", func(ctx context.Context) (bool, error) {
		evs, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(got.UID)})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool { return e.Reason == "AuditWouldTranslate" }), nil
	})
}

func liveReport(t *testing.T, ns string) report.Report {
	t.Helper()
	resp, err := http.Get(metricsURL + "/report?namespace=" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep report.Report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestUnlabelledNamespaceIsNeverSentToTheWebhook(t *testing.T) {
	ns, _ := setup(t, "", "l4-inference")
	before := metricSum(t, "claimbridge_admissions_total")
	got, ws := create(t, builders.MakePod("infer", ns).Container("server").Limit("nvidia.com/gpu", "1").Obj())
	if hasClaim(got) || len(ws) != 0 {
		t.Fatalf("pod changed or warned: %v %q", got.Spec.ResourceClaims, ws)
	}
	if rep := liveReport(t, ns); rep.Summary.Total != 0 {
		t.Errorf("the webhook saw the pod: %+v", rep.Items)
	}
	if after := metricSum(t, "claimbridge_admissions_total"); after != before {
		t.Errorf("admissions went from %v to %v", before, after)
	}
}

func TestServerSideDryRunCreatesNoTemplate(t *testing.T) {
	ns, _ := setup(t, "enforce", "l4-inference")
	pod := builders.MakePod("infer", ns).Container("server").Limit("nvidia.com/gpu", "1").Obj()
	mark := warnings.mark()
	got, err := client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if !hasClaim(got) {
		t.Fatalf("dry run did not show the translation: %q", warnings.since(mark))
	}
	if !warned(warnings.since(mark), "dry run") {
		t.Errorf("warnings %q", warnings.since(mark))
	}
	list, err := client.ResourceV1().ResourceClaimTemplates(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("dry run created templates: %d %v", len(list.Items), err)
	}
}

func TestDeletedTemplateIsRecreatedForAPendingPod(t *testing.T) {
	ns, _ := setup(t, "enforce", "l4-inference")
	first, _ := create(t, builders.MakePod("first", ns).Container("server").Limit("nvidia.com/gpu", "1").Obj())
	allocation(t, bound(t, ns, first.Name))
	name := first.Annotations[api.AnnotationTemplate]
	if err := client.ResourceV1().ResourceClaimTemplates(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "template gone from the API", func(ctx context.Context) (bool, error) {
		_, err := client.ResourceV1().ResourceClaimTemplates(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	// A second replica of the same workload, already translated (the webhook
	// leaves it alone), now refers to a template that does not exist.
	second := first.DeepCopy()
	second.ObjectMeta = metav1.ObjectMeta{Name: "second", Namespace: ns, Annotations: first.Annotations}
	second.Spec.NodeName = ""
	second.Status = corev1.PodStatus{}
	got, _ := create(t, second)
	allocation(t, bound(t, ns, got.Name))
	if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Get(t.Context(), name, metav1.GetOptions{}); err != nil {
		t.Errorf("template not recreated: %v", err)
	}
}

func TestUnusedTemplateIsCollectedAfterTheGracePeriodAndForeignOnesAreNot(t *testing.T) {
	ns, _ := setup(t, "enforce", "l4-inference")
	got, _ := create(t, builders.MakePod("short", ns).Container("server").Limit("nvidia.com/gpu", "1").Obj())
	name := got.Annotations[api.AnnotationTemplate]
	ours, err := client.ResourceV1().ResourceClaimTemplates(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A template someone else made, with a claimbridge-like name but without
	// the managed-by label, and used by no pod.
	foreign := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "claimbridge-foreign", Namespace: ns},
		Spec:       *ours.Spec.DeepCopy(),
	}
	foreign.Spec.Labels = nil
	if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Create(t.Context(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound(t, ns, got.Name)
	podGone(t.Context(), ns, got.Name)
	eventually(t, "unused template deleted", func(ctx context.Context) (bool, error) {
		_, err := client.ResourceV1().ResourceClaimTemplates(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Get(t.Context(), foreign.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("a template claimbridge did not create was touched: %v", err)
	}
}

func TestGeneratedObjectsForTheExamplesPassAPIValidation(t *testing.T) {
	tc.DumpLogsOnFailure(t)
	docs, err := manifest.Read([]string{filepath.Join(examplesDir, "workloads")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, templates, err := offline.Translate(t.Context(), docs, offline.Options{Policy: translate.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	if len(templates) == 0 {
		t.Fatal("no template generated")
	}
	// The custom resources' kinds are not served here: only the templates
	// made from their pod templates are checked.
	crds, err := manifest.Read([]string{filepath.Join(examplesDir, "crds")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, crdTemplates, err := offline.Translate(t.Context(), crds, offline.Options{Policy: translate.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	templates = append(templates, crdTemplates...)
	nsSet := map[string]bool{}
	for _, d := range docs {
		if m, ok := d.Object.(metav1.Object); ok && m.GetNamespace() != "" {
			nsSet[m.GetNamespace()] = true
		}
	}
	for _, tmpl := range templates {
		if tmpl.Namespace != "" {
			nsSet[tmpl.Namespace] = true
		}
	}
	for ns := range nsSet {
		if _, err := tc.CreateNamespace(t.Context(), ns, "", nil); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tc.DeleteNamespace(context.Background(), ns) })
	}
	var buf bytes.Buffer
	if err := offline.WriteObjects(&buf, "yaml", docs, templates); err != nil {
		t.Fatal(err)
	}
	// kubectl of the cluster's version, server-side dry run: real defaulting
	// and validation of every object, nothing stored.
	cmd := exec.CommandContext(t.Context(), tc.Kubectl(), "--kubeconfig", tc.Kubeconfig, "create", "--dry-run=server", "-f", "-")
	cmd.Stdin = &buf
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl create --dry-run=server: %v\n%s", err, out)
	}
	for _, tmpl := range templates {
		if !strings.Contains(string(out), "resourceclaimtemplate.resource.k8s.io/"+tmpl.Name+" created (server dry run)") {
			t.Errorf("template %s not accepted:\n%s", tmpl.Name, out)
		}
	}
}

func TestAuditCommandListsTheLegacyPodsOfTheLiveCluster(t *testing.T) {
	ns, fl := setup(t, "", "l4-inference", "legacy-gfd")
	create(t, builders.MakePod("l4", ns).Container("c").Limit("nvidia.com/gpu", "1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj())
	a100, _ := create(t, builders.MakePod("a100", ns).Container("c").Limit("nvidia.com/gpu", "1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB").Obj())
	// Bound by the scheduler, a100 is audited as it was created (without
	// the nodeName the binding set); pinned was bound at creation.
	bound(t, ns, a100.Name)
	create(t, builders.MakePod("pinned", ns).Container("c").Limit("nvidia.com/gpu", "1").NodeName(fl[1].NodeName("legacy-gfd-0")).Obj())
	// The built binary, as an operator runs it.
	cmd := exec.CommandContext(t.Context(), claimbridgeBin(t), "audit", "--kubeconfig", tc.Kubeconfig, "-n", ns, "-o", "json")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("claimbridge audit: %v\n%s", err, out)
	}
	var rep report.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, r := range rep.Items {
		got[r.Name] = string(r.Outcome) + "/" + r.Verdict
		if r.Name == "pinned" && (r.Decisive == nil || r.Decisive.Code != translate.ReasonNodeNamePreset) {
			t.Errorf("pinned: decisive reason %+v, want %s", r.Decisive, translate.ReasonNodeNamePreset)
		}
	}
	want := map[string]string{"l4": "Translate/FitsNow", "a100": "KeepLegacy/NeverFits", "pinned": "KeepLegacy/"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s (report %v)", k, got[k], v, got)
		}
	}
	if rep.Fleet != "cluster" {
		t.Errorf("fleet %q, want the cluster's own inventory", rep.Fleet)
	}
}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

// claimbridgeBin builds cmd/claimbridge once per test binary.
func claimbridgeBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildOnce.path, buildOnce.err = cluster.BuildClaimbridge(context.Background(), tc.Dir)
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.path
}
