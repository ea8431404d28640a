apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "example-exporter.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "example-exporter.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      {{- include "example-exporter.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "example-exporter.selectorLabels" . | nindent 8 }}
      annotations:
        example.aicr.io/scrape-interval: {{ .Values.global.scrapeInterval | quote }}
        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      containers:
        - name: exporter
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          args:
            - {{ printf "--listen=:%v" .Values.port | quote }}
          ports:
            - name: metrics
              containerPort: {{ .Values.port }}
          {{- with .Values.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
