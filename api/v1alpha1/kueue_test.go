package v1alpha1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseKueueConfiguration(t *testing.T) {
	config := `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
integrations:
  frameworks: [batch/job, pod]
resources:
  deviceClassMappings:
  - name: example.com/gpu
    deviceClassNames: [gpu.nvidia.com, mig.nvidia.com]
`
	want := []KueueDeviceClassMapping{{Name: "example.com/gpu", DeviceClassNames: []string{"gpu.nvidia.com", "mig.nvidia.com"}}}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kueue-manager-config, namespace: kueue-system}\ndata:\n  controller_manager_config.yaml: |\n" +
		indent(config, "    ")
	cases := map[string]struct {
		data    string
		want    []KueueDeviceClassMapping
		wantErr string
	}{
		"a Configuration":                     {data: config, want: want},
		"the ConfigMap that holds one":        {data: cm, want: want},
		"v1beta1 without resources":           {data: "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"},
		"another kind":                        {data: "apiVersion: v1\nkind: Secret\n", wantErr: "not a Kueue Configuration"},
		"a ConfigMap without a Configuration": {data: "apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\n", wantErr: "holds no Kueue Configuration"},
		"a mapping without classes": {data: "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nresources:\n  deviceClassMappings:\n  - name: a.com/gpu\n",
			wantErr: "resources.deviceClassMappings[0].deviceClassNames: Required value"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseKueueConfiguration([]byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one that says %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}
