"""
A stateful Kubernetes API emulator for tests, so that the real kopf runtime can run an operator end
to end over real HTTP. Built on kmock (see `emulator`); the cluster semantics are in `cluster`.

    def test_something(kube_api: KubeApi) -> None:          # the fixture from `fixtures`
        kube_api.install_crds(pathlib.Path("crds/jmsbridge.yaml"))
        with run_operator(kube_api, "jmsbridge_operator"):  # from `operator_runner`
            kube_api.create({...})
            kube_api.wait_for(lambda: kube_api.get(...), what="the SparkApplication")

`run_operator` is not re-exported here, so that importing this package does not import kopf.
"""

from tests.kubeapi.client import KubeApi, KubeApiError, serve_kube_api

__all__ = ["KubeApi", "KubeApiError", "serve_kube_api"]
