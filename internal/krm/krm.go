// Package krm is claimbridge as a KRM function (kustomize, kpt): a
// ResourceList in, the same items with every pod template translated in
// place plus the ResourceClaimTemplates they use out, and one result per pod
// template.
//
// The functionConfig chooses the policy: a claimbridge.io/v1alpha1
// TranslationPolicy, or a ConfigMap whose data has `profiles` (built-in
// profile names, comma separated) or `policy` (a TranslationPolicy as YAML),
// and optionally `failOn: untranslatable` to fail the function when a pod
// template asks for legacy devices but stays as it is. Without one, the
// default policy applies.
package krm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// Config is what the functionConfig says.
type Config struct {
	// Policy to apply (default: translate.DefaultPolicy()).
	Policy *translate.Policy
	// FailOnUntranslatable makes KeepLegacy results errors, so the function
	// (and kustomize build) fails.
	FailOnUntranslatable bool
}

// LoadConfig reads a functionConfig; nil means the defaults.
func LoadConfig(fc *yaml.RNode) (*Config, error) {
	cfg := &Config{Policy: translate.DefaultPolicy()}
	if fc == nil || fc.IsNilOrEmpty() {
		return cfg, nil
	}
	meta, err := fc.GetMeta()
	if err != nil {
		return nil, fmt.Errorf("functionConfig: %w", err)
	}
	switch meta.Kind {
	case "TranslationPolicy":
		data, err := fc.MarshalJSON()
		if err != nil {
			return nil, err
		}
		if cfg.Policy, err = translate.LoadPolicy(data); err != nil {
			return nil, fmt.Errorf("functionConfig: %w", err)
		}
	case "ConfigMap":
		data := fc.GetDataMap()
		for k := range data {
			if k != "profiles" && k != "policy" && k != "failOn" {
				return nil, fmt.Errorf("functionConfig: data.%s: unknown key (profiles, policy, failOn)", k)
			}
		}
		switch {
		case data["profiles"] != "" && data["policy"] != "":
			return nil, errors.New("functionConfig: data.profiles and data.policy exclude each other")
		case data["profiles"] != "":
			var names []string
			for _, n := range strings.Split(data["profiles"], ",") {
				if n = strings.TrimSpace(n); n != "" {
					names = append(names, n)
				}
			}
			if cfg.Policy, err = translate.ProfilePolicy(names...); err != nil {
				return nil, fmt.Errorf("functionConfig: data.profiles: %w", err)
			}
		case data["policy"] != "":
			if cfg.Policy, err = translate.LoadPolicy([]byte(data["policy"])); err != nil {
				return nil, fmt.Errorf("functionConfig: data.policy: %w", err)
			}
		}
		switch data["failOn"] {
		case "":
		case "untranslatable":
			cfg.FailOnUntranslatable = true
		default:
			return nil, fmt.Errorf("functionConfig: data.failOn: %q is not untranslatable", data["failOn"])
		}
	default:
		return nil, fmt.Errorf("functionConfig: kind %s: want TranslationPolicy or ConfigMap", meta.Kind)
	}
	return cfg, nil
}

// Processor is the function; ctx is the run's (the command's).
func Processor(ctx context.Context) framework.ResourceListProcessor {
	return framework.ResourceListProcessorFunc(func(rl *framework.ResourceList) error { return Process(ctx, rl) })
}

// Process translates a ResourceList in place. Invalid input (functionConfig
// or items) is an error result and an error.
func Process(ctx context.Context, rl *framework.ResourceList) error {
	if err := process(ctx, rl); err != nil {
		var results framework.Results
		if !errors.As(err, &results) {
			rl.Results = append(rl.Results, &framework.Result{Severity: framework.Error, Message: err.Error()})
		}
		return rl.Results
	}
	return nil
}

func process(ctx context.Context, rl *framework.ResourceList) error {
	cfg, err := LoadConfig(rl.FunctionConfig)
	if err != nil {
		return err
	}
	docs := make([]manifest.Document, 0, len(rl.Items))
	have := map[string]bool{}
	for i, item := range rl.Items {
		d, err := manifest.FromNode("items", i, item.YNode())
		if err != nil {
			return err
		}
		docs = append(docs, d)
		have[key(item.GetApiVersion(), item.GetKind(), item.GetNamespace(), item.GetName())] = true
	}
	items, templates, err := offline.Translate(ctx, docs, offline.Options{Policy: cfg.Policy, Quotas: offline.QuotasOf(docs)})
	if err != nil {
		return err
	}
	for _, t := range templates {
		if have[key(t.APIVersion, t.Kind, t.Namespace, t.Name)] {
			continue
		}
		data, err := manifest.MarshalYAML(t)
		if err != nil {
			return err
		}
		n, err := yaml.Parse(string(data))
		if err != nil {
			return err
		}
		rl.Items = append(rl.Items, n)
	}
	for _, it := range items {
		if r, ok := result(it, cfg); ok {
			rl.Results = append(rl.Results, r)
		}
	}
	if rl.Results.ExitCode() != 0 {
		return rl.Results
	}
	return nil
}

func key(apiVersion, kind, ns, name string) string {
	return apiVersion + "/" + kind + "/" + ns + "/" + name
}

// result is the KRM result of one pod template: info when translated,
// warning (or error with failOn) when kept legacy; templates with nothing to
// translate give none.
func result(it offline.Item, cfg *Config) (*framework.Result, bool) {
	res := it.Decision
	if res == nil {
		return nil, false
	}
	var sev framework.Severity
	switch res.Outcome {
	case reason.OutcomeTranslate:
		sev = framework.Info
	case reason.OutcomeKeepLegacy:
		sev = framework.Warning
		if cfg.FailOnUntranslatable {
			sev = framework.Error
		}
	default:
		if decision(res.Reasons) == translate.ReasonNoLegacyResources {
			return nil, false
		}
		sev = framework.Info
	}
	var msg []string
	for _, r := range res.Reasons {
		if r.Severity == reason.SeverityWarning || r.Code == translate.ReasonTranslated || res.Outcome == reason.OutcomeSkip {
			msg = append(msg, r.String())
		}
	}
	obj := it.Doc.Object
	gvk := obj.GetObjectKind().GroupVersionKind()
	ref := &yaml.ResourceIdentifier{TypeMeta: yaml.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}}
	if it.Doc.Node != nil {
		n := yaml.NewRNode(it.Doc.Node)
		ref.Name, ref.Namespace = n.GetName(), n.GetNamespace()
	}
	r := &framework.Result{
		Message:     fmt.Sprintf("%s: %s", res.Outcome, strings.Join(msg, "; ")),
		Severity:    sev,
		ResourceRef: ref,
	}
	if it.Path != "" {
		r.Field = &framework.Field{Path: it.Path}
	}
	return r, true
}

// decision is the code of the last reason (the decision), or "".
func decision(rs []reason.Reason) reason.Code {
	if len(rs) == 0 {
		return ""
	}
	return rs[len(rs)-1].Code
}
