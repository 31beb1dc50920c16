package chart

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/claimbridge/claimbridge/translate"
)

func render(t *testing.T, values string) *Rendered {
	t.Helper()
	vals, err := ParseValues(values)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Render(t.Context(), vals, Options{})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return r
}

func decodeOne[T any](t *testing.T, r *Rendered, kind, name string) *T {
	t.Helper()
	found := r.Find(kind, name)
	if len(found) != 1 {
		t.Fatalf("%d %s/%s rendered, want 1 (have %v)", len(found), kind, name, r.Kinds())
	}
	obj := new(T)
	if err := Decode(found[0], obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestDefaultRender(t *testing.T) {
	r := render(t, "")
	wantKinds := []string{
		"ClusterRole/claimbridge", "ClusterRole/claimbridge-metrics-reader", "ClusterRole/claimbridge-reports-view", "ClusterRoleBinding/claimbridge", "Deployment/claimbridge",
		"MutatingWebhookConfiguration/claimbridge", "PodDisruptionBudget/claimbridge",
		"Role/claimbridge", "RoleBinding/claimbridge", "Service/claimbridge", "ServiceAccount/claimbridge",
	}
	if diff := cmp.Diff(wantKinds, r.Kinds()); diff != "" {
		t.Errorf("rendered objects (-want,+got):\n%s", diff)
	}
	if _, unknown, err := r.Typed(); err != nil || len(unknown) > 0 {
		t.Errorf("strict decoding: %v, unknown kinds %v", err, unknown)
	}

	d := decodeOne[appsv1.Deployment](t, r, "Deployment", "claimbridge")
	if got := *d.Spec.Replicas; got != 2 {
		t.Errorf("replicas = %d, want 2", got)
	}
	pod := d.Spec.Template.Spec
	if pod.Affinity == nil || pod.Affinity.PodAntiAffinity == nil ||
		len(pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname {
		t.Errorf("replicas are not spread over nodes: %+v", pod.Affinity)
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context = %+v, want non-root and RuntimeDefault seccomp", psc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container security context = %+v, want read-only root, no escalation, all capabilities dropped", sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resource requests missing: %v", c.Resources.Requests)
	}
	if c.Image != "ghcr.io/claimbridge/claimbridge:0.1.0" {
		t.Errorf("image = %q, want the project's image with the appVersion tag", c.Image)
	}
	wantArgs := []string{
		"serve",
		"--namespace=claimbridge-system",
		"--webhook-port=9443",
		"--cert-dir=/var/run/claimbridge/tls",
		"--tls-mode=self-managed",
		"--tls-min-version=VersionTLS12",
		"--tls-secret-name=claimbridge-ca",
		"--service-name=claimbridge",
		"--webhook-config-name=claimbridge",
		"--ca-validity=43800h",
		"--cert-validity=2160h",
		"--metrics-bind-address=:8080",
		"--metrics-secure=true",
		"--health-probe-bind-address=:8081",
		"--leader-elect=true",
		"--leader-election-id=claimbridge",
		"--template-gc-grace=1h",
		"--feasibility-timeout=2s",
		"--reservation-ttl=2m",
		"--stranded-after=2m",
		"--policy-reports=wgpolicyk8s",
		"--policy-reports-interval=15s",
		"--platform-detect=true",
		"--platform-refresh=5m",
		"--log-format=json",
		"--log-level=info",
	}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("args (-want,+got):\n%s", diff)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes: readiness %+v liveness %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].EmptyDir == nil {
		t.Errorf("self-managed mode writes its certificate to an emptyDir; volumes %+v", pod.Volumes)
	}

	svc := decodeOne[corev1.Service](t, r, "Service", "claimbridge")
	wantPorts := []corev1.ServicePort{
		{Name: "https", Port: 443, TargetPort: intstr.FromString("webhook"), Protocol: corev1.ProtocolTCP},
		{Name: "metrics", Port: 8080, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP},
	}
	if diff := cmp.Diff(wantPorts, svc.Spec.Ports); diff != "" {
		t.Errorf("service ports (-want,+got):\n%s", diff)
	}
	pdb := decodeOne[policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget", "claimbridge")
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("PDB minAvailable = %v, want 1", pdb.Spec.MinAvailable)
	}

	cfg := decodeOne[admissionregistrationv1.MutatingWebhookConfiguration](t, r, "MutatingWebhookConfiguration", "claimbridge")
	sideEffects := admissionregistrationv1.SideEffectClassNoneOnDryRun
	ignore := admissionregistrationv1.Ignore
	equivalent := admissionregistrationv1.Equivalent
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	namespaced := admissionregistrationv1.NamespacedScope
	wantHook := admissionregistrationv1.MutatingWebhook{
		Name:                    "pods.claimbridge.io",
		AdmissionReviewVersions: []string{"v1"},
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: "claimbridge-system", Name: "claimbridge", Path: new("/mutate-v1-pod"), Port: new(int32(443)),
		}},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &namespaced,
			},
		}},
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "claimbridge.io/mode", Operator: metav1.LabelSelectorOpIn, Values: []string{"enforce", "audit"}},
			{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "claimbridge-system"}},
		}},
		MatchConditions:    matchConditions(translate.DefaultPolicy()),
		FailurePolicy:      &ignore,
		MatchPolicy:        &equivalent,
		SideEffects:        &sideEffects,
		TimeoutSeconds:     new(int32(5)),
		ReinvocationPolicy: &ifNeeded,
	}
	if diff := cmp.Diff([]admissionregistrationv1.MutatingWebhook{wantHook}, cfg.Webhooks); diff != "" {
		t.Errorf("webhooks (-want,+got):\n%s", diff)
	}
	if r.Notes == "" {
		t.Error("NOTES.txt rendered empty")
	}
}

