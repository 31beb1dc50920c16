package report

import (
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// Read decodes a report written by Write as JSON or YAML. Fields it does
// not know are ignored, so that a report from a newer claimbridge (which
// only adds fields) still renders.
func Read(r io.Reader) (*Report, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	rep := &Report{}
	if err := yaml.Unmarshal(data, rep); err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	if rep.APIVersion != "claimbridge.io/v1alpha1" || rep.Kind != "AuditReport" {
		return nil, fmt.Errorf("decode report: apiVersion %q, kind %q: want claimbridge.io/v1alpha1 AuditReport", rep.APIVersion, rep.Kind)
	}
	return rep, nil
}
