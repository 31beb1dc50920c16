package podtemplates

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/claimbridge/claimbridge/podfacts"
)

// The keys of a KServe component that hold its model container, in the
// order KServe lists them (kserve/kserve pkg/apis/serving/v1beta1/predictor.go,
// PredictorSpec.GetImplementations; explainer.go, ExplainerSpec). A
// framework spec (`pytorch`, `huggingface`, …; an explainer's `art`) is a
// container inline with the framework's fields beside it (storageUri,
// runtimeVersion, protocolVersion: PredictorExtensionSpec,
// ExplainerExtensionSpec); KServe's defaulting moves it to `model` with the
// framework as its modelFormat (inference_service_defaults.go,
// setPredictorModelDefaults) and names the container kserve-container. Its
// resources are the pod's kserve-container's, as `model`'s are.
var (
	kservePredictors = []string{"model", "xgboost", "pytorch", "triton", "sklearn", "tensorflow", "onnx", "pmml", "lightgbm", "paddle", "huggingface"}
	kserveExplainers = []string{"art"}
)

// kserveModel decodes the model container of a KServe component, nil when
// it has none. KServe accepts exactly one implementation
// (validateExactlyOneImplementation): a component with two is a manifest
// KServe rejects, so translation is not written back to it.
func (t *Template) kserveModel(n *yaml.Node, keys []string) (*corev1.Container, error) {
	var found []string
	for _, k := range keys {
		if v := lookup(n, k); v != nil && !isNull(v) {
			found = append(found, k)
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	t.modelKey = found[0]
	if len(found) > 1 {
		t.Unsupported = fmt.Sprintf("KServe takes exactly one of its model and framework specs; this component has %s", strings.Join(found, " and "))
	}
	var c corev1.Container
	if err := decode(lookup(n, t.modelKey), &c); err != nil {
		return nil, fmt.Errorf("%s: %w", t.modelKey, err)
	}
	return &c, nil
}

// kservePodMeta gives the pod of a KServe component what KServe puts on
// every pod it makes from it and its pod webhook reads: the label
// serving.kserve.io/inferenceservice with the InferenceService's name, and
// the InferenceService's annotation serving.kserve.io/gke-accelerator,
// which the component's own annotations override (kserve/kserve
// pkg/controller/v1beta1/inferenceservice/components/predictor.go,
// buildObjectMeta). The pod is decided as KServe makes it: its webhook pins
// it to that accelerator while it asks for nvidia.com/gpu (decide,
// KServeAcceleratorPinned). Both are on the pod as written and as
// translated, so neither is written back.
func (t *Template) kservePodMeta() {
	name := scalar(field(t.obj, "metadata", "name"))
	if name == "" {
		return
	}
	if _, own := t.orig.Labels[podfacts.KServeInferenceService]; !own {
		if t.orig.Labels == nil {
			t.orig.Labels = map[string]string{}
		}
		t.orig.Labels[podfacts.KServeInferenceService] = name
	}
	v := field(t.obj, "metadata", "annotations", podfacts.KServeGKEAccelerator)
	if _, own := t.orig.Annotations[podfacts.KServeGKEAccelerator]; own || v == nil || v.Kind != yaml.ScalarNode {
		return
	}
	if t.orig.Annotations == nil {
		t.orig.Annotations = map[string]string{}
	}
	t.orig.Annotations[podfacts.KServeGKEAccelerator] = v.Value
}