func matchConditions(p *translate.Policy) []admissionregistrationv1.MatchCondition {
	var out []admissionregistrationv1.MatchCondition
	for _, mc := range p.MatchConditions() {
		out = append(out, admissionregistrationv1.MatchCondition{Name: mc.Name, Expression: mc.Expression})
	}
	return out
}

func TestCertManagerRender(t *testing.T) {
	cases := map[string]struct {
		values          string
		wantKinds       []string
		wantIssuerKind  string
		wantIssuerName  string
		wantCAIssuerRef bool
	}{
		"without an issuerRef the chart bootstraps its own CA": {
			values: "tls: {mode: cert-manager}",
			wantKinds: []string{
				"Certificate/claimbridge-root-ca", "Certificate/claimbridge-serving",
				"Issuer/claimbridge-ca", "Issuer/claimbridge-selfsigned",
			},
			wantIssuerKind: "Issuer", wantIssuerName: "claimbridge-ca",
		},
		"a given issuerRef signs the serving certificate": {
			values:         "tls: {mode: cert-manager, certManager: {issuerRef: {name: corp-ca, kind: ClusterIssuer}}}",
			wantKinds:      []string{"Certificate/claimbridge-serving"},
			wantIssuerKind: "ClusterIssuer", wantIssuerName: "corp-ca",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := render(t, tc.values)
			var certManager []string
			for _, o := range r.Objects {
				if o.GroupVersionKind().Group == "cert-manager.io" {
					certManager = append(certManager, o.GetKind()+"/"+o.GetName())
				}
			}
			slices.Sort(certManager)
			if diff := cmp.Diff(tc.wantKinds, certManager); diff != "" {
				t.Errorf("cert-manager objects (-want,+got):\n%s", diff)
			}
			serving := r.Find("Certificate", "claimbridge-serving")[0].Object
			spec := serving["spec"].(map[string]any)
			if diff := cmp.Diff(map[string]any{"group": "cert-manager.io", "kind": tc.wantIssuerKind, "name": tc.wantIssuerName}, spec["issuerRef"]); diff != "" {
				t.Errorf("issuerRef (-want,+got):\n%s", diff)
			}
			wantDNS := []any{
				"claimbridge.claimbridge-system.svc", "claimbridge", "claimbridge.claimbridge-system",
				"claimbridge.claimbridge-system.svc.cluster.local",
			}
			if diff := cmp.Diff(wantDNS, spec["dnsNames"]); diff != "" {
				t.Errorf("dnsNames (-want,+got):\n%s", diff)
			}
			if spec["secretName"] != "claimbridge-tls" {
				t.Errorf("secretName = %v", spec["secretName"])
			}

			cfg := decodeOne[admissionregistrationv1.MutatingWebhookConfiguration](t, r, "MutatingWebhookConfiguration", "claimbridge")
			if got := cfg.Annotations["cert-manager.io/inject-ca-from"]; got != "claimbridge-system/claimbridge-serving" {
				t.Errorf("inject-ca-from = %q", got)
			}
			d := decodeOne[appsv1.Deployment](t, r, "Deployment", "claimbridge")
			c := d.Spec.Template.Spec.Containers[0]
			for _, a := range c.Args {
				for _, selfOnly := range []string{"--tls-secret-name", "--webhook-config-name", "--ca-validity"} {
					if strings.HasPrefix(a, selfOnly) {
						t.Errorf("cert-manager mode passes %s", a)
					}
				}
			}
			if !slices.Contains(c.Args, "--tls-mode=cert-manager") {
				t.Errorf("args %v lack --tls-mode=cert-manager", c.Args)
			}
			vols := d.Spec.Template.Spec.Volumes
			if len(vols) != 1 || vols[0].Secret == nil || vols[0].Secret.SecretName != "claimbridge-tls" {
				t.Errorf("the certificate Secret is not mounted: %+v", vols)
			}
			if !c.VolumeMounts[0].ReadOnly {
				t.Error("the certificate mount is writable")
			}
		})
	}
}

