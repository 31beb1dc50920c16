package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/translate"
)

// policyFlags choose the translation policy.
type policyFlags struct {
	file     string
	profiles []string
	kueue    string
}

func (p *policyFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&p.file, "policy", "", "TranslationPolicy file (default: all built-in profiles but the opt-in ones)")
	c.Flags().StringSliceVar(&p.profiles, "profile", nil, "built-in profile(s) to use instead of a policy file (see 'claimbridge policy list')")
	c.Flags().StringVar(&p.kueue, "kueue-config", "", "Kueue Configuration file (or its ConfigMap): its resources.deviceClassMappings say which DeviceClasses Kueue-managed pods may use")
}

func (p *policyFlags) load() (*translate.Policy, error) {
	pol, err := p.loadPolicy()
	if err != nil || p.kueue == "" {
		return pol, err
	}
	data, err := os.ReadFile(p.kueue)
	if err != nil {
		return nil, err
	}
	m, err := v1alpha1.ParseKueueConfiguration(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.kueue, err)
	}
	return pol.WithKueueMappings(m), nil
}

func (p *policyFlags) loadPolicy() (*translate.Policy, error) {
	switch {
	case p.file != "" && len(p.profiles) > 0:
		return nil, usagef("--policy and --profile exclude each other")
	case p.file != "":
		data, err := os.ReadFile(p.file)
		if err != nil {
			return nil, err
		}
		pol, err := translate.LoadPolicy(data)
		if err != nil {
			return nil, err
		}
		return pol, nil
	case len(p.profiles) > 0:
		return translate.ProfilePolicy(p.profiles...)
	}
	return translate.DefaultPolicy(), nil
}

func newTranslateCommand(explainOnly bool) *cobra.Command {
	var (
		files   []string
		fleets  []string
		output  string
		explain bool
		timeout time.Duration
		post    bool
		pol     policyFlags
	)
	c := &cobra.Command{
		Use:   "translate (-f FILE|DIR|- | --post-render) [--fleet DIR] [--policy FILE | --profile NAME...] [-o yaml|json] [--explain]",
		Short: "Rewrite the pod templates of manifests to use ResourceClaimTemplates",
		Long: `Reads manifests and rewrites every pod template in them: Pods, built-in
workloads (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob,
ReplicationController, PodTemplate, List) and custom resources — the known
locations of Kubeflow (PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob,
JAXJob, Notebook, TrainingRuntime), JobSet, LeaderWorkerSet, Ray (RayCluster,
RayJob, RayService), KServe InferenceService, Volcano (Job, JobTemplate,
HyperJob), Argo Workflows, Knative Service and Kueue's AppWrapper, and, in a
kind nobody listed, any template found by its shape (named containers).
SparkApplications, KubeVirt VMs and Dynamo graphs are decided as the pods
their operators make and kept as they are; Kueue Workloads and Karpenter
NodePools ask for nothing (docs/reference/workloads.md). It prints the documents,
changed only where a template was translated (unchanged documents byte for
byte), followed by the ResourceClaimTemplates they refer to, once per
namespace; each input file whole, in its order, with its separators, its
comment-only and empty documents and its unchanged documents as read, and
in a changed document the comments above its first field and the
indentation of each list as they were. --explain
prints the decision and its reasons for each pod template instead.

With --fleet, each translation is checked against the fleet inventory as the
webhook checks it: it is kept only when it lands exactly where the pod as
submitted could (the placement check) and the fleet can serve it; --explain
then also lists the nodes of both sides. DeviceClasses in the input files are
part of the fleet (a class of the same name replaces the fleet's).

--post-render makes it a Helm post-renderer: the rendered manifests on stdin,
the translated manifests and their templates on stdout as YAML, exit code 0,
or 1 with the reason on stderr (Helm then fails the release).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if output != "yaml" && output != "json" {
				return usagef("-o must be yaml or json")
			}
			if post {
				switch {
				case len(files) > 0:
					return usagef("--post-render reads the rendered manifests on stdin: no -f")
				case explain || explainOnly:
					return usagef("--post-render and --explain exclude each other")
				case output != "yaml":
					return usagef("--post-render writes YAML")
				}
				files = []string{"-"}
			}
			if len(files) == 0 {
				return usagef("%v", manifest.ErrNoInput)
			}
			policy, err := pol.load()
			if err != nil {
				return err
			}
			docs, err := manifest.Read(files, c.InOrStdin())
			if err != nil {
				return err
			}
			in, err := offline.Open(offline.Sources{Docs: docs, FleetPaths: fleets, Timeout: timeout})
			if err != nil {
				return err
			}
			fleet, err := in.Check()
			if err != nil {
				return err
			}
			opts := in.Options(policy, fleet)
			opts.ListNodes = true
			ctx := c.Context()
			if fleet != nil {
				var cancel context.CancelFunc
				ctx, cancel = in.Deadline(ctx)
				defer cancel()
			}
			items, templates, err := offline.Translate(ctx, docs, opts)
			if err != nil {
				return err
			}
			if explain || explainOnly {
				return offline.WriteExplain(c.OutOrStdout(), items)
			}
			return offline.WriteObjects(c.OutOrStdout(), output, docs, templates)
		},
	}
	if explainOnly {
		c.Use = "explain -f FILE|DIR|- [--fleet DIR] [--policy FILE | --profile NAME...]"
		c.Short = "Explain, for each pod template, what translation decides and why"
	}
	c.Flags().StringSliceVarP(&files, "filename", "f", nil, "manifest file, directory or - for stdin (repeatable)")
	c.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	c.Flags().StringSliceVar(&fleets, "fleet", nil, "check each translation against this fleet inventory (YAML file or directory, repeatable)")
	c.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "with --fleet: deadline of one check")
	if !explainOnly {
		c.Flags().BoolVar(&explain, "explain", false, "print the reasons per pod template instead of the objects")
		c.Flags().BoolVar(&post, "post-render", false, "run as a Helm post-renderer: manifests on stdin, translated on stdout")
	}
	pol.add(c)
	return c
}
