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

{{/*
The container image of a component: its own repository/tag, else the global one. The
node agent is another binary, so its repository is never the global one. No images are
published: rendering fails until they are set, saying how to build them.
*/}}
{{- define "tessera.image" -}}
{{- $img := .root.Values.image -}}
{{- $c := .values.image | default dict -}}
{{- $agent := eq .component "node-agent" -}}
{{- $repo := $c.repository | default (ternary "" $img.repository $agent) -}}
{{- $tag := $c.tag | default $img.tag -}}
{{- $missing := list -}}
{{- if not $repo }}{{ $missing = append $missing (ternary "nodeAgent.image.repository" "image.repository" $agent) }}{{ end -}}
{{- if not $tag }}{{ $missing = append $missing "image.tag" }}{{ end -}}
{{- with $missing -}}
{{- fail (printf "%s not set: Tessera publishes no images. Build and push them with `make images REGISTRY=<registry>`, then set image.repository=<registry>/tessera, image.tag=<tag> and nodeAgent.image.repository=<registry>/tessera-node-agent (make images prints them; docs/install.md#images)" (join " and " .)) -}}
{{- end -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}

{{/*
Labels of a component's pod template: its own labels, then the component's podLabels,
then the global podLabels. On a key they share the first wins: the chart's own labels,
the selector among them, are never replaced.
*/}}
{{- define "tessera.podLabels" -}}
{{- $own := include "tessera.labels" . | fromYaml -}}
{{- toYaml (merge $own (.values.podLabels | default dict) (.root.Values.podLabels | default dict)) -}}
{{- end -}}

{{/*
Annotations of a component's pod template, from (dict "ctx" $ctx "own" $annotations):
the chart's own (config checksums), then the component's podAnnotations, then the
global podAnnotations; the first wins on a shared key. Empty when there are none.
*/}}
{{- define "tessera.podAnnotations" -}}
{{- $a := merge (dict) (.own | default dict) (.ctx.values.podAnnotations | default dict) (.ctx.root.Values.podAnnotations | default dict) -}}
{{- with $a }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{/*
A component's topologySpreadConstraints (values <component>.topologySpreadConstraints):
a constraint without a labelSelector selects the component's own pods. Empty when the
list is empty.
*/}}
{{- define "tessera.topologySpread" -}}
{{- $out := list -}}
{{- range .values.topologySpreadConstraints -}}
{{- $c := deepCopy . -}}
{{- if not $c.labelSelector -}}
{{- $_ := set $c "labelSelector" (dict "matchLabels" (include "tessera.selectorLabels" $ | fromYaml)) -}}
{{- end -}}
{{- $out = append $out $c -}}
{{- end -}}
{{- with $out }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{/*
The pod-level fields every workload renders the same way: securityContext (values
<component>.podSecurityContext), imagePullSecrets, nodeSelector, tolerations, affinity
and topologySpreadConstraints. Indented for a pod spec (6 spaces).
*/}}
{{- define "tessera.podScheduling" -}}
{{- with .values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with include "tessera.topologySpread" . }}
topologySpreadConstraints:
  {{- . | nindent 2 }}
{{- end }}
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

{{/* The labels and annotations that decide a workload's queue, gang and gang size (webhooks.ChargeKeys), as a CEL list. */}}
{{- define "tessera.chargeKeys" -}}
["tessera.dev/queue", "tessera.dev/pod-group", "tessera.dev/min-available", "scheduling.volcano.sh/queue-name", "scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-min-member", "kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/pod-group-name", "kueue.x-k8s.io/pod-group-total-count", "scheduling.x-k8s.io/pod-group"]
{{- end -}}

{{/* Webhook rules for the workload controllers' custom resources (webhooks.CustomWorkloads), for the operations given as a list. MPIJobs are the mpi-operator's (v2beta1) or the training operator's older ones (v1), whichever is installed. */}}
{{- define "tessera.customWorkloadRules" -}}
{{- $ops := printf "[\"%s\"]" (join "\", \"" .) -}}
- apiGroups: ["jobset.x-k8s.io"]
  apiVersions: ["v1alpha2"]
  operations: {{ $ops }}
  resources: ["jobsets"]
  scope: Namespaced
- apiGroups: ["ray.io"]
  apiVersions: ["v1"]
  operations: {{ $ops }}
  resources: ["rayclusters", "rayjobs"]
  scope: Namespaced
- apiGroups: ["leaderworkerset.x-k8s.io"]
  apiVersions: ["v1"]
  operations: {{ $ops }}
  resources: ["leaderworkersets"]
  scope: Namespaced
- apiGroups: ["kubeflow.org"]
  apiVersions: ["v1"]
  operations: {{ $ops }}
  resources: ["pytorchjobs", "mpijobs"]
  scope: Namespaced
- apiGroups: ["kubeflow.org"]
  apiVersions: ["v2beta1"]
  operations: {{ $ops }}
  resources: ["mpijobs"]
  scope: Namespaced
{{- end -}}

{{/*
tessera.workloadRules: list and watch of the workload objects that size whole-workload
gangs (watched where the API server serves them), for the scheduler and the autoscaler,
which snapshots the cluster as the scheduler does.
*/}}
{{- define "tessera.workloadRules" -}}
- apiGroups: ["scheduling.k8s.io", "scheduling.x-k8s.io"]
  resources: ["podgroups"]
  verbs: ["list", "watch"]
- apiGroups: ["jobset.x-k8s.io"]
  resources: ["jobsets"]
  verbs: ["list", "watch"]
- apiGroups: ["ray.io"]
  resources: ["rayclusters"]
  verbs: ["list", "watch"]
- apiGroups: ["leaderworkerset.x-k8s.io"]
  resources: ["leaderworkersets"]
  verbs: ["list", "watch"]
- apiGroups: ["kubeflow.org"]
  resources: ["pytorchjobs", "mpijobs"]
  verbs: ["list", "watch"]
{{- end }}

{{/*
tessera.selectorText: a node selector as key=value pairs, for messages; "none" when empty.
*/}}
{{- define "tessera.selectorText" -}}
{{- $pairs := list }}
{{- range $k, $v := . }}{{ $pairs = append $pairs (printf "%s=%s" $k $v) }}{{ end }}
{{- if $pairs }}{{ join ", " $pairs }}{{ else }}none{{ end }}
{{- end }}

{{/*
tessera.dra: "true" when the chart renders Tessera's Dynamic Resource Allocation objects
(DeviceClasses, their admission policies): dra.enabled true, or auto and the cluster
serves resource.k8s.io/v1 DeviceClasses (Kubernetes 1.34 and later). Empty otherwise.
`helm template` knows no cluster: auto renders nothing there unless
--api-versions resource.k8s.io/v1/DeviceClass is given.
*/}}
{{- define "tessera.dra" -}}
{{- $on := .Values.dra.enabled -}}
{{- if eq (toString $on) "auto" -}}
{{- $on = .Capabilities.APIVersions.Has "resource.k8s.io/v1/DeviceClass" -}}
{{- end -}}
{{- if $on }}true{{ end -}}
{{- end -}}

{{/* The DRA driver of the node agent: the driver name of Tessera's GPUs in ResourceSlices and allocations. */}}
{{- define "tessera.draDriver" -}}
gpu.tessera.dev
{{- end -}}

{{/* Tessera's DeviceClasses (templates/dra/deviceclasses.yaml), as a CEL list. */}}
{{- define "tessera.deviceClasses" -}}
["gpu.tessera.dev", "gpu-share.tessera.dev"]
{{- end -}}
