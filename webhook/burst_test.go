package webhook

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/translate"
)

// burst admits n two-GPU pods of one Deployment (generateName, as a
// ReplicaSet creates them) into the enforce namespace "prod", from workers
// goroutines at once, and returns the admission ids of the pods it
// translated, sorted.
func burst(t *testing.T, f *fixture, n, workers int) []string {
	t.Helper()
	var (
		mu         sync.Mutex
		translated []string
		wg         sync.WaitGroup
	)
	jobs := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				pod := builders.MakePod("", "prod").Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
				pod.GenerateName = "trainer-"
				req := request(t, admissionv1.Create, pod, false)
				req.UID = types.UID(fmt.Sprintf("admission-%02d", i))
				resp := f.handler.Handle(t.Context(), req)
				if !mutated(t, req, resp) {
					if len(resp.Patches) > 0 && f.inv.DevicePluginHolds != nil {
						kept := applied(t, req, resp)
						if kept.Annotations[api.AnnotationReason] == string(decide.ReasonDRABusyLegacyFree) && kept.Annotations[api.AnnotationDevicePluginHold] != string(req.UID) {
							t.Errorf("pod kept on the device plugin carries %s=%q, want %q", api.AnnotationDevicePluginHold, kept.Annotations[api.AnnotationDevicePluginHold], req.UID)
						}
					}
					continue
				}
				if got := applied(t, req, resp).Annotations[api.AnnotationAdmission]; f.handler.Holder != nil && got != string(req.UID) {
					t.Errorf("translated pod carries %s=%q, want %q", api.AnnotationAdmission, got, req.UID)
				}
				mu.Lock()
				translated = append(translated, string(req.UID))
				mu.Unlock()
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	slices.Sort(translated)
	return translated
}

// mixedWithPods is the mixed fleet with its pods listed (none bound): the
// device-plugin nodes' usage is known, as the live inventory's pod
// informer makes it.
func mixedWithPods(f *fixture) {
	f.inv.Fleet.PodsListed = true
}

// reservingFixture is the mixed fleet's fixture with its pods listed and a
// reservation record, as the server wires the handler.
func reservingFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, "mixed", mixedWithPods)
	f.inv.Reservations = inventory.NewReservations(time.Minute)
	f.inv.DevicePluginHolds = inventory.NewDevicePluginHolds(time.Minute)
	f.handler.Holder = f.inv
	return f
}

// draHolds counts the two-GPU pods the DRA side of a fleet holds, the way
// kube-scheduler would place them one after the other: each pod's claim is
// checked against the fleet with the claims before it allocated.
func draHolds(t *testing.T, f *fixture) int {
	t.Helper()
	fleet := *f.inv.Fleet
	fleet.Claims = slices.Clone(fleet.Claims)
	pod := builders.MakePod("p", "prod").Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
	dec, err := decide.Pod(t.Context(), decide.Input{Pod: pod, Policy: translate.DefaultPolicy()})
	if err != nil || dec.Translation.Template == nil {
		t.Fatalf("the pod does not translate: %v", err)
	}
	claims := []*resourceapi.ResourceClaimSpec{&dec.Translation.Template.Spec.Spec}
	checker := feasibility.NewChecker(feasibility.Options{})
	for n := 0; ; n++ {
		snap, err := feasibility.NewSnapshot(&fleet, uint64(n+1), feasibility.DefaultFeatures())
		if err != nil {
			t.Fatal(err)
		}
		v := checker.Check(t.Context(), snap, dec.Translation.Pod, claims)
		if v.Kind != feasibility.FitsNow {
			return n
		}
		fleet.Claims = append(fleet.Claims, &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: fmt.Sprintf("c%d", n)},
			Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: v.Results}}},
		})
	}
}

