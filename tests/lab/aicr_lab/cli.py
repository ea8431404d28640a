"""``aicr-lab``: the local lab from the command line.

    aicr-lab build [--link-dir .venv/bin]   # build (or find cached) the control plane's binaries
    aicr-lab up --dir .build/lab        # start the lab; prints lab.json when every part is ready
    aicr-lab status --dir .build/lab
    aicr-lab down --dir .build/lab
"""

import argparse
import json
import sys

from aicr_lab import lab as lab_module
from aicr_lab.controlplane import build, processes


def _log(line):
    sys.stderr.write("aicr-lab: %s\n" % line)
    sys.stderr.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="aicr-lab", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["up", "down", "status", "build"])
    parser.add_argument("--dir", default=str(lab_module.REPO / ".build" / "lab"), help="lab directory (default: %(default)s)")
    parser.add_argument("--nodes", type=int, default=2, help="Kubernetes nodes (kwok)")
    parser.add_argument("--machines", type=int, default=2, help="fabric machines (one per node)")
    parser.add_argument("--no-fabric", action="store_true", help="do not start the fabric simulator")
    parser.add_argument("--link-dir", help="with build: link kubectl (of the control plane's release) into this directory")
    args = parser.parse_args(argv)
    try:
        if args.action == "build":
            result = {"versions": build.versions(), "binaries": build.ensure_binaries(log=_log)}
            if args.link_dir:
                result["linked"] = build.link(result["binaries"], args.link_dir, ["kubectl"])
        elif args.action == "up":
            result = lab_module.up(args.dir, nodes=args.nodes, machines=args.machines, with_fabric=not args.no_fabric, log=_log)
        elif args.action == "status":
            result = lab_module.status(args.dir)
        else:
            result = {"stopped": lab_module.down(args.dir)}
    except (lab_module.LabError, build.BuildError, processes.ProcessError) as exc:
        sys.stderr.write("aicr-lab: %s\n" % exc)
        return 1
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
