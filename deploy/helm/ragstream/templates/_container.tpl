{{/* The agent's container. docs/deploy.md's sidecar snippet is this container with
restartPolicy Always and no readiness probe (a test compares them). */}}
{{- define "ragstream.container" -}}
name: ragstream
image: {{ include "ragstream.image" $ }}
imagePullPolicy: {{ $.Values.image.pullPolicy }}
args: ["run", "--config", "/etc/ragstream/ragstream.yaml"]
ports:
  - name: ragstream  # unique in a pod it is the sidecar of
    containerPort: {{ $.Values.service.port }}
startupProbe:  # the HTTP server is up (it is, while Kafka is retried)
  httpGet:
    path: /healthz
    port: ragstream
  periodSeconds: 2
  failureThreshold: 30
livenessProbe:
  httpGet:
    path: /healthz
    port: ragstream
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
readinessProbe:  # consuming: partitions assigned, brokers answering, caught up
  httpGet:
    path: /readyz
    port: ragstream
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 3
resources:
  {{- toYaml $.Values.resources | nindent 2 }}
securityContext:
  {{- toYaml $.Values.securityContext | nindent 2 }}
volumeMounts:
  - name: config
    mountPath: /etc/ragstream
    readOnly: true
  {{- range include "ragstream.secretMounts" $ | fromYamlArray }}
  - name: {{ .name }}
    mountPath: {{ .dir }}
    readOnly: true
  {{- end }}
  {{- with $.Values.extraVolumeMounts }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/* The pod's volumes: the configuration, each Secret the agent reads (only its keys,
readable by the pod's fsGroup: mode 0440), and extraVolumes. */}}
{{- define "ragstream.volumes" -}}
- name: config
  configMap:
    name: {{ include "ragstream.fullname" . }}
{{- range include "ragstream.secretMounts" . | fromYamlArray }}
- name: {{ .name }}
  secret:
    secretName: {{ .secretName }}
    defaultMode: 288  # 0440
    items:
      {{- range .keys }}
      - key: {{ . }}
        path: {{ . }}
      {{- end }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}
