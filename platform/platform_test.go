package platform

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

func declared(t *testing.T, doc string) *Platform {
	t.Helper()
	p, err := v1alpha1.DecodePlatform([]byte("apiVersion: claimbridge.io/v1alpha1\nkind: Platform\nspec:\n" + doc))
	if err != nil {
		t.Fatal(err)
	}
	return Declare(Defaults(), p, "platform.yaml")
}

func TestMappingFollowsTheInstallPath(t *testing.T) {
	cases := map[string]struct {
		doc        string
		wantClass  string
		wantSource Source
	}{
		"the drivers' defaults map nothing":                      {doc: "  presets: []\n"},
		"the GPU Operator's classes map nothing":                 {doc: "  presets: [gpu-operator]\n"},
		"the standalone chart maps nvidia.com/gpu":               {doc: "  presets: [nvidia-dra-driver]\n", wantClass: "gpu.nvidia.com", wantSource: Declared},
		"a release before DRAExtendedResource serves no mapping": {doc: "  presets: [nvidia-dra-driver]\n  kubernetes: \"1.35\"\n"},
		"declared classes replace the preset's":                  {doc: "  presets: [nvidia-dra-driver]\n  drivers:\n  - family: nvidia-gpu\n    classes:\n    - name: gpu.nvidia.com\n"},
		"a class declared to map":                                {doc: "  drivers:\n  - family: nvidia-gpu\n    classes:\n    - name: gpu.example.com\n      extendedResourceName: nvidia.com/gpu\n", wantClass: "gpu.example.com", wantSource: Declared},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, ok := mappingOf(declared(t, tc.doc), "nvidia.com/gpu")
			if ok != (tc.wantClass != "") || c.Name != tc.wantClass || (ok && c.Fact.Source != tc.wantSource) {
				t.Errorf("Mapping(nvidia.com/gpu) = %+v, %v; want class %q (%s)", c, ok, tc.wantClass, tc.wantSource)
			}
		})
	}
}

func TestWhatNoOneSaysIsUnknown(t *testing.T) {
	p := declared(t, "  presets: [eks-auto-mode]\n")
	d := p.Driver("nvidia-gpu")
	if d.Install.Value != string(v1alpha1.InstallEKSAutoMode) || d.Install.Source != Declared {
		t.Errorf("install %+v, want EKSAutoMode declared", d.Install)
	}
	for _, c := range d.Classes {
		if c.Fact.Known() {
			t.Errorf("class %s: %+v; whether EKS Auto Mode's class maps nvidia.com/gpu is not published, so it must be unknown", c.Name, c.Fact)
		}
	}
	if !strings.Contains(strings.Join(p.Lines(), "\n"), "whether it maps an extended resource is unknown") {
		t.Errorf("the lines do not say the mapping is unknown:\n%s", strings.Join(p.Lines(), "\n"))
	}
}

func TestSharesDefaultToTheDriversOwn(t *testing.T) {
	cases := map[string]struct {
		doc        string
		wantMode   string
		wantN      int
		wantSource Source
	}{
		"nothing said: disabled, the driver's default": {doc: "  presets: [gpu-operator]\n", wantMode: v1alpha1.SharesDisabled, wantSource: Default},
		"four shares per GPU":                          {doc: "  drivers:\n  - family: nvidia-gpu\n    consumableShares: \"4\"\n", wantMode: v1alpha1.SharesCount, wantN: 4, wantSource: Declared},
		"memory":                                       {doc: "  drivers:\n  - family: nvidia-gpu\n    consumableShares: memory\n", wantMode: v1alpha1.SharesMemory, wantSource: Declared},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, f := declared(t, tc.doc).Shares("nvidia-gpu")
			if s.Mode != tc.wantMode || s.N != tc.wantN || f.Source != tc.wantSource {
				t.Errorf("Shares = %+v (%+v), want %s %d (%s)", s, f, tc.wantMode, tc.wantN, tc.wantSource)
			}
		})
	}
}

