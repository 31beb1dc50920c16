package chart

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/claimbridge/claimbridge/translate"
)

// compileLikeTheAPIServer compiles the webhook's matchConditions the way kube-apiserver
// does: first as new expressions (what validation of a create or update accepts), then as
// stored expressions into the matcher the admission plugin runs. failurePolicy Fail turns
// evaluation errors into MatchResult.Error, so that tests see them.
func compileLikeTheAPIServer(t *testing.T, hook admissionregistrationv1.MutatingWebhook) matchconditions.Matcher {
	t.Helper()
	env := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	opts := plugincel.OptionalVariableDeclarations{HasParams: false, HasAuthorizer: true}
	compiler := plugincel.NewCompiler(env)
	var accessors []plugincel.ExpressionAccessor
	for _, mc := range hook.MatchConditions {
		acc := &matchconditions.MatchCondition{Name: mc.Name, Expression: mc.Expression}
		if res := compiler.CompileCELExpression(acc, opts, environment.NewExpressions); res.Error != nil {
			t.Fatalf("matchCondition %q does not compile: %v", mc.Name, res.Error)
		}
		accessors = append(accessors, acc)
	}
	fail := admissionregistrationv1.Fail
	filter := plugincel.NewConditionCompiler(env).CompileCondition(accessors, opts, environment.StoredExpressions)
	return matchconditions.NewMatcher(filter, &fail, "webhook", "admit", hook.Name)
}

func match(t *testing.T, m matchconditions.Matcher, pod *corev1.Pod) bool {
	t.Helper()
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	attrs := admission.NewAttributesRecord(pod, nil, gvk, pod.Namespace, pod.Name, gvr, "", admission.Create,
		&metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "system:serviceaccount:apps:deployer"})
	res := m.Match(context.Background(), &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: admission.NewLazyObject(pod)}, nil, nil)
	if res.Error != nil {
		t.Fatalf("matchConditions failed to evaluate: %v", res.Error)
	}
	return res.Matches
}

type podBuilder struct{ pod *corev1.Pod }

func makePod() *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "apps"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app"}}},
	}}
}

func (b *podBuilder) limit(name, qty string) *podBuilder {
	c := &b.pod.Spec.Containers[0]
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[corev1.ResourceName(name)] = resource.MustParse(qty)
	return b
}

func (b *podBuilder) request(name, qty string) *podBuilder {
	c := &b.pod.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[corev1.ResourceName(name)] = resource.MustParse(qty)
	return b
}

func (b *podBuilder) init(name, qty string, sidecar bool) *podBuilder {
	c := corev1.Container{Name: "init", Image: "init", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceName(name): resource.MustParse(qty)},
	}}
	if sidecar {
		always := corev1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, c)
	return b
}

func (b *podBuilder) nodeSelector(k, v string) *podBuilder {
	if b.pod.Spec.NodeSelector == nil {
		b.pod.Spec.NodeSelector = map[string]string{}
	}
	b.pod.Spec.NodeSelector[k] = v
	return b
}

func (b *podBuilder) annotate(k, v string) *podBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[k] = v
	return b
}

func (b *podBuilder) scheduler(name string) *podBuilder {
	b.pod.Spec.SchedulerName = name
	return b
}

func (b *podBuilder) nodeName(name string) *podBuilder {
	b.pod.Spec.NodeName = name
	return b
}

func (b *podBuilder) obj() *corev1.Pod { return b.pod }