func TestOptionalResources(t *testing.T) {
	r := render(t, `
metrics: {serviceMonitor: {enabled: true, interval: 30s, labels: {release: prom}}}
networkPolicy:
  enabled: true
  metricsFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]
  egress: [{ports: [{port: 6443}]}]
`)
	sm := r.Find("ServiceMonitor", "claimbridge")
	if len(sm) != 1 {
		t.Fatalf("ServiceMonitor not rendered: %v", r.Kinds())
	}
	if got := sm[0].GetLabels()["release"]; got != "prom" {
		t.Errorf("ServiceMonitor label release = %q", got)
	}
	endpoints := sm[0].Object["spec"].(map[string]any)["endpoints"].([]any)
	wantEndpoint := map[string]any{
		"port": "metrics", "path": "/metrics", "scheme": "https", "interval": "30s",
		"bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
		"tlsConfig": map[string]any{
			"ca":         map[string]any{"secret": map[string]any{"name": "claimbridge-ca", "key": "ca.crt"}},
			"serverName": "claimbridge.claimbridge-system.svc",
		},
	}
	if diff := cmp.Diff([]any{wantEndpoint}, endpoints); diff != "" {
		t.Errorf("ServiceMonitor endpoints (-want,+got):\n%s", diff)
	}
	np := decodeOne[networkingv1.NetworkPolicy](t, r, "NetworkPolicy", "claimbridge")
	if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes); diff != "" {
		t.Errorf("policy types (-want,+got):\n%s", diff)
	}
	if len(np.Spec.Ingress) != 3 || len(np.Spec.Ingress[0].From) != 0 || len(np.Spec.Ingress[1].From) != 1 {
		t.Errorf("ingress: webhook from anywhere, metrics from the given peers, health: %+v", np.Spec.Ingress)
	}

	plain := render(t, "")
	for _, kind := range []string{"ServiceMonitor", "NetworkPolicy", "ConfigMap", "CustomResourceDefinition"} {
		if len(plain.Find(kind, "")) > 0 {
			t.Errorf("%s rendered by default", kind)
		}
	}
}

