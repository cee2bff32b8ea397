"""
Running a real kopf operator against the API server, in its own thread with its own event loop, under
the identity its kubeconfig gives (the product's operator: the chart's ServiceAccount, chart.py here).

kopf is not run in pytest-asyncio's loop: kopf assumes it owns its loop (at exit it cancels every
task it did not see at start), and tests stay synchronous and simple this way.

Each operator module gets its own registry: the module is imported while a fresh registry is kopf's
default, so its `@kopf.on...` handlers land there and nowhere else. Otherwise every operator imported
in the same pytest process (a toy one, the product's) would run the handlers of all the others. A
module that was already imported elsewhere keeps the registry it registered into back then.

kopf logs in through its usual fallback: the kubernetes client's kubeconfig loader. The client fixes
its default kubeconfig location when it is imported, so it is pointed at the operator's kubeconfig
for the duration of the run (as the `kube_api` fixture does at the admin's).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

import kopf
from kopf._cogs.aiokits import aiotasks
from kopf._core.intents.registries import SmartOperatorRegistry  # as kopf's default: with login fallbacks

from testbed.apiserver.client import KubeApi

STARTUP_TIMEOUT = 60.0
SHUTDOWN_TIMEOUT = 60.0
HUNG_TIMEOUT = 5.0  # kopf's
LATE_RUNNERS = "runner of "  # kopf's name of the task running a timer or daemon
# kopf's discovery of the API's resources, which its resource observer starts and does not stop: read-only
# requests that, once the operator's HTTP session is closed, retry and wait for a new login that never comes.
DISCOVERY = frozenset({"_read_old_api", "_read_new_apis"})

_logger = logging.getLogger("kopf._core.reactor.running")

_registries: dict[str, kopf.OperatorRegistry] = {}


def registry_of(module: str) -> kopf.OperatorRegistry:
    """The registry holding the handlers of an operator module (imported here on first use)."""
    if module not in _registries:
        if module in sys.modules:
            _registries[module] = kopf.get_default_registry()
        else:
            previous = kopf.get_default_registry()
            registry = SmartOperatorRegistry()
            kopf.set_default_registry(registry)
            try:
                importlib.import_module(module)
            finally:
                kopf.set_default_registry(previous)
            _registries[module] = registry
    return _registries[module]


@contextlib.contextmanager
def _clients_pointed_at(kubeconfig: Path) -> Iterator[None]:
    import kubernetes.config.kube_config as kube_config

    saved_env = {name: os.environ.get(name) for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    saved_default = kube_config.KUBE_CONFIG_DEFAULT_LOCATION
    os.environ["KUBECONFIG"] = str(kubeconfig)
    os.environ.pop("KUBERNETES_SERVICE_HOST", None)
    kube_config.KUBE_CONFIG_DEFAULT_LOCATION = str(kubeconfig)
    try:
        yield
    finally:
        kube_config.KUBE_CONFIG_DEFAULT_LOCATION = saved_default
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


async def _operate(
    registry: kopf.OperatorRegistry,
    namespaces: Sequence[str],
    clusterwide: bool,
    ready_flag: threading.Event,
    stopping: list[tuple[asyncio.AbstractEventLoop, Callable[[], None]]],
) -> None:
    """Run kopf's tasks in this loop until a stop is requested (appended to `stopping` for the test)."""
    requested, stop_flag = asyncio.Event(), asyncio.Event()

    def request_stop() -> None:
        requested.set()
        stop_flag.set()

    stopping.append((asyncio.get_running_loop(), request_stop))
    existing_tasks = asyncio.all_tasks()
    tasks = await kopf.spawn_tasks(
        registry=registry,
        clusterwide=clusterwide,
        namespaces=namespaces,
        standalone=True,  # no peering: one operator per test
        ready_flag=ready_flag,
        stop_flag=stop_flag,
    )
    # As `kopf.operator()`, plus: when any root task ends (a crash), raise the stop flag too.
    # Otherwise kopf's waiter for that flag holds its shutdown for 5 seconds.
    for task in tasks:
        task.add_done_callback(lambda _: stop_flag.set())
    await _run_tasks(tasks, ignored=existing_tasks)
    if not requested.is_set():
        raise RuntimeError("kopf exited without being stopped")


