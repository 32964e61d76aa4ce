{{/*
Object names are fixed (tessera-scheduler, tessera-webhook, ...): Tessera owns
cluster-scoped objects (CRDs, PriorityClasses, webhook configurations), so a cluster
runs one Tessera, and the binaries' defaults name the same objects.
*/}}

{{/* Labels of every object; component is scheduler, webhook, node-agent or autoscaler. */}}
{{- define "tessera.labels" -}}
app.kubernetes.io/name: tessera-{{ .component }}
app.kubernetes.io/part-of: tessera
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of a component's pods. */}}
{{- define "tessera.selectorLabels" -}}
app.kubernetes.io/name: tessera-{{ .component }}
{{- end -}}

{{/* Labels for objects that belong to no single component. */}}
{{- define "tessera.commonLabels" -}}
app.kubernetes.io/part-of: tessera
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The container image of a component: its own repository/tag, else the global one. */}}
{{- define "tessera.image" -}}
{{- $img := .root.Values.image -}}
{{- $c := .values.image | default dict -}}
{{- $repo := $c.repository | default $img.repository -}}
{{- $tag := $c.tag | default $img.tag | default .root.Chart.AppVersion -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}

{{/* The container securityContext every control-plane container runs with. */}}
{{- define "tessera.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The pod securityContext of the control-plane components. */}}
{{- define "tessera.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Namespaces the webhooks never intercept: kube-system, Tessera's own, and extra ones. */}}
{{- define "tessera.webhookExcludedNamespaces" -}}
{{- $ns := list "kube-system" .Release.Namespace -}}
{{- range .Values.webhook.excludeNamespaces }}{{ $ns = append $ns . }}{{ end -}}
{{- toJson (uniq $ns) -}}
{{- end -}}

{{/* The scheduler's user name: the only one that may write scheduling state on pods. */}}
{{- define "tessera.schedulerUser" -}}
system:serviceaccount:{{ .Release.Namespace }}:tessera-scheduler
{{- end -}}

{{/* The pod annotations only the scheduler writes (api/v1alpha1.SchedulingStateAnnotations), as a CEL list. */}}
{{- define "tessera.schedulingStateKeys" -}}
["tessera.dev/gpu-assignment", "tessera.dev/bound-pod-uid"]
{{- end -}}
