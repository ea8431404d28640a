apiVersion: v1
kind: Service
metadata:
  name: {{ include "example-operator.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "example-operator.labels" . | nindent 4 }}
spec:
  type: {{ .Values.service.type }}
  selector:
    {{- include "example-operator.selectorLabels" . | nindent 4 }}
  ports:
    - name: metrics
      port: {{ .Values.service.port }}
      targetPort: metrics
      protocol: TCP
