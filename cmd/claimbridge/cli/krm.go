package cli

import (
	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/claimbridge/claimbridge/internal/krm"
)

func newKRMCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "krm",
		Short: "Run as a KRM function (kustomize, kpt): a ResourceList on stdin, translated on stdout",
		Long: `Reads a KRM ResourceList on stdin and writes it back with every pod template
translated in place, the ResourceClaimTemplates they use appended to the
items, and one result per pod template (info when translated, warning when
kept as it is). The functionConfig chooses the policy: a TranslationPolicy,
or a ConfigMap with data.profiles (comma-separated built-in profiles) or
data.policy (a TranslationPolicy as YAML), and optionally
data.failOn: untranslatable. Exit code 1 when the input is invalid or a
result is an error.

In a kustomization, as an exec function (kustomize build --enable-alpha-plugins --enable-exec):

  transformers:
  - claimbridge.yaml     # a TranslationPolicy or ConfigMap annotated with
                         # config.kubernetes.io/function: {exec: {path: claimbridge, args: [krm]}}`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			rw := &kio.ByteReadWriter{Reader: c.InOrStdin(), Writer: c.OutOrStdout(), KeepReaderAnnotations: true}
			return framework.Execute(krm.Processor(c.Context()), rw)
		},
	}
}
