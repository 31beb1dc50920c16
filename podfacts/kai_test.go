package podfacts

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKAIShare(t *testing.T) {
	pod := func(scheduler string, annotations map[string]string, containers ...corev1.Container) *corev1.Pod {
		if len(containers) == 0 {
			containers = []corev1.Container{{Name: "app"}}
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}, Spec: corev1.PodSpec{SchedulerName: scheduler, Containers: containers}}
	}
	withGPU := corev1.Container{Name: "app", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}
	cases := map[string]struct {
		pod    *corev1.Pod
		want   GPUShare
		wantOK bool
	}{
		"a fraction on the first container": {
			pod: pod(KAIScheduler, map[string]string{"gpu-fraction": "0.5"}), want: GPUShare{Devices: 1, Container: "app", Asked: "gpu-fraction: 0.5"}, wantOK: true,
		},
		"memory over two devices, on a named container": {
			pod:  pod(KAIScheduler, map[string]string{"gpu-memory": "2000", "gpu-fraction-num-devices": "2", "gpu-fraction-container-name": "side"}, corev1.Container{Name: "app"}, corev1.Container{Name: "side"}),
			want: GPUShare{Devices: 2, Container: "side", Asked: "gpu-memory: 2000, gpu-fraction-num-devices: 2"}, wantOK: true,
		},
		"another scheduler":      {pod: pod("default-scheduler", map[string]string{"gpu-fraction": "0.5"})},
		"no annotation":          {pod: pod(KAIScheduler, nil)},
		"a whole GPU of its own": {pod: pod(KAIScheduler, map[string]string{"gpu-fraction": "0.5"}, withGPU)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := KAIShare(tc.pod)
			if ok != tc.wantOK {
				t.Fatalf("ok %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("share (-want,+got):\n%s", diff)
			}
			reserved := AsReserved(tc.pod)
			if (reserved != nil) != tc.wantOK {
				t.Fatalf("AsReserved %v, want a pod: %v", reserved, tc.wantOK)
			}
			if reserved == nil {
				return
			}
			if q := ExtendedRequests(reserved)[KAIReservedResource]; q.Value() != tc.want.Devices {
				t.Errorf("the reserved pod asks for %v, want %d %s", ExtendedRequests(reserved), tc.want.Devices, KAIReservedResource)
			}
		})
	}
}
