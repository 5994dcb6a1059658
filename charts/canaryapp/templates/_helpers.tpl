{{/* The controller's name, shared by its Deployment, ServiceAccount, roles and bindings. */}}
{{- define "canaryapp.name" -}}canaryapp-controller{{- end -}}

{{- define "canaryapp.selectorLabels" -}}
app.kubernetes.io/name: canaryapp
app.kubernetes.io/component: controller
{{- end -}}

{{- define "canaryapp.labels" -}}
{{ include "canaryapp.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{/* The controller's rules, the same in a ClusterRole (all namespaces) and in each namespace's Role. */}}
{{- define "canaryapp.rules" -}}
- apiGroups: ["canaryapp.io"]
  resources: ["canaryapps"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["canaryapp.io"]
  resources: ["canaryapps/status"]
  verbs: ["get", "update", "patch"]
- apiGroups: ["canaryapp.io"]
  resources: ["canaryapps/finalizers"]
  verbs: ["update"]
{{- if empty .Values.watchNamespaces }}
# The analysis templates an app names (ADR 0031), read for their metrics and never written; watched only
# where the cluster serves their CRDs.
- apiGroups: ["canaryapp.io"]
  resources: ["canaryanalysistemplates", "clustercanaryanalysistemplates"]
  verbs: ["get", "list", "watch"]
{{- else }}
# The analysis templates of this namespace (ADR 0031); the cluster-scoped ones are read through their own
# ClusterRole.
- apiGroups: ["canaryapp.io"]
  resources: ["canaryanalysistemplates"]
  verbs: ["get", "list", "watch"]
{{- end }}
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# A StatefulSet workload (ADR 0015): never deleted by the controller (its owner reference does that), and
# its PersistentVolumeClaims are retained, so neither needs delete.
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get", "list", "watch", "create", "update", "patch"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["networking.istio.io"]
  resources: ["virtualservices", "destinationrules"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# The HTTPRoute of `spec.mesh: gateway-api` (ADR 0026); watched only where the cluster serves the Gateway API.
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["httproutes"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# Watched for the digest the secondary's pods run; delete only for a StatefulSet's pod of a failed
# revision that is not Ready, which its controller would wait for forever (forced rollback, ADR 0023).
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch", "update"]
# Listed and watched only with the selectors canaryapp.io/credentials=true and (its older name)
# canaryapp.io/prometheus-credentials=true.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["list", "watch"]
{{- end -}}