async def _run_tasks(
    root_tasks: Collection[asyncio.Task[Any]], ignored: Collection[asyncio.Task[Any]]
) -> None:
    """As `kopf.run_tasks`, but without waiting 5 s for a timer that was spawned too late to be stopped,
    or for kopf's own discovery of resources.

    A watch-event still being processed while the operator stops can spawn a timer (`bridge_resync`)
    after kopf's daemon killer stopped the others: nothing stops that one, and kopf waits 5 s for its
    "hung" tasks before it cancels them. Such timers and daemons (kopf's `runner of ...` tasks), and the
    discovery requests of an operator stopped soon after its start (`DISCOVERY`), are cancelled at once
    here; other tasks left over (handlers) still get kopf's 5 s.
    """
    try:
        root_done, root_pending = await aiotasks.wait(root_tasks, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        await aiotasks.stop(root_tasks, title="Root", logger=_logger, cancelled=True, interval=10)
        hung = await aiotasks.all_tasks(ignored=ignored)
        await aiotasks.stop(hung, title="Hung", logger=_logger, cancelled=True, interval=1)
        raise
    root_cancelled, _ = await aiotasks.stop(root_pending, title="Root", logger=_logger)
    late = {t for t in await aiotasks.all_tasks(ignored=ignored) if _late(t)}
    late_cancelled, _ = await aiotasks.stop(late, title="Late timer", logger=_logger, quiet=True, interval=1)
    hung = await aiotasks.all_tasks(ignored=ignored)
    hung_done, hung_pending = await aiotasks.wait(hung, timeout=HUNG_TIMEOUT)
    hung_cancelled, _ = await aiotasks.stop(hung_pending, title="Hung", logger=_logger, interval=1)
    await aiotasks.reraise(root_done | root_cancelled | hung_done | hung_cancelled | late_cancelled)


def _late(task: asyncio.Task[Any]) -> bool:
    coroutine = task.get_coro()
    return task.get_name().startswith(LATE_RUNNERS) or getattr(coroutine, "__qualname__", "") in DISCOVERY


@contextlib.contextmanager
def run_operator(
    kube: KubeApi,
    module: str,
    *,
    namespaces: Sequence[str] = (),
    clusterwide: bool = True,
    kubeconfig: Path | None = None,
) -> Iterator[None]:
    """
    Run the kopf operator defined by `module` against `kube` until the block exits, as the identity of
    `kubeconfig` (the admin's without one).

    Returns once the operator is ready (its startup handlers have finished). On exit, the operator
    is stopped and its thread joined; if the operator crashed, its exception is re-raised.
    """
    registry = registry_of(module)
    ready_flag = threading.Event()
    # The flags of kopf's stop are asyncio.Events of the operator's own loop: kopf waits for threading
    # flags in executor threads, which would keep its loop from closing after a crash.
    stopping: list[tuple[asyncio.AbstractEventLoop, Callable[[], None]]] = []
    crash: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(_operate(registry, namespaces, clusterwide and not namespaces, ready_flag, stopping))
        except BaseException as e:
            crash.append(e)
        finally:
            ready_flag.set()  # unblock the waiting test if the operator died during startup

    def stop() -> None:
        for loop, request_stop in stopping:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the operator is gone already
                loop.call_soon_threadsafe(request_stop)

    with _clients_pointed_at(kubeconfig or kube.kubeconfig):
        thread = threading.Thread(target=run, name=f"kopf-{module}", daemon=True)
        thread.start()
        try:
            if not ready_flag.wait(timeout=STARTUP_TIMEOUT):
                raise TimeoutError(f"The operator {module} did not start in {STARTUP_TIMEOUT}s")
            if not crash:
                yield
        finally:
            stop()
            thread.join(timeout=SHUTDOWN_TIMEOUT)
            # Raised from `finally`: a failure of the test body stays visible as the context.
            if thread.is_alive():
                raise TimeoutError(f"The operator {module} did not stop in {SHUTDOWN_TIMEOUT}s")
            if crash:
                raise RuntimeError(f"The operator {module} crashed") from crash[0]
