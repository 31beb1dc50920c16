package builders

import (
	"testing"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/platform"
)

// Platform is the platform a Platform document with this spec declares
// over the drivers' defaults, named "test"; a spec that does not validate
// fails the test.
func Platform(t testing.TB, spec v1alpha1.PlatformSpec) *platform.Platform {
	t.Helper()
	doc := &v1alpha1.Platform{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PlatformKind, Spec: spec}
	if errs := v1alpha1.ValidatePlatform(doc); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	p, err := platform.Load(nil, nil, doc, "test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}
