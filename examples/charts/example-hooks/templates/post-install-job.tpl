{{- if .Values.hook.enabled }}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ printf "%s-check" (include "example-hooks.fullname" .) | trunc 63 | trimSuffix "-" }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "example-hooks.labels" . | nindent 4 }}
  annotations:
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-weight: "0"
    helm.sh/hook-delete-policy: {{ .Values.hook.deletePolicy }}
spec:
  backoffLimit: {{ .Values.hook.backoffLimit }}
  activeDeadlineSeconds: {{ .Values.hook.activeDeadlineSeconds }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ .Chart.Name }}
        app.kubernetes.io/instance: {{ .Release.Name }}
      {{- with .Values.hook.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      restartPolicy: Never
      containers:
        - name: check
          image: "{{ .Values.hook.image.repository }}:{{ .Values.hook.image.tag | default .Chart.AppVersion }}"
          command: ["/bin/sh", "-c"]
          args:
            - test "$(cat /config/mode)" = {{ .Values.settings.mode | quote }}
          volumeMounts:
            - name: config
              mountPath: /config
      volumes:
        - name: config
          configMap:
            name: {{ include "example-hooks.fullname" . }}
{{- end }}
