{{/*
The templates of this chart keep to the subset of Helm's template language that
tests/tools/render_chart.py implements (the test renders the chart without Helm): fields
(.Values.x, .Release.Name, .Chart.Version), if / else / end, define and include, the functions
toYaml, indent, nindent, quote, default, required, not, and, or, eq, and .Files.Get, in
pipelines and parentheses. No range, with, variables or other functions.
*/}}

{{/* Every object's name: the release's, or fullnameOverride. */}}
{{- define "gpuvet.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride -}}
{{- end }}

{{/* The pod's labels that the DaemonSet and the Service select on. */}}
{{- define "gpuvet.selectorLabels" -}}
app.kubernetes.io/name: gpuvet-exporter
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gpuvet.labels" -}}
{{ include "gpuvet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: gpuvet-{{ .Chart.Version }}
{{- end }}

{{- define "gpuvet.image" -}}
{{ required "image.repository: where your gpuvet image is (contrib/kubernetes/Dockerfile)" .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "gpuvet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ default (include "gpuvet.fullname" .) .Values.serviceAccount.name }}
{{- else -}}
{{ default "default" .Values.serviceAccount.name }}
{{- end -}}
{{- end }}