// TestABurstTranslatesOnlyWhatDRACanHold: a Deployment's burst of two-GPU
// pods on the mixed fleet, more than its DRA GPUs hold, with 16 A100 free
// on two device-plugin nodes: with the reservations, exactly the pods the
// DRA GPUs hold are translated (as many as kube-scheduler would place one
// after the other), each on devices no other holds, and the others stay on
// the device plugin (DRABusyLegacyFree); without them every pod is
// translated against the same free devices — the stranding this guards
// against.
func TestABurstTranslatesOnlyWhatDRACanHold(t *testing.T) {
	holds := draHolds(t, newFixture(t, "mixed", mixedWithPods))
	if holds < 4 {
		t.Fatalf("the mixed fleet's DRA GPUs hold %d two-GPU pods; the test needs a few", holds)
	}
	n := holds + 8 // the 16 device-plugin GPUs hold 8 more
	for _, workers := range []int{1, 8} {
		t.Run(fmt.Sprintf("%d at once", workers), func(t *testing.T) {
			f := reservingFixture(t)
			translated := burst(t, f, n, workers)
			if len(translated) != holds {
				t.Errorf("translated %d pods (%v), want the %d that the DRA GPUs hold", len(translated), translated, holds)
			}
			if got := testutil.ToFloat64(f.metrics.Admissions.WithLabelValues("enforce", "KeepLegacy", string(decide.ReasonDRABusyLegacyFree))); got != 8 {
				t.Errorf("%g pods kept with DRABusyLegacyFree, want 8", got)
			}
			held := map[string]string{}
			for _, c := range f.inv.Reservations.Claims(f.handler.now(), nil) {
				for _, r := range c.Status.Allocation.Devices.Results {
					dev := r.Driver + "/" + r.Pool + "/" + r.Device
					if other, ok := held[dev]; ok {
						t.Errorf("device %s is held for %s and %s", dev, other, c.Name)
					}
					held[dev] = c.Name
				}
			}
			if len(held) != 2*holds {
				t.Errorf("%d devices held, want %d", len(held), 2*holds)
			}
		})
	}
	t.Run("without reservations", func(t *testing.T) {
		f := newFixture(t, "mixed", mixedWithPods)
		if got := burst(t, f, n, 1); len(got) != n {
			t.Errorf("translated %d pods, want all %d (each check sees the same free devices)", len(got), n)
		}
	})
}

// TestABurstPastBothSidesKeepsOnlyWhatTheDevicePluginHolds: a burst past
// what the DRA GPUs and the 16 free device-plugin GPUs hold together. The
// pods kept on the device plugin while DRA is busy count against its room
// (none of them is in the inventory yet): 8 are kept, and the others are
// translated to wait for DRA devices, which the pods that hold them now
// free; without that count every one of them would be kept for the same
// free GPUs, and those past 8 would wait for the device plugin even once
// DRA devices free up.
func TestABurstPastBothSidesKeepsOnlyWhatTheDevicePluginHolds(t *testing.T) {
	holds := draHolds(t, newFixture(t, "mixed", mixedWithPods))
	n := holds + 12
	for _, workers := range []int{1, 8} {
		t.Run(fmt.Sprintf("%d at once", workers), func(t *testing.T) {
			f := reservingFixture(t)
			translated := burst(t, f, n, workers)
			if got := testutil.ToFloat64(f.metrics.Admissions.WithLabelValues("enforce", "KeepLegacy", string(decide.ReasonDRABusyLegacyFree))); got != 8 {
				t.Errorf("%g pods kept with DRABusyLegacyFree, want the 8 the device plugin's GPUs hold", got)
			}
			if len(translated) != holds+4 {
				t.Errorf("translated %d pods, want %d: the %d DRA holds, then the 4 no side runs now, to wait for DRA", len(translated), holds+4, holds)
			}
		})
	}
}

// TestReleasedDevicesServeTheNextPod: once a translated pod is bound (its
// claim allocated) or deleted, its reservation ends and the next pod of a
// full fleet is translated again.
func TestReleasedDevicesServeTheNextPod(t *testing.T) {
	f := reservingFixture(t)
	holds := draHolds(t, f)
	translated := burst(t, f, holds, 1)
	if len(translated) != holds {
		t.Fatalf("translated %d pods, want %d", len(translated), holds)
	}
	pod := builders.MakePod("next", "prod").Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
	if req := request(t, admissionv1.Create, pod, false); mutated(t, req, f.handler.Handle(t.Context(), req)) {
		t.Fatal("the ninth pod was translated while every DRA GPU is held")
	}
	f.inv.Reservations.Release(translated[0])
	req := request(t, admissionv1.Create, pod, false)
	req.UID = "admission-next"
	if resp := f.handler.Handle(t.Context(), req); !mutated(t, req, resp) {
		t.Errorf("after a release the next pod stays legacy: %v", resp.Warnings)
	}
}

