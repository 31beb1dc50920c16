package v1alpha1

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Kueue's own configuration, read for spec.kueue.deviceClassMappings
// (`--kueue-config`): the DeviceClasses Kueue counts, which a translation
// for a Kueue-managed pod must keep to.

// KueueConfigGroup is the API group of Kueue's Configuration.
const KueueConfigGroup = "config.kueue.x-k8s.io"

// kueueConfiguration is the part of Kueue's Configuration
// (apis/config/v1beta1 and v1beta2, configuration_types.go) claimbridge
// reads; everything else is ignored. Data is a ConfigMap's, which holds the
// Configuration as one of its values (kueue-manager-config's
// controller_manager_config.yaml).
type kueueConfiguration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Resources  *struct {
		DeviceClassMappings []KueueDeviceClassMapping `json:"deviceClassMappings"`
	} `json:"resources"`
	Data map[string]string `json:"data"`
}

// ParseKueueConfiguration reads the deviceClassMappings of a Kueue
// Configuration (apiVersion config.kueue.x-k8s.io/v1beta1 or v1beta2, kind
// Configuration), or of the ConfigMap that holds one in a value (as
// kueue-manager-config does). A Configuration without mappings gives none.
// An error names what is wrong.
func ParseKueueConfiguration(data []byte) ([]KueueDeviceClassMapping, error) {
	var c kueueConfiguration
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("decode Kueue configuration: %w", err)
	}
	if c.Kind == "ConfigMap" && c.APIVersion == "v1" {
		var found []string
		var out []KueueDeviceClassMapping
		for _, k := range slices.Sorted(maps.Keys(c.Data)) {
			var inner kueueConfiguration
			if yaml.Unmarshal([]byte(c.Data[k]), &inner) != nil || inner.Kind != "Configuration" || !strings.HasPrefix(inner.APIVersion, KueueConfigGroup+"/") {
				continue
			}
			found = append(found, k)
			m, err := ParseKueueConfiguration([]byte(c.Data[k]))
			if err != nil {
				return nil, fmt.Errorf("data[%s]: %w", k, err)
			}
			out = m
		}
		switch len(found) {
		case 0:
			return nil, errors.New("the ConfigMap holds no Kueue Configuration")
		case 1:
			return out, nil
		}
		return nil, fmt.Errorf("the ConfigMap holds %d Kueue Configurations (%s)", len(found), strings.Join(found, ", "))
	}
	group, version, _ := strings.Cut(c.APIVersion, "/")
	if group != KueueConfigGroup || (version != "v1beta1" && version != "v1beta2") || c.Kind != "Configuration" {
		return nil, fmt.Errorf("not a Kueue Configuration: apiVersion %q, kind %q (want %s/v1beta2 or v1beta1, Configuration)", c.APIVersion, c.Kind, KueueConfigGroup)
	}
	if c.Resources == nil {
		return nil, nil
	}
	if errs := validateKueueMappings(field.NewPath("resources", "deviceClassMappings"), c.Resources.DeviceClassMappings); len(errs) > 0 {
		return nil, fmt.Errorf("invalid Kueue configuration: %w", errs.ToAggregate())
	}
	return c.Resources.DeviceClassMappings, nil
}
