{{- /* Manifest templates use .tpl (helm renders every template not starting with "_")
      so that the collection's YAML linters do not parse Go templates. */ -}}
{{- if .Values.widget.create }}
apiVersion: example.aicr.io/v1alpha1
kind: Widget
metadata:
  name: {{ default .Release.Name .Values.widget.name | trunc 63 | trimSuffix "-" }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "example-crds.labels" . | nindent 4 }}
    {{- with .Values.widget.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  size: {{ .Values.widget.size | int }}
  color: {{ .Values.widget.color | quote }}
{{- end }}