// TestWhenDRABusyWait: a namespace labelled claimbridge.io/when-dra-busy=Wait
// has the pod translated while DRA is busy, with a warning that it waits.
func TestWhenDRABusyWait(t *testing.T) {
	f := reservingFixture(t)
	f.inv.Namespaces["prod"].Labels[api.LabelWhenDRABusy] = string(v1alpha1.WhenDRABusyWait)
	holds := draHolds(t, f)
	if got := burst(t, f, holds+2, 1); len(got) != holds+2 {
		t.Fatalf("translated %d pods, want all %d in a Wait namespace", len(got), holds+2)
	}
	pod := builders.MakePod("waits", "prod").Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
	resp := f.handler.Handle(t.Context(), request(t, admissionv1.Create, pod, false))
	if !slices.ContainsFunc(resp.Warnings, func(w string) bool { return containsAll(w, "DRABusyWaiting", "wait") }) {
		t.Errorf("warnings %q do not say the pod waits", resp.Warnings)
	}
}

// TestAPodOfAWaitNamespaceInAKarpenterPoolStaysAsSubmitted: where every
// node is in a Karpenter NodePool, a namespace labelled
// claimbridge.io/when-dra-busy=Wait has only the pods DRA holds
// translated; the others stay on the device plugin with
// AutoscalerIgnoresClaims, counted by reason, whose warning says so and
// leads with its remedy. Once the policy says the autoscalers provision
// for claims (autoscaling.draAware), they are translated and wait.
func TestAPodOfAWaitNamespaceInAKarpenterPoolStaysAsSubmitted(t *testing.T) {
	karpenter := func(f *fixture) {
		for i, n := range f.inv.Fleet.Nodes {
			n = n.DeepCopy()
			n.Labels[v1alpha1.KarpenterNodePoolLabel] = "gpu"
			f.inv.Fleet.Nodes[i] = n
		}
	}
	for name, tc := range map[string]struct {
		draAware bool
		wantKept int
	}{
		"the autoscaler ignores claims: what DRA does not hold stays on the device plugin": {wantKept: 2},
		"autoscaling.draAware: every pod is translated and waits":                          {draAware: true},
	} {
		t.Run(name, func(t *testing.T) {
			f := reservingFixture(t)
			karpenter(f)
			f.inv.Namespaces["prod"].Labels[api.LabelWhenDRABusy] = string(v1alpha1.WhenDRABusyWait)
			policy, err := translate.NewPolicy(&v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
				Spec: v1alpha1.PolicySpec{Profiles: v1alpha1.DefaultProfileNames(), Autoscaling: v1alpha1.AutoscalingRule{DRAAware: tc.draAware}}})
			if err != nil {
				t.Fatal(err)
			}
			f.handler.Policy = func() *translate.Policy { return policy }
			holds := draHolds(t, f)
			if got := burst(t, f, holds+2, 1); len(got) != holds+2-tc.wantKept {
				t.Fatalf("translated %d pods, want %d", len(got), holds+2-tc.wantKept)
			}
			if got := testutil.ToFloat64(f.metrics.Admissions.WithLabelValues("enforce", "KeepLegacy", string(decide.ReasonAutoscalerIgnoresClaims))); got != float64(tc.wantKept) {
				t.Errorf("%g pods kept with AutoscalerIgnoresClaims, want %d", got, tc.wantKept)
			}
			pod := builders.MakePod("late", "prod").Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
			req := request(t, admissionv1.Create, pod, false)
			req.UID = "admission-late"
			resp := f.handler.Handle(t.Context(), req)
			if tc.draAware {
				if !mutated(t, req, resp) || !slices.ContainsFunc(resp.Warnings, func(w string) bool { return strings.Contains(w, "DRABusyWaiting") }) {
					t.Errorf("the late pod: warnings %q, want it translated and waiting", resp.Warnings)
				}
				return
			}
			if mutated(t, req, resp) {
				t.Fatalf("the late pod was translated to wait in a Karpenter pool: %q", resp.Warnings)
			}
			if !slices.ContainsFunc(resp.Warnings, func(w string) bool {
				return containsAll(w, "AutoscalerIgnoresClaims", "autoscaling.draAware") && !strings.Contains(w, "DRABusyWaiting")
			}) {
				t.Errorf("warnings %q do not say why the pod stays as submitted", resp.Warnings)
			}
		})
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestPendingPodsOfOtherAdmissionsAreTakenOver: pods translated by another
// replica (or before a restart) that wait for their claims hold their
// devices in this replica too, once it finds them: the next pods of the
// burst see the DRA GPUs taken and stay on the device plugin.
func TestPendingPodsOfOtherAdmissionsAreTakenOver(t *testing.T) {
	// Another replica: translates the pods DRA holds.
	other := reservingFixture(t)
	holds := draHolds(t, other)
	var pending []*corev1.Pod
	for i := range holds {
		pod := builders.MakePod(fmt.Sprintf("other-%d", i), "prod").Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
		req := request(t, admissionv1.Create, pod, false)
		req.UID = types.UID(fmt.Sprintf("other-%02d", i))
		resp := other.handler.Handle(t.Context(), req)
		if !mutated(t, req, resp) {
			t.Fatalf("the other replica did not translate pod %d: %v", i, resp.Warnings)
		}
		p := applied(t, req, resp)
		p.CreationTimestamp = metav1.NewTime(other.handler.now())
		pending = append(pending, p)
	}

	// This replica: its own record is empty, its informer shows the pods.
	f := reservingFixture(t)
	for _, tmpl := range templates(t, other, "prod") {
		f.inv.Existing = append(f.inv.Existing, &tmpl)
	}
	f.inv.Pending = pending
	if got := burst(t, f, 4, 1); len(got) != 0 {
		t.Errorf("translated %v while the other replica's pending pods hold every DRA GPU", got)
	}
	if got := f.inv.Reservations.Len(); got != holds {
		t.Errorf("%d reservations taken over, want %d", got, holds)
	}
	if got := testutil.ToFloat64(f.metrics.ReservationsTakenOver); got != float64(holds) {
		t.Errorf("claimbridge_reservations_taken_over_total = %g, want %d", got, holds)
	}
}

// TestAPodWhoseClaimIsAllocatedIsNotHeldTwice: kube-scheduler allocates a
// pod's claim before it binds the pod. In between, the pod is still pending
// in the informer and its reservation has ended (the inventory counts its
// claim): it must not be taken over as if another replica had admitted it,
// or its devices count twice and the next pod of the burst is kept off the
// DRA GPUs still free.
func TestAPodWhoseClaimIsAllocatedIsNotHeldTwice(t *testing.T) {
	f := reservingFixture(t)
	holds := draHolds(t, f)
	var pending []*corev1.Pod
	for i := range holds - 1 {
		pod := builders.MakePod(fmt.Sprintf("trainer-%d", i), "prod").Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
		req := request(t, admissionv1.Create, pod, false)
		req.UID = types.UID(fmt.Sprintf("admission-%02d", i))
		resp := f.handler.Handle(t.Context(), req)
		if !mutated(t, req, resp) {
			t.Fatalf("pod %d was not translated: %v", i, resp.Warnings)
		}
		p := applied(t, req, resp)
		p.UID = types.UID(fmt.Sprintf("uid-%02d", i))
		p.CreationTimestamp = metav1.NewTime(f.handler.now())
		pending = append(pending, p)
	}
	// The scheduler allocates the first pod's claim on the devices held
	// for it; the pod is not bound yet.
	first := pending[0]
	var devices []resourceapi.DeviceRequestAllocationResult
	for _, c := range f.inv.Reservations.Claims(f.handler.now(), nil) {
		if c.Name == "claimbridge-reserved-"+first.Annotations[api.AnnotationAdmission] {
			devices = c.Status.Allocation.Devices.Results
		}
	}
	if len(devices) == 0 {
		t.Fatal("no devices held for the first pod")
	}
	f.inv.Fleet.Claims = append(f.inv.Fleet.Claims, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: first.Name + "-gpu", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: first.Name, UID: first.UID}}},
		Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: devices}}},
	})
	for _, p := range pending {
		f.inv.Reservations.Seen(p.Annotations[api.AnnotationAdmission], p.UID)
	}
	// The admission before the next one ended the first pod's reservation.
	f.inv.Reservations.Sweep(f.handler.now(), f.inv.Allocations())
	if got := f.inv.Reservations.Len(); got != holds-2 {
		t.Fatalf("%d reservations held after the first pod's claim was allocated, want %d", got, holds-2)
	}
	for _, tmpl := range templates(t, f, "prod") {
		f.inv.Existing = append(f.inv.Existing, &tmpl)
	}
	f.inv.Pending = pending

	// One DRA slot is left: the next pod of the burst takes it, the one
	// after stays on the device plugin.
	if got := burst(t, f, 2, 1); len(got) != 1 {
		t.Errorf("translated %d of the last 2 pods with one DRA slot left, want 1", len(got))
	}
	if got := f.inv.Reservations.Len(); got != holds-1 {
		t.Errorf("%d reservations held, want %d (the first pod's ended with its claim, the new pod holds one)", got, holds-1)
	}
	if got := testutil.ToFloat64(f.metrics.ReservationsTakenOver); got != 0 {
		t.Errorf("claimbridge_reservations_taken_over_total = %g, want 0: every pending pod was this replica's", got)
	}
}