func TestPoolsAndTheirAutoscalers(t *testing.T) {
	doc := `  pools:
  - label: karpenter.sh/nodepool
    name: gpu
    autoscaler: Karpenter
    dra: true
  - label: cloud.google.com/gke-nodepool
    name: l4
    autoscaler: GKE
    minNodes: 0
  - label: eks.amazonaws.com/nodegroup
    autoscaler: ClusterAutoscaler
    dra: true
    provider: externalgrpc
`
	p := declared(t, doc)
	cases := map[string]struct {
		labels                 map[string]string
		wantIgnores, wantKnown bool
		wantFromZero           bool
		wantRemedy             string
	}{
		"a Karpenter pool with DRA on provisions for claims, from zero too": {labels: map[string]string{"karpenter.sh/nodepool": "gpu"}, wantKnown: true, wantFromZero: true},
		"another Karpenter pool keeps Karpenter's default: ignores claims":  {labels: map[string]string{"karpenter.sh/nodepool": "cpu"}, wantIgnores: true, wantKnown: true, wantRemedy: "--ignore-dra-requests=false"},
		"a GKE pool never grows from zero for claims":                       {labels: map[string]string{"cloud.google.com/gke-nodepool": "l4"}, wantKnown: true, wantRemedy: "minimum to 1 node"},
		"the Cluster Autoscaler's externalgrpc provider cannot from zero":   {labels: map[string]string{"eks.amazonaws.com/nodegroup": "a"}, wantKnown: true, wantRemedy: "externalgrpc"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pool := p.PoolOf(tc.labels)
			if pool == nil {
				t.Fatal("no pool")
			}
			ignores, known := pool.IgnoresClaims()
			zero, remedy, _ := pool.FromZero()
			if ignores != tc.wantIgnores || known != tc.wantKnown || zero != tc.wantFromZero || !strings.Contains(remedy, tc.wantRemedy) {
				t.Errorf("IgnoresClaims %v %v, FromZero %v %q; want %v %v, %v %q", ignores, known, zero, remedy, tc.wantIgnores, tc.wantKnown, tc.wantFromZero, tc.wantRemedy)
			}
		})
	}
	if p.PoolOf(map[string]string{"kubernetes.io/hostname": "x"}) != nil {
		t.Error("a node in no pool has a pool")
	}
}

func TestDetect(t *testing.T) {
	standalone := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "nvidia-dra", Name: "dra-driver-nvidia-gpu-kubelet-plugin",
		Labels: map[string]string{"helm.sh/chart": "dra-driver-nvidia-gpu-0.5.0"}},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "gpus", Image: "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.5.0",
			Env: []corev1.EnvVar{{Name: "CONSUMABLE_SHARES", Value: "4"}, {Name: "FEATURE_GATES", Value: "ConsumableShares=true,DynamicMIG=true,"}},
		}}}}}}
	operator := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "gpu-operator", Name: "nvidia-dra-driver-kubelet-plugin",
		OwnerReferences: []metav1.OwnerReference{{Kind: "GPUCluster", Name: "cluster"}}},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "gpus", Image: "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.1",
			Env: []corev1.EnvVar{{Name: "CONSUMABLE_SHARES", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "shares"}}}},
		}}}}}}
	karpenter := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "karpenter"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "controller", Image: "public.ecr.aws/karpenter/controller:1.14.1", Env: []corev1.EnvVar{{Name: "IGNORE_DRA_REQUESTS", Value: "false"}},
		}}}}}}
	mapping := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com", Annotations: map[string]string{"meta.helm.sh/release-name": "nvidia-dra", "meta.helm.sh/release-namespace": "nvidia-dra"}},
		Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To("nvidia.com/gpu"), Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}}}}
	gke := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"cloud.google.com/gke-nodepool": "l4-pool"}}}

	t.Run("the standalone chart, its class and its modes", func(t *testing.T) {
		p := Detect(Objects{Version: "v1.37.2", Classes: []*resourceapi.DeviceClass{mapping}, DaemonSets: []*appsv1.DaemonSet{standalone}})
		d := p.Driver("nvidia-gpu")
		got := map[string]string{"kubernetes": p.Kubernetes.Value, "install": d.Install.Value, "release": d.Release.Value, "shares": d.Shares.Value, "dynamicMIG": d.DynamicMIG.Value, "mps": d.MPS.Value}
		want := map[string]string{"kubernetes": "1.37", "install": "NVIDIADRADriver", "release": "v0.5.0", "shares": "4", "dynamicMIG": "true", "mps": "false"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want,+got):\n%s", diff)
		}
		if c, ok := mappingOf(p, "nvidia.com/gpu"); !ok || c.Fact.Source != Detected || c.HelmRelease != "nvidia-dra/nvidia-dra" {
			t.Errorf("Mapping = %+v, %v; want the detected class owned by its Helm release", c, ok)
		}
	})
	t.Run("the GPU Operator, and a value it cannot read", func(t *testing.T) {
		p := Detect(Objects{DaemonSets: []*appsv1.DaemonSet{operator}})
		d := p.Driver("nvidia-gpu")
		if d.Install.Value != "GPUOperator" || d.Install.Source != Detected {
			t.Errorf("install %+v, want GPUOperator detected", d.Install)
		}
		if d.Shares.Known() || !strings.Contains(d.Shares.From, "does not read") {
			t.Errorf("shares %+v: a value from a ConfigMap must be unknown, not a default", d.Shares)
		}
	})
	t.Run("Karpenter with its DRA support on, and GKE pools it cannot read", func(t *testing.T) {
		p := Detect(Objects{Deployments: []*appsv1.Deployment{karpenter}, NodePools: []string{"gpu"}, Nodes: []*corev1.Node{gke}})
		pool := p.PoolOf(map[string]string{"karpenter.sh/nodepool": "gpu"})
		if ignores, ok := pool.IgnoresClaims(); ignores || !ok || pool.Name != "gpu" || pool.Release.Value != "1.14.1" {
			t.Errorf("Karpenter pool %+v: ignores %v (%v); want provisions for claims, release 1.14.1", pool, ignores, ok)
		}
		g := p.PoolOf(map[string]string{"cloud.google.com/gke-nodepool": "l4-pool"})
		if g == nil || g.Autoscaler.Known() {
			t.Errorf("GKE pool %+v: whether it autoscales is not visible, so it must be unknown", g)
		}
	})
	t.Run("nothing detected: the drivers' defaults", func(t *testing.T) {
		p := Detect(Objects{})
		if _, ok := mappingOf(p, "nvidia.com/gpu"); ok {
			t.Error("a mapping with nothing detected")
		}
		if s, f := p.Shares("nvidia-gpu"); s.Mode != v1alpha1.SharesDisabled || f.Source != Default {
			t.Errorf("shares %+v (%+v), want the driver's default", s, f)
		}
		if f := p.Driver("google-tpu").WholeNode; f.Value != "true" || f.Source != Default {
			t.Errorf("TPU whole node %+v, want the driver's rule", f)
		}
	})
}

