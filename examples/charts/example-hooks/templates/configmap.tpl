apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "example-hooks.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "example-hooks.labels" . | nindent 4 }}
data:
  mode: {{ .Values.settings.mode | quote }}
  retries: {{ .Values.settings.retries | quote }}
  features: {{ join "," .Values.settings.features | quote }}
