"""``aicr-chart-repo``: serve chart directories and repositories as Helm HTTP repositories on 127.0.0.1.

    aicr-chart-repo --port 0 --charts examples/charts --url-prefix /examples
    aicr-chart-repo --port 8879 --charts ../shared/charts-repo/http

Prints ``ready <url>`` (the repository at ``--url-prefix``) on stdout once serving,
then one ``repo <url> <chart>=<versions> ...`` line per served repository on stderr,
and stops cleanly on SIGTERM or SIGINT.
"""

import argparse
import signal
import sys
import threading

from aicr_lab.charts.helm import HelmError
from aicr_lab.charts.repo import ChartRepoError, ChartRepoServer


def build_parser():
    parser = argparse.ArgumentParser(prog="aicr-chart-repo", description="Serve Helm chart repositories (index.yaml + .tgz) on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="TCP port (0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    parser.add_argument("--charts", action="append", required=True, metavar="[/PREFIX=]DIR",
                        help="a chart, a directory of charts or .tgz files, a repository, or a tree of repositories (repeatable)")
    parser.add_argument("--url-prefix", default="", help="URL path of the repository, e.g. /examples (default: the root)")
    parser.add_argument("--workdir", help="where the site is built (default: a temporary directory removed on exit)")
    parser.add_argument("--helm", help="helm binary used for packaging and indexing (default: the venv's helm)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    stop = threading.Event()

    def on_signal(_signum, _frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        server = ChartRepoServer(args.charts, workdir=args.workdir, url_prefix=args.url_prefix, host=args.host, port=args.port, helm=args.helm)
        server.start()
    except (ChartRepoError, HelmError, FileNotFoundError, OSError) as exc:
        sys.stderr.write("aicr-chart-repo: error: %s\n" % exc)
        return 2
    try:
        print("ready %s" % server.url, flush=True)
        for repo in server.repositories:
            charts = " ".join("%s=%s" % (name, ",".join(versions)) for name, versions in repo.charts.items())
            sys.stderr.write("repo %s %s\n" % (repo.url, charts))
        sys.stderr.flush()
        while not stop.wait(3600):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
