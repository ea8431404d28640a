"""``aicr-kube-emulator``: serve an emulated Kubernetes API on 127.0.0.1 until SIGTERM/SIGINT."""

import argparse
import json
import signal
import sys
import threading

from .server import Emulator, Options


def _labels(text):
    out = {}
    for part in (text or "").split(","):
        if part.strip():
            if "=" not in part:
                raise argparse.ArgumentTypeError("labels are key=value pairs separated by commas, got %r" % part)
            key, value = part.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def build_parser():
    parser = argparse.ArgumentParser(prog="aicr-kube-emulator", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0 picks a free one)")
    parser.add_argument("--kubeconfig", required=True, help="where to write the kubeconfig for this emulator")
    parser.add_argument("--state", help="JSON file: loaded at start when present, written at stop and on /__emulator/save")
    parser.add_argument("--context", default="aicr-emulator", help="context/cluster name in the kubeconfig")
    parser.add_argument("--token", help="bearer token clients must send (default: random)")
    parser.add_argument("--kube-version", default="v1.35.0", help="version reported by /version")
    parser.add_argument("--nodes", type=int, default=3, help="number of fake nodes created at start")
    parser.add_argument("--node-labels", type=_labels, default={}, help="extra labels on every fake node (k=v,k2=v2)")
    parser.add_argument("--gpus-per-node", type=int, default=0, help="nvidia.com/gpu capacity of each fake node")
    parser.add_argument("--nodes-file", help="JSON list of nodes {name, labels, capacity, allocatable, taints, providerID}")
    parser.add_argument("--ready-after", type=float, default=0.0, help="default readiness delay of workloads (seconds)")
    parser.add_argument("--schedule", action="store_true",
                        help="schedule pods: nodeSelector, required node affinity, taints, cordon and extended resources "
                             "(e.g. nvidia.com/gpu) against node allocatable; unschedulable pods stay Pending")
    parser.add_argument("--no-pods", action="store_true", help="do not create Pods for workloads")
    parser.add_argument("--no-builtin-validation", action="store_true",
                        help="skip schema validation of built-in kinds (custom resources are always validated)")
    parser.add_argument("--field-validation", default="Warn", choices=["Ignore", "Warn", "Strict"],
                        help="field validation when a request does not ask for one (apiserver default: Warn)")
    parser.add_argument("--tick", type=float, default=0.05, help="controller period in seconds")
    parser.add_argument("--bookmark-seconds", type=float, default=5.0, help="watch bookmark period")
    parser.add_argument("--require-token", action="store_true",
                        help="refuse requests without the bearer token (Go clients send none over plain HTTP)")
    parser.add_argument("--verbose", action="store_true", help="log requests to stderr (never headers or tokens)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    nodes = None
    if args.nodes_file:
        with open(args.nodes_file, "r", encoding="utf-8") as handle:
            nodes = json.load(handle)
    options = Options(port=args.port, token=args.token, kube_version=args.kube_version, nodes=nodes, node_count=args.nodes,
                      node_labels=args.node_labels, gpus_per_node=args.gpus_per_node,
                      validate_builtins=not args.no_builtin_validation, default_field_validation=args.field_validation,
                      tick_seconds=args.tick, default_ready_after=args.ready_after, bookmark_seconds=args.bookmark_seconds,
                      state_file=args.state, create_pods=not args.no_pods, verbose=args.verbose,
                      require_token=args.require_token, schedule=args.schedule)
    emulator = Emulator(options)
    done = threading.Event()

    def _stop(_signum, _frame):
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    emulator.start()
    emulator.write_kubeconfig(args.kubeconfig, args.context)
    sys.stdout.write("ready %s\n" % emulator.url)
    sys.stdout.flush()
    while not done.wait(0.5):
        pass
    emulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
