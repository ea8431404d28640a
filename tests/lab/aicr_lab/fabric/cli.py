"""``aicr-fabric-sim``: run the fabric simulator in the foreground (used by ``make demo``)."""

import argparse
import json
import os
import signal
import sys
import tempfile
import threading

from aicr_lab.fabric.pytest_fixture import start_simulator


def build_parser():
    parser = argparse.ArgumentParser(prog="aicr-fabric-sim", description="FTI FM/CM and Redfish composable-fabric simulator over HTTPS")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--state-dir", help="where the CA and server certificate are written (default: a temporary directory)")
    parser.add_argument("--machines", type=int, default=8)
    parser.add_argument("--node-prefix", default="node-")
    parser.add_argument("--pool", help='JSON {"A100": {"type": "gpu", "count": 16}, ...}')
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every attach/detach call")
    parser.add_argument("--read-latency", type=float, default=0.0, help="seconds added to every read call")
    parser.add_argument("--cm-polls", type=int, default=2, help="Cluster Manager reads before ADDING becomes ADD_COMPLETE")
    parser.add_argument("--token-ttl", type=int, default=3600)
    parser.add_argument("--kubeconfig", help="update node nvidia.com/gpu on attach/detach through this cluster")
    parser.add_argument("--context")
    parser.add_argument("--local-gpus", type=int, default=0, help="GPUs every node has besides fabric ones")
    parser.add_argument("--info-file", help="write endpoint, ca_path and credentials as JSON here")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    state_dir = args.state_dir or tempfile.mkdtemp(prefix="aicr-fabric-sim-")
    options = {
        "machines": args.machines, "node_prefix": args.node_prefix, "latency": args.latency, "read_latency": args.read_latency,
        "cm_polls": args.cm_polls, "token_ttl": args.token_ttl, "local_gpus": args.local_gpus,
    }
    if args.pool:
        options["pool"] = json.loads(args.pool)
    handle = start_simulator(state_dir, host=args.host, port=args.port, kubeconfig=args.kubeconfig, kube_context=args.context, **options)
    state = handle.control.state()
    info = dict(handle.credentials, endpoint=handle.endpoint, url=handle.url, ca_path=handle.ca_path,
                tenant_id=state["tenant_id"], cluster_id=state["cluster_id"],
                machines={m["node"]: uuid for uuid, m in state["machines"].items()})
    text = json.dumps(info, indent=2, sort_keys=True)
    if args.info_file:
        tmp = args.info_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle_out:
            handle_out.write(text + "\n")
        os.replace(tmp, args.info_file)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    handle.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
