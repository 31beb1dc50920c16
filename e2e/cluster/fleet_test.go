package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestWithPrefixRenamesNodesPoolsAndEveryReferenceToThem(t *testing.T) {
	inv, err := ReadFleet("../testdata/fleet-minimal")
	if err != nil {
		t.Fatalf("read fleet: %v", err)
	}
	got := inv.WithPrefix("t1")
	if n := got.Nodes[0]; n.Name != "t1-gpu-node-1" || n.Labels[corev1.LabelHostname] != "t1-gpu-node-1" {
		t.Errorf("node %s with hostname label %q, want t1-gpu-node-1 for both", n.Name, n.Labels[corev1.LabelHostname])
	}
	s := got.ResourceSlices[0]
	if s.Name != "t1-gpu-node-1-gpu.nvidia.com" || *s.Spec.NodeName != "t1-gpu-node-1" || s.Spec.Pool.Name != "t1-gpu-node-1" {
		t.Errorf("slice %s on node %s in pool %s, want t1-gpu-node-1-gpu.nvidia.com on t1-gpu-node-1 in pool t1-gpu-node-1",
			s.Name, *s.Spec.NodeName, s.Spec.Pool.Name)
	}
	if got.DeviceClasses[0].Name != "gpu.nvidia.com" {
		t.Errorf("device class renamed to %s, want gpu.nvidia.com", got.DeviceClasses[0].Name)
	}
	if inv.Nodes[0].Name != "gpu-node-1" || *inv.ResourceSlices[0].Spec.NodeName != "gpu-node-1" {
		t.Errorf("WithPrefix changed its receiver")
	}
}

func TestReadFleetRejectsKindsItCannotPublish(t *testing.T) {
	for name, doc := range map[string]string{
		"a ConfigMap": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
		"a bound pod": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  nodeName: n\n  containers: [{name: c}]\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			if inv, err := ReadFleet(dir); err == nil || !strings.Contains(err.Error(), "unsupported objects") {
				t.Fatalf("read %+v, %v; want an error naming the unsupported objects", inv, err)
			}
		})
	}
}

func TestRenamePodNodeReferencesNamesThePublishedNodes(t *testing.T) {
	f := &Fleet{prefix: "t1"}
	hostIn := func(v string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{v}}}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		NodeName:     "a",
		NodeSelector: map[string]string{corev1.LabelHostname: "b", "zone": "z"},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				hostIn("c"),
				{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"d"}}}},
			}},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: hostIn("e")}},
		}},
	}}
	f.RenamePodNodeReferences(pod)
	na := pod.Spec.Affinity.NodeAffinity
	got := []string{
		pod.Spec.NodeName, pod.Spec.NodeSelector[corev1.LabelHostname], pod.Spec.NodeSelector["zone"],
		na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0],
		na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[1].MatchFields[0].Values[0],
		na.PreferredDuringSchedulingIgnoredDuringExecution[0].Preference.MatchExpressions[0].Values[0],
	}
	want := []string{"t1-a", "t1-b", "z", "t1-c", "t1-d", "t1-e"}
	if !slices.Equal(got, want) {
		t.Errorf("node references %q, want %q", got, want)
	}
}
