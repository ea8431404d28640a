#!/usr/bin/env python
"""Offline stand-in for the get-pip.py that ansible-test downloads.

ansible-test bootstraps pip in each of its sanity virtual environments by fetching
get-pip.py from ci-files.testing.ansible.com, which this network cannot reach. It
looks for a cached copy first, so `make sanity` places this script there: it
installs pip from the interpreter's bundled wheel (ensurepip), then lets that pip
install what ansible-test asked for from the package index.
"""

import subprocess
import sys

GET_PIP_ONLY_FLAGS = ("--no-setuptools", "--no-wheel")

subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
pip_arguments = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY_FLAGS]
subprocess.check_call([sys.executable, "-m", "pip", "install"] + pip_arguments)