func TestPolicyConfigMap(t *testing.T) {
	custom := `apiVersion: claimbridge.io/v1alpha1
kind: TranslationPolicy
metadata:
  name: site
spec:
  profiles: [nvidia]
  resources:
  - name: example.com/fpga
    family: fpga
    deviceClassName: fpga.example.com
    requestName: fpga
`
	cases := map[string]struct {
		values     map[string]any
		wantPolicy func(t *testing.T) *translate.Policy
	}{
		"profiles become a policy of those profiles": {
			values: map[string]any{"policy": map[string]any{"profiles": []any{"nvidia", "rdma"}}},
			wantPolicy: func(t *testing.T) *translate.Policy {
				p, err := translate.ProfilePolicy("nvidia", "rdma")
				if err != nil {
					t.Fatal(err)
				}
				return p
			},
		},
		"a custom policy is stored as given": {
			values: map[string]any{
				"policy":  map[string]any{"custom": custom},
				"webhook": map[string]any{"matchConditions": []any{}},
			},
			wantPolicy: func(t *testing.T) *translate.Policy {
				p, err := translate.LoadPolicy([]byte(custom))
				if err != nil {
					t.Fatal(err)
				}
				return p
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := Render(t.Context(), tc.values, Options{})
			if err != nil {
				t.Fatal(err)
			}
			cm := decodeOne[corev1.ConfigMap](t, r, "ConfigMap", "claimbridge-policy")
			got, err := translate.LoadPolicy([]byte(cm.Data["policy.yaml"]))
			if err != nil {
				t.Fatalf("the ConfigMap's policy does not load: %v\n%s", err, cm.Data["policy.yaml"])
			}
			if diff := cmp.Diff(tc.wantPolicy(t).MatchConditions(), got.MatchConditions()); diff != "" {
				t.Errorf("policy differs (-want,+got):\n%s", diff)
			}
			d := decodeOne[appsv1.Deployment](t, r, "Deployment", "claimbridge")
			if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--policy=/etc/claimbridge/policy.yaml") {
				t.Errorf("--policy not passed: %v", d.Spec.Template.Spec.Containers[0].Args)
			}
			var mounted bool
			for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
				mounted = mounted || (m.MountPath == "/etc/claimbridge" && m.SubPath == "")
			}
			if !mounted {
				t.Error("the policy is not mounted as a directory (a subPath mount never sees updates)")
			}
		})
	}
}

