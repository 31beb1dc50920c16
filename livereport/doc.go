// Package livereport is the webhook's report of the cluster as it runs:
// the rows admission recorded, kept per namespace, and the workloads of the
// pods the informers show in opted-in namespaces with the decision each
// pod carries, so that the report survives a restart; the migration's
// progress sampled over time. It serves /report in every format of the
// offline audit (report.Formats), the HTML page included.
package livereport
