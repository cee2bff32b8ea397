"""`python -m tests.kubeapi [--port N] [DIR]`: the emulator with the project's CRDs, for kubectl by hand.

Serves until interrupted, with the `apps` namespace, and writes a kubeconfig into DIR (default: a new
temporary directory): `KUBECONFIG=DIR/kubeconfig kubectl apply -f examples/cluster/`, then
`jmsbridge operator` with the same KUBECONFIG.
"""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import tempfile
import threading

from tests.kubeapi.client import serve_kube_api
from tests.kubeapi.spark_crd import spark_crd_file

CRD_DIR = pathlib.Path(__file__).resolve().parents[2] / "crds"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.kubeapi", description=__doc__)
    parser.add_argument("directory", nargs="?", type=pathlib.Path, help="where to write the kubeconfig")
    parser.add_argument("--port", type=int, default=0, help="default: any free port")
    args = parser.parse_args()
    directory = args.directory or pathlib.Path(tempfile.mkdtemp(prefix="kubeapi-"))
    directory.mkdir(parents=True, exist_ok=True)
    with serve_kube_api(directory, port=args.port) as kube:
        kube.install_crds(*sorted(CRD_DIR.glob("*.yaml")), spark_crd_file())
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
        print(f"serving {kube.url}; export KUBECONFIG={kube.kubeconfig}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