func TestSchemaAndGuardsRejectBadValues(t *testing.T) {
	cases := map[string]struct {
		values  string
		wantErr string
	}{
		"an unknown TLS mode":               {values: "tls: {mode: manual}", wantErr: "/tls/mode"},
		"an unknown failure policy":         {values: "webhook: {failurePolicy: Maybe}", wantErr: "/webhook/failurePolicy"},
		"an unknown log format":             {values: "logFormat: xml", wantErr: "/logFormat"},
		"an unknown log level":              {values: "logLevel: trace", wantErr: "/logLevel"},
		"an unknown reinvocation policy":    {values: "webhook: {reinvocationPolicy: Always}", wantErr: "/webhook/reinvocationPolicy"},
		"a zero timeout":                    {values: "webhook: {timeoutSeconds: 0}", wantErr: "/webhook/timeoutSeconds"},
		"a timeout above the API's 30s":     {values: "webhook: {timeoutSeconds: 31}", wantErr: "/webhook/timeoutSeconds"},
		"TLS 1.1 as the minimum":            {values: "tls: {minVersion: VersionTLS11}", wantErr: "/tls/minVersion"},
		"a misspelt top-level value":        {values: "replicas: 3", wantErr: "replicas"},
		"a misspelt nested value":           {values: "webhook: {failurepolicy: Fail}", wantErr: "failurepolicy"},
		"an unknown profile":                {values: "policy: {profiles: [cuda]}", wantErr: "/policy/profiles/0"},
		"a duration that Go cannot parse":   {values: "tls: {selfManaged: {caValidity: 5y}}", wantErr: "/tls/selfManaged/caValidity"},
		"an empty image repository":         {values: "image: {repository: ''}", wantErr: "/image/repository"},
		"a malformed allocator feature":     {values: "controller: {allocatorFeatures: 'DeviceTaints'}", wantErr: "/controller/allocatorFeatures"},
		"a matchCondition without a name":   {values: "webhook: {matchConditions: [{expression: 'true'}]}", wantErr: "name"},
		"zero replicas":                     {values: "replicaCount: 0", wantErr: "/replicaCount"},
		"an issuer kind cert-manager lacks": {values: "tls: {mode: cert-manager, certManager: {issuerRef: {name: x, kind: Vault}}}", wantErr: "/tls/certManager/issuerRef/kind"},
		"profiles and a custom policy together": {
			values:  "policy: {profiles: [nvidia], custom: 'x'}",
			wantErr: "policy.profiles and policy.custom are exclusive",
		},
		"a custom policy without its matchConditions": {
			values:  "policy: {custom: 'x'}",
			wantErr: "policy.custom needs webhook.matchConditions",
		},
		"a disruption budget that blocks every drain": {
			values:  "replicaCount: 1",
			wantErr: "podDisruptionBudget.minAvailable (1) must be less than replicaCount (1)",
		},
		"an issuerRef without a name": {
			values:  "tls: {mode: cert-manager, certManager: {issuerRef: {kind: ClusterIssuer}}}",
			wantErr: "tls.certManager.issuerRef.name is required",
		},
		"an unknown reports API":               {values: "reports: {api: kyverno}", wantErr: "/reports/api"},
		"a metrics reader without a name":      {values: "metrics: {readers: [{kind: User}]}", wantErr: "/metrics/readers/0"},
		"a metrics reader of an unknown kind":  {values: "metrics: {readers: [{kind: Pod, name: x}]}", wantErr: "/metrics/readers/0/kind"},
		"a misspelt metrics reader field":      {values: "metrics: {readers: [{kind: User, name: x, namepsace: y}]}", wantErr: "namepsace"},
		"metrics.secure that is not a boolean": {values: "metrics: {secure: 'no'}", wantErr: "/metrics/secure"},
		"a reports interval Go cannot parse":   {values: "reports: {interval: 15}", wantErr: "/reports/interval"},
		"an existing ServiceAccount without its name": {
			values:  "serviceAccount: {create: false}",
			wantErr: "serviceAccount.name is required",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			vals, err := ParseValues(tc.values)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Render(t.Context(), vals, Options{})
			if err == nil {
				t.Fatalf("render succeeded, want an error mentioning %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error does not mention %q:\n%v", tc.wantErr, err)
			}
		})
	}
}

func TestAcceptedEdgeValues(t *testing.T) {
	cases := map[string]string{
		"a single replica without a disruption budget": "replicaCount: 1\npodDisruptionBudget: {enabled: false}",
		"TLS 1.3 only":                            "tls: {minVersion: VersionTLS13}",
		"failurePolicy Fail and a 30s timeout":    "webhook: {failurePolicy: Fail, timeoutSeconds: 30, reinvocationPolicy: Never}",
		"an existing ServiceAccount":              "serviceAccount: {create: false, name: existing}",
		"leader election off":                     "leaderElection: {enabled: false}",
		"an image digest":                         "image: {digest: 'sha256:" + strings.Repeat("a", 64) + "'}",
		"allocator features":                      "controller: {allocatorFeatures: 'ConsumableCapacity=false,DeviceTaints=false'}",
		"every pod of the selected namespaces":    "webhook: {matchConditions: []}",
		"more excluded namespaces, with a repeat": "webhook: {excludeNamespaces: [gpu-operator, kube-system]}",
	}
	for name, values := range cases {
		t.Run(name, func(t *testing.T) {
			r := render(t, values)
			if _, unknown, err := r.Typed(); err != nil || len(unknown) > 0 {
				t.Errorf("strict decoding: %v, unknown kinds %v", err, unknown)
			}
		})
	}
}