type pendingSince map[string]time.Time

func (p pendingSince) PendingSince() map[string]time.Time { return p }

// TestPodsWaitingForTheirClaimsAreWaitingInTheReport: the rows of translated
// pods still Pending (their claims not allocated) are "Waiting", with how
// long, not "Ready now"; the others stay as they were.
func TestPodsWaitingForTheirClaimsAreWaitingInTheReport(t *testing.T) {
	f := reservingFixture(t)
	translated := burst(t, f, 4, 1)
	if len(translated) != 4 {
		t.Fatalf("translated %d pods, want 4", len(translated))
	}
	now := f.handler.now()
	f.store.Now = func() time.Time { return now }
	f.store.Pending = pendingSince{translated[0]: now.Add(-90 * time.Second), translated[1]: now.Add(-5 * time.Second)}
	rep := f.store.Report(t.Context(), "prod", "")
	var waiting []string
	for _, r := range rep.Items {
		if r.WaitingSince != nil {
			waiting = append(waiting, r.Admission+" "+r.Waiting)
		}
	}
	slices.Sort(waiting)
	if want := []string{translated[0] + " 1m30s", translated[1] + " 5s"}; !slices.Equal(waiting, want) {
		t.Errorf("waiting rows %q, want %q", waiting, want)
	}
	var page strings.Builder
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data-kpi="waiting">2<`, `data-kpi="now">2<`, `Pending for 1m30s`} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// TestDevicesTheSchedulerGaveAnotherPodAreHeldElsewhere: kube-scheduler
// places pods in its own order, and may allocate to one pod the devices
// picked for another. When it does, the other's reservation is picked
// again on what is left, so that the fleet does not look one pod freer
// than it is: a full fleet stays full.
func TestDevicesTheSchedulerGaveAnotherPodAreHeldElsewhere(t *testing.T) {
	f := reservingFixture(t)
	holds := draHolds(t, f)
	translated := burst(t, f, holds, 1)
	if len(translated) != holds {
		t.Fatalf("translated %d pods, want %d", len(translated), holds)
	}
	a, b := translated[0], translated[1]
	var bDevices []resourceapi.DeviceRequestAllocationResult
	for _, c := range f.inv.Reservations.Claims(f.handler.now(), nil) {
		if c.Name == "claimbridge-reserved-"+b {
			bDevices = c.Status.Allocation.Devices.Results
		}
	}
	// The scheduler allocates b's devices to a's claim and binds a.
	f.inv.Fleet.Claims = append(f.inv.Fleet.Claims, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "a-claim", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "a", UID: "uid-a"}}},
		Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: bDevices}}},
	})
	f.inv.Reservations.Seen(a, "uid-a")

	pod := builders.MakePod("next", "prod").Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
	req := request(t, admissionv1.Create, pod, false)
	req.UID = "admission-next"
	if resp := f.handler.Handle(t.Context(), req); mutated(t, req, resp) {
		t.Errorf("a pod was translated onto a full fleet after the scheduler swapped two pods' devices")
	}
	if got := f.inv.Reservations.Len(); got != holds-1 {
		t.Errorf("%d reservations held, want %d (a's ended with its allocated claim)", got, holds-1)
	}
}
