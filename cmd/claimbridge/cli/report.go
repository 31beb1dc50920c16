package cli

import (
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/report"
)

func newReportCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "report",
		Short: "Work with audit reports (claimbridge.io/v1alpha1 AuditReport)",
		Args:  cobra.NoArgs,
	}
	c.AddCommand(newReportRenderCommand())
	return c
}

func newReportRenderCommand() *cobra.Command {
	var (
		file   string
		output string
	)
	c := &cobra.Command{
		Use:   "render -f FILE|- [-o html|table|json|yaml|markdown]",
		Short: "Render a saved audit report (JSON or YAML) as an HTML page or another format",
		Long: `Reads an AuditReport written by 'claimbridge audit -o json' (or -o yaml, or the
webhook's /report) and renders it: 'claimbridge audit ... -o json > report.json'
then 'claimbridge report render -f report.json > report.html' gives the same page
as 'claimbridge audit ... -o html'.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if file == "" {
				return usagef("-f FILE (or - for stdin) is required")
			}
			if !slices.Contains(report.Formats, output) {
				return usagef("-o must be one of %s", strings.Join(report.Formats, ", "))
			}
			in := c.InOrStdin()
			if file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer func() { _ = f.Close() }()
				in = f
			}
			rep, err := report.Read(in)
			if err != nil {
				return err
			}
			// The report may come from audit or from the webhook: remedies for the codes of both.
			rep.Reasons = explain.Reasons().Union(offline.Reasons())
			return rep.Write(c.OutOrStdout(), output)
		},
	}
	c.Flags().StringVarP(&file, "filename", "f", "", "the report: a JSON or YAML file, or - for stdin")
	c.Flags().StringVarP(&output, "output", "o", "html", "output format: "+strings.Join(report.Formats, ", "))
	return c
}
