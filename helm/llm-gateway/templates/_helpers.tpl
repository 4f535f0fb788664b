{{- define "llm-gateway.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "llm-gateway.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "llm-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "llm-gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "llm-gateway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "llm-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "llm-gateway.serviceAccountName" -}}
{{- default (include "llm-gateway.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* gateway.yaml: the `config` values, with `forwardedAllowIps` as its `forwarded_allow_ips`. */}}
{{- define "llm-gateway.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- if .Values.forwardedAllowIps -}}
{{- if hasKey $config "forwarded_allow_ips" -}}
{{- fail "set forwardedAllowIps or config.forwarded_allow_ips, not both" -}}
{{- end -}}
{{- $_ := set $config "forwarded_allow_ips" .Values.forwardedAllowIps -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}

{{- define "llm-gateway.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* An unpinned image (the default values cannot know a build's digest) is a deliberate choice
of the values file; values-production.yaml pins one and a test asserts it. */}}
{{- define "llm-gateway.skipDigest" -}}
{{- if not .Values.image.digest -}}
checkov.io/skip1: CKV_K8S_43=image pinned by tag here; set image.digest to pin by digest
{{- end -}}
{{- end -}}

{{/* Pod-level hardening shared by the Deployment and the migration Job. */}}
{{- define "llm-gateway.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "llm-gateway.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
allowPrivilegeEscalation: false
privileged: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Secrets reach the process as GATEWAY_* and provider variables, never through the ConfigMap. */}}
{{- define "llm-gateway.env" -}}
- name: GATEWAY_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.database.existingSecret }}
      key: {{ .Values.database.key }}
{{- if .Values.adminKey.existingSecret }}
- name: GATEWAY_ADMIN_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.adminKey.existingSecret }}
      key: {{ .Values.adminKey.key }}
{{- end }}
{{- if .Values.mcpTokenKey.existingSecret }}
- name: GATEWAY_MCP_TOKEN_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.mcpTokenKey.existingSecret }}
      key: {{ .Values.mcpTokenKey.key }}
{{- end }}
{{- range .Values.providerKeys }}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .secretKey }}
{{- end }}
- name: GATEWAY_SHUTDOWN_DRAIN_SECONDS
  value: {{ .Values.shutdown.drainSeconds | quote }}
{{- if .Values.usageSpool.enabled }}
{{- /* The migration job gets it too, unused there (it records no usage). */}}
- name: GATEWAY_USAGE_SPOOL_DIR
  value: {{ .Values.usageSpool.mountPath | quote }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}
