"""Device-plugin stand-in: keep a node's ``nvidia.com/gpu`` capacity/allocatable equal to its fabric GPUs."""

import threading

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    HAS_KUBERNETES = True
except ImportError:  # pragma: no cover - the test venv has it
    HAS_KUBERNETES = False


class NodeGpuSync:
    """A Fabric listener patching ``status.capacity/allocatable['nvidia.com/gpu']`` of the machine's node."""

    def __init__(self, kubeconfig, context=None, local_gpus=0):
        if not HAS_KUBERNETES:
            raise RuntimeError("the kubernetes package is needed to wire the simulator to a cluster")
        configuration = k8s_client.Configuration()
        k8s_config.load_kube_config(config_file=str(kubeconfig), context=context, client_configuration=configuration)
        self.api = k8s_client.CoreV1Api(k8s_client.ApiClient(configuration))
        self.local_gpus = int(local_gpus)
        self.lock = threading.Lock()
        self.errors = []
        self.updates = 0

    def __call__(self, fabric, machine):
        count = str(self.local_gpus + fabric.gpu_count(machine))
        body = {"status": {"capacity": {"nvidia.com/gpu": count}, "allocatable": {"nvidia.com/gpu": count}}}
        with self.lock:
            try:
                self.api.patch_node_status(machine["node"], body)
                self.updates += 1
            except Exception as exc:  # pylint: disable=broad-except
                # A node the cluster does not know is not the fabric's problem; remember it for the control API.
                self.errors.append("%s: %s" % (machine["node"], str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
