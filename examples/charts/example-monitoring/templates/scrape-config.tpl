{{- $exporter := index .Values "example-exporter" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ printf "%s-scrape-config" .Release.Name | trunc 63 | trimSuffix "-" }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "example-monitoring.labels" . | nindent 4 }}
data:
  scrape.yaml: |
    global:
      scrape_interval: {{ .Values.global.scrapeInterval }}
    scrape_configs:
      - job_name: {{ .Values.scrape.jobName }}
        static_configs:
          - targets:
              {{- if $exporter.enabled }}
              - {{ printf "%s-example-exporter.%s.svc:%v" .Release.Name .Release.Namespace $exporter.port | quote }}
              {{- end }}
              {{- range .Values.scrape.extraTargets }}
              - {{ . | quote }}
              {{- end }}
