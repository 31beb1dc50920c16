package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/translate"
)

// defaultPolicyDocument is translate.DefaultPolicy as a file: the same
// profiles under the same name.
func defaultPolicyDocument() *v1alpha1.TranslationPolicy {
	return &v1alpha1.TranslationPolicy{
		APIVersion: v1alpha1.PolicyAPIVersion,
		Kind:       v1alpha1.PolicyKind,
		Metadata:   v1alpha1.PolicyMetadata{Name: translate.DefaultPolicy().Name()},
		Spec:       v1alpha1.PolicySpec{Profiles: v1alpha1.DefaultProfileNames()},
	}
}

// writePolicy replaces the server's policy file in one rename, so that the
// reloader never reads half a file.
func writePolicy(tp *v1alpha1.TranslationPolicy) error {
	data, err := yaml.Marshal(tp)
	if err != nil {
		return fmt.Errorf("encode policy: %w", err)
	}
	if _, err := translate.LoadPolicy(data); err != nil {
		return fmt.Errorf("policy %s: %w", tp.Metadata.Name, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(policyPath), ".policy-*.yaml")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), policyPath)
}

// usePolicy puts a policy in force on the server (through its policy file,
// which it reloads every 2s) and waits until /report names it. The default
// policy is back in force when the test ends.
func usePolicy(t *testing.T, tp *v1alpha1.TranslationPolicy) {
	t.Helper()
	if err := writePolicy(tp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		def := defaultPolicyDocument()
		if err := writePolicy(def); err != nil {
			t.Errorf("restore the default policy: %v", err)
			return
		}
		// t.Context() is done by now.
		if err := waitPolicy(context.Background(), def.Metadata.Name); err != nil {
			t.Errorf("restore the default policy: %v", err)
		}
	})
	if err := waitPolicy(t.Context(), tp.Metadata.Name); err != nil {
		t.Fatal(err)
	}
}

func waitPolicy(ctx context.Context, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		rep, err := fetchReport(ctx, "")
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = rep.Policy
		return last == name, nil
	})
	if err != nil {
		return fmt.Errorf("policy %q not in force within %v (server has %q): %w", name, waitTimeout, last, err)
	}
	return nil
}
