package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

func newPolicyCommand() *cobra.Command {
	c := &cobra.Command{Use: "policy", Short: "Show and check translation policies"}
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the built-in profiles",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			def := v1alpha1.DefaultProfileNames()
			for _, n := range v1alpha1.ProfileNames() {
				mark := "default"
				if !contains(def, n) {
					mark = "opt-in"
				}
				fmt.Fprintf(c.OutOrStdout(), "%-8s %s\n", n, mark)
			}
			return nil
		},
	})
	var pol policyFlags
	show := &cobra.Command{
		Use:   "show [PROFILE...]",
		Short: "Print built-in profiles as shipped, or the effective rules of a policy",
		Long: `With profile names, prints each profile's YAML as shipped. Without, prints the
effective rules of --policy/--profile (default: the default policy), with the
included profiles expanded.`,
		RunE: func(c *cobra.Command, args []string) error {
			out := c.OutOrStdout()
			if len(args) > 0 {
				for i, n := range args {
					src, err := v1alpha1.ProfileSource(n)
					if err != nil {
						return usagef("%v", err)
					}
					if i > 0 {
						fmt.Fprintln(out, "---")
					}
					fmt.Fprint(out, string(src))
				}
				return nil
			}
			p, err := pol.load()
			if err != nil {
				return err
			}
			doc := v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
				Metadata: v1alpha1.PolicyMetadata{Name: p.Name()}, Spec: p.Spec()}
			data, err := yaml.Marshal(doc)
			if err != nil {
				return err
			}
			_, err = out.Write(data)
			return err
		},
	}
	pol.add(show)
	var file string
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a policy file; errors name the field",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			file = args[0]
			p, err := (&policyFlags{file: file}).load()
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "policy %s is valid: families %s\n", p.Name(), strings.Join(p.Families(), ", "))
			return nil
		},
	}
	var mcPol policyFlags
	mc := &cobra.Command{
		Use:   "match-conditions [--policy FILE | --profile NAME...]",
		Short: "Print the webhook matchConditions for a policy (chart value webhook.matchConditions)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p, err := mcPol.load()
			if err != nil {
				return err
			}
			data, err := yaml.Marshal(p.MatchConditions())
			if err != nil {
				return err
			}
			_, err = c.OutOrStdout().Write(data)
			return err
		},
	}
	mcPol.add(mc)
	c.AddCommand(show, check, mc)
	return c
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
