{{- define "warpd.labels" -}}
app.kubernetes.io/name: warpd
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "warpd.selector" -}}
app.kubernetes.io/name: warpd
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "warpd.healthProbe" -}}
exec:
  command: ["/usr/local/bin/warpd-health", "unix:/run/warpd/warpd.sock", "--timeout", "4"]
{{- end -}}