func TestDefaultMatchConditionsSelectExactlyThePodsToTranslate(t *testing.T) {
	cfg, err := RenderWebhookConfiguration(t.Context(), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := compileLikeTheAPIServer(t, cfg.Webhooks[0])
	cases := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"a GPU limit is sent":                        {pod: makePod().limit("nvidia.com/gpu", "2").obj(), want: true},
		"a GPU request without a limit is sent":      {pod: makePod().request("nvidia.com/gpu", "1").obj(), want: true},
		"a MIG slice (pattern rule) is sent":         {pod: makePod().limit("nvidia.com/mig-1g.10gb", "1").obj(), want: true},
		"an AMD GPU is sent":                         {pod: makePod().limit("amd.com/gpu", "1").obj(), want: true},
		"a TPU is sent":                              {pod: makePod().limit("google.com/tpu", "4").obj(), want: true},
		"an RDMA device in a sidecar is sent":        {pod: makePod().init("rdma/hca", "1", true).obj(), want: true},
		"a GPU in an init container is sent":         {pod: makePod().init("nvidia.com/gpu", "1", false).obj(), want: true},
		"a GPU beside cpu and memory is sent":        {pod: makePod().limit("cpu", "2").limit("memory", "1Gi").limit("nvidia.com/gpu", "1").obj(), want: true},
		"skip=false does not opt out":                {pod: makePod().limit("nvidia.com/gpu", "1").annotate("claimbridge.io/skip", "false").obj(), want: true},
		"other annotations do not opt out":           {pod: makePod().limit("nvidia.com/gpu", "1").annotate("team", "ml").obj(), want: true},
		"a pod without resources is not sent":        {pod: makePod().obj(), want: false},
		"cpu and memory only are not sent":           {pod: makePod().limit("cpu", "1").request("memory", "1Gi").obj(), want: false},
		"an unmapped extended resource is not sent":  {pod: makePod().limit("example.com/fpga", "1").obj(), want: false},
		"a resource named like a prefix is not sent": {pod: makePod().limit("nvidia.com/mig", "1").obj(), want: false},
		"an opted-out GPU pod is not sent":           {pod: makePod().limit("nvidia.com/gpu", "1").annotate("claimbridge.io/skip", "true").obj(), want: false},
		"a GPU pod for default-scheduler is sent":    {pod: makePod().limit("nvidia.com/gpu", "1").scheduler("default-scheduler").obj(), want: true},
		"a GPU pod bound at creation is not sent":    {pod: makePod().limit("nvidia.com/gpu", "1").nodeName("gpu-node-1").obj(), want: false},
		"a GPU pod for volcano is not sent":          {pod: makePod().limit("nvidia.com/gpu", "1").scheduler("volcano").obj(), want: false},
		"a GPU pod for hami-scheduler is not sent": {
			pod: makePod().limit("nvidia.com/gpu", "1").limit("nvidia.com/gpumem", "4000").scheduler("hami-scheduler").obj(), want: false,
		},
		// Deliberate: without a device request there is nothing to translate.
		"node labels alone are not sent": {
			pod: makePod().nodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").obj(), want: false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := match(t, m, tc.pod); got != tc.want {
				t.Errorf("sent to the webhook = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCustomMatchConditionsFromTheCLI(t *testing.T) {
	policy, err := translate.LoadPolicy([]byte(`apiVersion: claimbridge.io/v1alpha1
kind: TranslationPolicy
metadata: {name: fpga}
spec:
  resources:
  - {name: example.com/fpga, family: fpga, deviceClassName: fpga.example.com, requestName: fpga}
`))
	if err != nil {
		t.Fatal(err)
	}
	var conds []any
	for _, mc := range policy.MatchConditions() { // what `claimbridge policy match-conditions` prints
		conds = append(conds, map[string]any{"name": mc.Name, "expression": mc.Expression})
	}
	cfg, err := RenderWebhookConfiguration(t.Context(), map[string]any{"webhook": map[string]any{"matchConditions": conds}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := compileLikeTheAPIServer(t, cfg.Webhooks[0])
	if !match(t, m, makePod().limit("example.com/fpga", "1").obj()) {
		t.Error("the custom policy's resource is not sent")
	}
	if match(t, m, makePod().limit("nvidia.com/gpu", "1").obj()) {
		t.Error("a resource the custom policy does not map is sent")
	}

	// The scheduler condition is the policy's list, exactly.
	volcano, err := translate.LoadPolicy([]byte(`apiVersion: claimbridge.io/v1alpha1
kind: TranslationPolicy
metadata: {name: volcano}
spec:
  profiles: [nvidia]
  schedulers: [volcano]
`))
	if err != nil {
		t.Fatal(err)
	}
	conds = nil
	for _, mc := range volcano.MatchConditions() {
		conds = append(conds, map[string]any{"name": mc.Name, "expression": mc.Expression})
	}
	cfg, err = RenderWebhookConfiguration(t.Context(), map[string]any{"webhook": map[string]any{"matchConditions": conds}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m = compileLikeTheAPIServer(t, cfg.Webhooks[0])
	for sched, want := range map[string]bool{"volcano": true, "default-scheduler": false, "": false, "volcano-2": false} {
		if got := match(t, m, makePod().limit("nvidia.com/gpu", "1").scheduler(sched).obj()); got != want {
			t.Errorf("schedulerName %q with schedulers [volcano]: sent = %v, want %v", sched, got, want)
		}
	}

	all, err := RenderWebhookConfiguration(t.Context(), map[string]any{"webhook": map[string]any{"matchConditions": []any{}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(all.Webhooks[0].MatchConditions); n != 0 {
		t.Errorf("matchConditions: [] rendered %d conditions, want none", n)
	}
}
