apiVersion: v1
kind: Service
metadata:
  name: {{ include "example-exporter.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "example-exporter.labels" . | nindent 4 }}
spec:
  selector:
    {{- include "example-exporter.selectorLabels" . | nindent 4 }}
  ports:
    - name: metrics
      port: {{ .Values.port }}
      targetPort: metrics