func TestDecodePlatformRejectsBadInputWithFieldPaths(t *testing.T) {
	cases := map[string]struct {
		spec    string
		wantErr string
	}{
		"an unknown preset":            {spec: "  presets: [nvidia]\n", wantErr: `spec.presets[0]: Unsupported value: "nvidia"`},
		"shares that are no mode":      {spec: "  drivers:\n  - family: nvidia-gpu\n    consumableShares: half\n", wantErr: "spec.drivers[0].consumableShares: Invalid value"},
		"a class mapping cpu":          {spec: "  drivers:\n  - family: nvidia-gpu\n    classes:\n    - name: c\n      extendedResourceName: cpu\n", wantErr: "spec.drivers[0].classes[0].extendedResourceName"},
		"a DRA setting for GKE":        {spec: "  pools:\n  - label: cloud.google.com/gke-nodepool\n    autoscaler: GKE\n    dra: true\n", wantErr: "spec.pools[0].dra: Forbidden"},
		"an unknown autoscaler":        {spec: "  pools:\n  - label: a/b\n    autoscaler: KEDA\n", wantErr: `spec.pools[0].autoscaler: Unsupported value: "KEDA"`},
		"a family twice":               {spec: "  drivers:\n  - family: nvidia-gpu\n  - family: nvidia-gpu\n", wantErr: "spec.drivers[1].family: Duplicate value"},
		"a version that is no version": {spec: "  kubernetes: latest\n", wantErr: "spec.kubernetes: Invalid value"},
		"an unknown field":             {spec: "  preset: gpu-operator\n", wantErr: `unknown field "spec.preset"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := v1alpha1.DecodePlatform([]byte("apiVersion: claimbridge.io/v1alpha1\nkind: Platform\nspec:\n" + tc.spec))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// mappingOf is the class that serves an extended resource as submitted
// (KEP-5004) once the switch is done, with the fact that says so; ok is
// false when no class of the platform maps it or kube-scheduler does not
// serve the mapping at this release.
func mappingOf(p *Platform, resource string) (Class, bool) {
	if !p.ServesExtendedResources() {
		return Class{}, false
	}
	for _, d := range p.Drivers {
		for _, c := range d.Classes {
			if c.Maps == resource {
				return c, true
			}
		}
	}
	return Class{}, false
}
