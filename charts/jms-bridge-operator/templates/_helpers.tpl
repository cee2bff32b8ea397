{{/* Names and labels shared by the templates. */}}

{{- define "jms-bridge-operator.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "jms-bridge-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "jms-bridge-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "jms-bridge-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "jms-bridge-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "jms-bridge-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The namespaces the operator serves, as JSON (`include ... | fromJsonArray`): [] for all of them
(allNamespaces), else watchNamespaces, else the release namespace.
*/}}
{{- define "jms-bridge-operator.watchNamespaces" -}}
{{- if .Values.allNamespaces }}
{{- if .Values.watchNamespaces }}
{{- fail "allNamespaces and watchNamespaces exclude each other: set one" }}
{{- end }}
{{- list | toJson }}
{{- else }}
{{- .Values.watchNamespaces | default (list .Release.Namespace) | toJson }}
{{- end }}
{{- end }}

{{- define "jms-bridge-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "jms-bridge-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* What the operator does inside a served namespace: exactly the objects it reads and writes. */}}
{{- define "jms-bridge-operator.namespacedRules" -}}
- apiGroups: [jmsbridge.dev]
  resources: [jmsbridges, jmsbridgeroutes]
  verbs: [get, list, watch, patch]
- apiGroups: [jmsbridge.dev]
  resources: [jmsbridges/status, jmsbridgeroutes/status]
  verbs: [get, patch]
- apiGroups: [sparkoperator.k8s.io]
  resources: [sparkapplications]
  verbs: [get, list, watch, create, update, delete]
# Its ConfigMaps are watched (by label), so that one deleted or edited by hand is put back at once; patch
# for the rule it puts into each bridge's Role (on the health ConfigMap): RBAC lets no one grant more than
# it holds.
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create]
# A standby pair's Lease (the job's election): its holder is the status' activeInstance. The operator
# creates it free (the job may not create Leases: create cannot be narrowed by name), and holds get and
# update to grant them in the bridge's Role.
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list, watch, create, update]
# Each bridge's identity (identity.py): its service account, its Role and the bindings to that Role and
# to the ClusterRole jms-bridge-job, which it may bind and no other.
- apiGroups: [""]
  resources: [serviceaccounts]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [roles, rolebindings]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [clusterroles]
  verbs: [bind]
  resourceNames: [jms-bridge-job]
# Each bridge's key Secret, made once (never read back: the pods read it).
- apiGroups: [""]
  resources: [secrets]
  verbs: [create]
# A standby pair's checkpoint claim: the status says whether both instances can share it.
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, list, watch]
{{- end }}

{{/*
The Kafka checks connect as each bridge, and the Secret checks follow the versions of the Secrets its pods
use: both read the Secrets a bridge names (only get). In the served namespaces' Roles; with allNamespaces
in a Role of each namespace where bridges run, never cluster-wide.
*/}}
{{- define "jms-bridge-operator.readsSecrets" -}}
{{- if or .Values.operator.kafkaChecks.enabled (gt (float64 .Values.operator.secretChecks.intervalSeconds) 0.0) }}true{{ end }}
{{- end }}

{{- define "jms-bridge-operator.secretRules" -}}
- apiGroups: [""]
  resources: [secrets]
  verbs: [get]
{{- end }}

{{/*
The job image of bridges that name none, when the operator's own default (ghcr.io/jmsbridge/bridge-job at
its version, bridge_job.config.DEFAULT_JOB_IMAGE) is not it: bridgeJob.image, else the same repository in
another image.registry. Empty: the operator's default.
*/}}
{{- define "jms-bridge-operator.jobImage" -}}
{{- if .Values.bridgeJob.image }}
{{- .Values.bridgeJob.image }}
{{- else if ne .Values.image.registry "ghcr.io" }}
{{- printf "%s/jmsbridge/bridge-job:%s" .Values.image.registry .Chart.AppVersion }}
{{- end }}
{{- end }}
