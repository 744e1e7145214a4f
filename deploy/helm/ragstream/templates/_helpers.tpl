{{/* The chart's name, and the objects' name: the release's, with the chart's unless it
holds it already. */}}
{{- define "ragstream.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ragstream.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The pods' selector; app.kubernetes.io/name is also the monitors' job label. */}}
{{- define "ragstream.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ragstream.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "ragstream.labels" -}}
{{ include "ragstream.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The Secrets the agent reads, each mounted read-only in its own directory under
/var/run/secrets/ragstream, with only the keys it needs: a list of
{name, secretName, keys, dir}. */}}
{{- define "ragstream.secretMounts" -}}
{{- $root := "/var/run/secrets/ragstream" }}
{{- $sasl := .Values.kafka.security.sasl }}
{{- $tls := .Values.kafka.security.tls }}
{{- $mounts := list }}
{{- if $sasl.passwordSecret.name }}
{{- $mounts = append $mounts (dict "name" "kafka-sasl" "secretName" $sasl.passwordSecret.name "keys" (list $sasl.passwordSecret.key)) }}
{{- end }}
{{- if $sasl.oauth.clientSecretSecret.name }}
{{- $mounts = append $mounts (dict "name" "kafka-oauth" "secretName" $sasl.oauth.clientSecretSecret.name "keys" (list $sasl.oauth.clientSecretSecret.key)) }}
{{- end }}
{{- if $tls.caSecret.name }}
{{- $mounts = append $mounts (dict "name" "kafka-ca" "secretName" $tls.caSecret.name "keys" (list $tls.caSecret.key)) }}
{{- end }}
{{- if $tls.clientCertSecret.name }}
{{- $mounts = append $mounts (dict "name" "kafka-tls" "secretName" $tls.clientCertSecret.name "keys" (list "tls.crt" "tls.key")) }}
{{- end }}
{{- if $tls.keyPasswordSecret.name }}
{{- $mounts = append $mounts (dict "name" "kafka-key-password" "secretName" $tls.keyPasswordSecret.name "keys" (list $tls.keyPasswordSecret.key)) }}
{{- end }}
{{- if and (eq .Values.judge.kind "openai") .Values.judge.openai.apiKeySecret.name }}
{{- $mounts = append $mounts (dict "name" "judge" "secretName" .Values.judge.openai.apiKeySecret.name "keys" (list .Values.judge.openai.apiKeySecret.key)) }}
{{- end }}
{{- range $mounts }}
{{- $_ := set . "dir" (printf "%s/%s" $root .name) }}
{{- end }}
{{- toYaml $mounts }}
{{- end }}

{{/* The agent's configuration (ragstream.yaml): what the values make, with
.Values.config merged over it. */}}
{{- define "ragstream.config" -}}
{{- $root := "/var/run/secrets/ragstream" }}
{{- $sec := .Values.kafka.security }}
{{- $security := dict "protocol" $sec.protocol }}
{{- if hasPrefix "SASL" $sec.protocol }}
{{- if not $sec.sasl.mechanism }}
{{- fail (printf "kafka.security.protocol %s needs kafka.security.sasl.mechanism" $sec.protocol) }}
{{- end }}
{{- $_ := set $security "sasl_mechanism" $sec.sasl.mechanism }}
{{- if $sec.sasl.username }}
{{- $_ := set $security "sasl_username" $sec.sasl.username }}
{{- end }}
{{- if $sec.sasl.passwordSecret.name }}
{{- $_ := set $security "sasl_password_file" (printf "%s/kafka-sasl/%s" $root $sec.sasl.passwordSecret.key) }}
{{- end }}
{{- with $sec.sasl.oauth }}
{{- if .tokenEndpoint }}
{{- $_ := set $security "sasl_oauth_token_endpoint" .tokenEndpoint }}
{{- end }}
{{- if .clientId }}
{{- $_ := set $security "sasl_oauth_client_id" .clientId }}
{{- end }}
{{- if .scope }}
{{- $_ := set $security "sasl_oauth_scope" .scope }}
{{- end }}
{{- if .clientSecretSecret.name }}
{{- $_ := set $security "sasl_oauth_client_secret_file" (printf "%s/kafka-oauth/%s" $root .clientSecretSecret.key) }}
{{- end }}
{{- if .tokenFile }}
{{- $_ := set $security "sasl_oauth_token_file" .tokenFile }}
{{- end }}
{{- end }}
{{- end }}
{{- if hasSuffix "SSL" $sec.protocol }}
{{- $_ := set $security "ssl_check_hostname" $sec.tls.checkHostname }}
{{- if $sec.tls.caSecret.name }}
{{- $_ := set $security "ssl_cafile" (printf "%s/kafka-ca/%s" $root $sec.tls.caSecret.key) }}
{{- end }}
{{- if $sec.tls.clientCertSecret.name }}
{{- $_ := set $security "ssl_certfile" (printf "%s/kafka-tls/tls.crt" $root) }}
{{- $_ := set $security "ssl_keyfile" (printf "%s/kafka-tls/tls.key" $root) }}
{{- end }}
{{- if $sec.tls.keyPasswordSecret.name }}
{{- $_ := set $security "ssl_password_file" (printf "%s/kafka-key-password/%s" $root $sec.tls.keyPasswordSecret.key) }}
{{- end }}
{{- end }}
{{- $kafka := dict "bootstrap_servers" .Values.kafka.bootstrapServers "topics" .Values.kafka.topics "group_id" .Values.kafka.groupId "security" $security }}
{{- if .Values.kafka.deadLetterTopic }}
{{- $_ := set $kafka "dead_letter_topic" .Values.kafka.deadLetterTopic }}
{{- end }}
{{- $j := .Values.judge }}
{{- $judge := dict "kind" $j.kind "sampling" (dict "rate" $j.sampling.rate "max_per_second" $j.sampling.maxPerSecond "budget_per_day" $j.sampling.budgetPerDay) }}
{{- if eq $j.kind "openai" }}
{{- $openai := dict "base_url" $j.openai.baseUrl "model" $j.openai.model }}
{{- if $j.openai.apiKeySecret.name }}
{{- $_ := set $openai "api_key_file" (printf "%s/judge/%s" $root $j.openai.apiKeySecret.key) }}
{{- end }}
{{- $_ := set $judge "openai" $openai }}
{{- end }}
{{- $config := dict "kafka" $kafka "labels" (dict "keys" .Values.labels.keys "max_values" .Values.labels.maxValues) "judge" $judge "http" (dict "port" .Values.service.port) }}
{{- toYaml (mergeOverwrite $config (deepCopy .Values.config)) }}
{{- end }}

{{/* The agent's container: the Deployment's, and the sidecar snippet's (README.md). */}}
{{- define "ragstream.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The dashboard: files/ragstream-dashboard.json as scripts/grafana_dashboard.py writes it,
with what its options add (docs/dashboard.md): the worst-queries panels and variables
(files/ragstream-worst-queries.json, over the table worstQueries.table), and the links of
the trace ids (an exemplar's trace_id, the worst queries' query_id) to the trace UI.
*/}}
{{- define "ragstream.dashboard" -}}
{{- $g := .Values.grafanaDashboard }}
{{- $dashboard := .Files.Get "files/ragstream-dashboard.json" | fromJson }}
{{- if $g.worstQueries.enabled }}
{{- $part := .Files.Get "files/ragstream-worst-queries.json" | replace "ragstream_results" $g.worstQueries.table | fromJson }}
{{- $_ := set $dashboard "panels" (concat $dashboard.panels $part.panels) }}
{{- $_ := set $dashboard.templating "list" (concat $dashboard.templating.list $part.variables) }}
{{- end }}
{{- $links := list }}
{{- if $g.traces.url }}
{{- $links = append $links (dict "title" "Trace ${__value.raw}" "url" $g.traces.url "targetBlank" true) }}
{{- end }}
{{- if $g.traces.tempoDatasourceUid }}
{{- $query := dict "query" "${__value.raw}" "queryType" "traceql" }}
{{- $internal := dict "datasourceUid" $g.traces.tempoDatasourceUid "datasourceName" "Tempo" "query" $query }}
{{- $links = append $links (dict "title" "Trace ${__value.raw} in Tempo" "url" "" "internal" $internal) }}
{{- end }}
{{- if $links }}
{{- range $panel := $dashboard.panels }}
{{- $matcher := dict }}
{{- range $target := ($panel.targets | default list) }}
{{- if $target.exemplar }}
{{- $matcher = dict "id" "byName" "options" "trace_id" "scope" "exemplar" }}
{{- end }}
{{- end }}
{{- if and (not $matcher) (eq (dig "datasource" "uid" "" $panel) "${results_datasource}") }}
{{- $matcher = dict "id" "byName" "options" "query_id" }}
{{- end }}
{{- if $matcher }}
{{- $override := dict "matcher" $matcher "properties" (list (dict "id" "links" "value" $links)) }}
{{- $_ := set $panel.fieldConfig "overrides" (append $panel.fieldConfig.overrides $override) }}
{{- end }}
{{- end }}
{{- end }}
{{- toPrettyJson $dashboard }}
{{- end }}
