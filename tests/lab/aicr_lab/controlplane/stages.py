"""kwok Stages: how the lab's fake nodes and pods move through their lives.

kwok v0.8 ships no built-in stages, so the lab gives it these. Tests steer a pod with annotations
on the pod (or its workload's pod template):

| annotation | effect |
|---|---|
| ``lab.aicr.io/ready-after: "1s"`` | the pod becomes Ready that long after it started (a Go duration; default 0) |
| ``lab.aicr.io/never-ready: "true"`` | the pod runs but never becomes Ready |
| ``lab.aicr.io/fail: "true"`` | a Job's pod fails (phase Failed, exit 1); any other pod crash-loops (never Ready) |
| ``lab.aicr.io/complete-after: "1s"`` | a pod that runs to completion (a Job's) succeeds that long after it is Ready (default 0) |

Everything else is the real control plane: the scheduler binds pods to the fake nodes (honouring
selectors, taints and extended resources such as ``nvidia.com/gpu``), the controllers turn pod
readiness into Deployment, StatefulSet, DaemonSet and Job status.
"""

READY_AFTER = "lab.aicr.io/ready-after"
NEVER_READY = "lab.aicr.io/never-ready"
FAIL = "lab.aicr.io/fail"
COMPLETE_AFTER = "lab.aicr.io/complete-after"
FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"

_NOT_DELETING = """
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'"""

NODE_STAGES = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-initialize
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values: ['True']
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      addresses:
      - address: {{ NodeIP | Quote }}
        type: InternalIP
      - address: {{ NodeName | Quote }}
        type: Hostname
      {{ with NodePort }}
      daemonEndpoints:
        kubeletEndpoint:
          Port: {{ . }}
      {{ end }}
      allocatable:
      {{ with .status.allocatable }}
      {{ YAML . 1 }}
      {{ else }}
        cpu: "16"
        memory: 64Gi
        pods: "110"
      {{ end }}
      capacity:
      {{ with .status.capacity }}
      {{ YAML . 1 }}
      {{ else }}
        cpu: "16"
        memory: 64Gi
        pods: "110"
      {{ end }}
      {{ $nodeInfo := .status.nodeInfo }}
      nodeInfo:
        architecture: {{ or $nodeInfo.architecture "amd64" }}
        bootID: {{ or $nodeInfo.bootID `""` }}
        containerRuntimeVersion: {{ or $nodeInfo.containerRuntimeVersion "containerd://2.1.4" }}
        kernelVersion: {{ or $nodeInfo.kernelVersion "6.8.0-60-generic" }}
        kubeProxyVersion: {{ or $nodeInfo.kubeProxyVersion `""` }}
        kubeletVersion: {{ or $nodeInfo.kubeletVersion Version }}
        machineID: {{ or $nodeInfo.machineID `""` }}
        operatingSystem: {{ or $nodeInfo.operatingSystem "linux" }}
        osImage: {{ or $nodeInfo.osImage "Ubuntu 24.04.2 LTS" }}
        systemUUID: {{ or $nodeInfo.systemUUID `""` }}
      phase: Running
"""

POD_STAGES = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-create
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:%(not_deleting)s
    - key: '.status.podIP'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'NotIn'
      values: ['Running', 'Succeeded', 'Failed']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ if .spec.initContainers }}
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        message: 'containers with incomplete status: [{{ range .spec.initContainers }} {{ .name }} {{ end }}]'
        reason: ContainersNotInitialized
        status: "False"
        type: Initialized
      {{ else }}
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      {{ end }}
      {{ range .spec.readinessGates }}
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: {{ .conditionType | Quote }}
      {{ end }}
      {{ if .spec.initContainers }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            reason: Completed
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          waiting:
            reason: ContainerCreating
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      {{ $ip := PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      podIP: {{ $ip | Quote }}
      phase: Pending
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-init-containers-completed
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:%(not_deleting)s
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending']
    - key: '.status.conditions.[] | select( .type == "Initialized" ) | .status'
      operator: 'NotIn'
      values: ['True']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-running
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:%(not_deleting)s
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending']
    - key: '.status.conditions.[] | select( .type == "Initialized" ) | .status'
      operator: 'In'
      values: ['True']
    - key: '.status.containerStatuses.[].state.running.startedAt'
      operator: 'DoesNotExist'
    - key: '.metadata.annotations["%(fail)s"]'
      operator: 'DoesNotExist'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        message: 'containers with unready status: [{{ range .spec.containers }}{{ .name }} {{ end }}]'
        reason: ContainersNotReady
        status: "False"
        type: Ready
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        message: 'containers with unready status: [{{ range .spec.containers }}{{ .name }} {{ end }}]'
        reason: ContainersNotReady
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:%(not_deleting)s
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values: ['True']
    - key: '.metadata.annotations["%(never_ready)s"]'
      operator: 'DoesNotExist'
    - key: '.metadata.annotations["%(fail)s"]'
      operator: 'DoesNotExist'
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["%(ready_after)s"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      containerStatuses:
      {{ $root := . }}
      {{ range $index, $item := .spec.containers }}
      {{ $origin := index $root.status.containerStatuses $index }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: true
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ or $origin.state.running.startedAt $now | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-complete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:%(not_deleting)s
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'In'
      values: ['True']
    - key: '.spec.restartPolicy'
      operator: 'In'
      values: ['Never', 'OnFailure']
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["%(complete_after)s"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        reason: PodCompleted
        status: "False"
        type: Ready
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        reason: PodCompleted
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Succeeded
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-fail
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:%(not_deleting)s
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending']
    - key: '.status.conditions.[] | select( .type == "Initialized" ) | .status'
      operator: 'In'
      values: ['True']
    - key: '.spec.restartPolicy'
      operator: 'In'
      values: ['Never', 'OnFailure']
    - key: '.metadata.annotations["%(fail)s"]'
      operator: 'Exists'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        reason: PodFailed
        status: "False"
        type: Ready
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 1
            finishedAt: {{ $now | Quote }}
            reason: Error
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Failed
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-crash-loop
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:%(not_deleting)s
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending']
    - key: '.status.conditions.[] | select( .type == "Initialized" ) | .status'
      operator: 'In'
      values: ['True']
    - key: '.spec.restartPolicy'
      operator: 'In'
      values: ['Always']
    - key: '.metadata.annotations["%(fail)s"]'
      operator: 'Exists'
  next:
    event:
      type: Warning
      reason: BackOff
      message: Back-off restarting failed container
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 1
        started: false
        lastState:
          terminated:
            exitCode: 1
            finishedAt: {{ $now | Quote }}
            reason: Error
            startedAt: {{ $now | Quote }}
        state:
          waiting:
            reason: CrashLoopBackOff
            message: back-off restarting failed container
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.metadata.finalizers'
      operator: 'DoesNotExist'
  next:
    delete: true
""" % {"not_deleting": _NOT_DELETING, "ready_after": READY_AFTER, "never_ready": NEVER_READY, "fail": FAIL,
       "complete_after": COMPLETE_AFTER}


def kwok_config():
    """The kwok configuration file: the stages above (kwok reads Stage documents from ``--config``)."""
    return NODE_STAGES.strip() + "\n---\n" + POD_STAGES.strip() + "\n"
