{{/* Chart name. */}}
{{- define "claimbridge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name of every resource: <release>-claimbridge, or the release name when it already
contains the chart name. */}}
{{- define "claimbridge.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "claimbridge.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "claimbridge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "claimbridge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "claimbridge.labels" -}}
helm.sh/chart: {{ include "claimbridge.chart" . }}
{{ include "claimbridge.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "claimbridge.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "claimbridge.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "claimbridge.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Secret of the self-managed CA, created and rotated by the webhook itself. */}}
{{- define "claimbridge.caSecretName" -}}
{{- printf "%s-ca" (include "claimbridge.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Secret of the serving certificate in cert-manager mode. */}}
{{- define "claimbridge.tlsSecretName" -}}
{{- printf "%s-tls" (include "claimbridge.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "claimbridge.leaderElectionID" -}}
{{- default (include "claimbridge.fullname" .) .Values.leaderElection.id }}
{{- end }}

{{/* The single webhook of the configuration. */}}
{{- define "claimbridge.webhookName" -}}
pods.claimbridge.io
{{- end }}

{{/* Whether a policy ConfigMap is rendered. */}}
{{- define "claimbridge.hasPolicy" -}}
{{- if or .Values.policy.profiles .Values.policy.custom }}true{{ end }}
{{- end }}

{{/* The matchConditions: the value when set (even to []), else the generated default. */}}
{{- define "claimbridge.matchConditions" -}}
{{- if kindIs "invalid" .Values.webhook.matchConditions }}
{{- .Files.Get "files/match-conditions.yaml" }}
{{- else if .Values.webhook.matchConditions }}
{{- toYaml .Values.webhook.matchConditions }}
{{- end }}
{{- end }}

{{/* Validation guards that the schema cannot express. Included by every template that
depends on them, so that any render fails with the message. */}}
{{- define "claimbridge.validate" -}}
{{- if and .Values.policy.profiles .Values.policy.custom }}
{{- fail "policy.profiles and policy.custom are exclusive: list the profiles in the custom policy's spec.profiles" }}
{{- end }}
{{- if and .Values.policy.custom (kindIs "invalid" .Values.webhook.matchConditions) }}
{{- fail "policy.custom needs webhook.matchConditions: set it to the output of `claimbridge policy match-conditions --policy <file>` (or to [] to send every pod of the selected namespaces)" }}
{{- end }}
{{- if and .Values.podDisruptionBudget.enabled (ge (int .Values.podDisruptionBudget.minAvailable) (int .Values.replicaCount)) }}
{{- fail (printf "podDisruptionBudget.minAvailable (%d) must be less than replicaCount (%d), or no node running the webhook could be drained" (int .Values.podDisruptionBudget.minAvailable) (int .Values.replicaCount)) }}
{{- end }}
{{- if and (eq .Values.tls.mode "cert-manager") .Values.tls.certManager.issuerRef (not .Values.tls.certManager.issuerRef.name) }}
{{- fail "tls.certManager.issuerRef.name is required when tls.certManager.issuerRef is set" }}
{{- end }}
{{- end }}

{{/*
The API group and resource of the reports the webhook writes (reports.api), as YAML.
*/}}
{{- define "claimbridge.reportsResource" -}}
{{- if eq .Values.reports.api "openreports" -}}
group: openreports.io
resource: reports
{{- else -}}
group: wgpolicyk8s.io
resource: policyreports
{{- end }}
{{- end }}
