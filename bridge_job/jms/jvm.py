"""The one JVM of the process, started with the JMS provider's client jars.

JPype can start a JVM once per process and the classpath is fixed at that moment. `start_jvm` is
therefore idempotent: the first call starts the JVM with the expanded classpath; later calls only check
that every jar they ask for is already on it and raise a `JmsError` naming the missing jars otherwise,
rather than letting a `ClassNotFoundException` surface later in an unrelated place. A process that needs
several providers must name all their jars in its first call.

At exit JPype destroys the JVM, which waits for the provider's non-daemon threads; connection.py
therefore closes every connection still open before that (see there).

Java strings are not converted to Python automatically (`convertStrings=False`): the adapter converts
each string it keeps exactly once, which is both faster and explicit.
"""

from __future__ import annotations

import glob
import os
import threading
from collections.abc import Sequence

import jpype

from bridge_job.jms.errors import JmsError, jms_error

_JVM_OPTIONS = ("-Djava.awt.headless=true",)
_lock = threading.Lock()
_running_classpath: frozenset[str] | None = None
_running_options: tuple[str, ...] = ()


def expand_classpath(classpath: Sequence[str]) -> list[str]:
    """Each entry expanded as a glob (sorted); an entry that matches no file is an error."""
    if not classpath:
        raise JmsError("the JMS classpath is empty: set jms.classpath to the provider's client jars")
    paths: list[str] = []
    for entry in classpath:
        matches = sorted(glob.glob(os.path.expanduser(entry)))
        if not matches:
            raise JmsError(f"JMS classpath entry {entry!r} matches no file")
        paths.extend(m for m in matches if m not in paths)
    return paths


def _canonical(paths: Sequence[str]) -> frozenset[str]:
    return frozenset(os.path.realpath(p) for p in paths if p)


def _classpath_of_running_jvm() -> frozenset[str]:
    global _running_classpath
    if _running_classpath is None:
        system = jpype.JClass("java.lang.System")
        _running_classpath = _canonical(str(system.getProperty("java.class.path")).split(os.pathsep))
    return _running_classpath


def jvm_started() -> bool:
    return bool(jpype.isJVMStarted())


def start_jvm(classpath: Sequence[str], options: Sequence[str] = ()) -> None:
    """Start the JVM with these jars (globs allowed) and options (`-Dname=value`: tls.py's), or check
    that the running one has them. Options may hold passwords: they are never put in a message."""
    global _running_options
    jars = expand_classpath(classpath)
    with _lock:
        if jpype.isJVMStarted():
            missing = [j for j in jars if os.path.realpath(j) not in _classpath_of_running_jvm()]
            if missing:
                raise JmsError(
                    f"the JVM is already running and its classpath lacks {', '.join(missing)}: JPype "
                    "starts one JVM per process, so name every provider's jars in the first start_jvm call"
                )
            if not set(options) <= set(_running_options):
                names = sorted({o.split("=", 1)[0] for o in set(options) - set(_running_options)})
                raise JmsError(
                    f"the JVM is already running without the options {', '.join(names)} (or with other "
                    "values): JPype starts one JVM per process, so give them in the first start_jvm call"
                )
            return
        try:
            jvm_path = jpype.getDefaultJVMPath()
        except jpype.JVMNotFoundException as error:
            raise JmsError(f"no Java runtime found (install Java 17 or set JAVA_HOME): {error}") from error
        try:
            jpype.startJVM(jvm_path, *_JVM_OPTIONS, *options, classpath=jars, convertStrings=False)
        except (OSError, RuntimeError) as error:
            raise jms_error(f"cannot start the JVM at {jvm_path}", error) from error
        _running_options = tuple(options)


def detach_thread() -> None:
    """Detach the calling Python thread from the JVM; call it last in every thread that used JMS.

    A Python thread that touched Java stays attached after it ends, and the JVM's shutdown at
    interpreter exit then waits for it forever.
    """
    if jvm_started() and jpype.java.lang.Thread.isAttached():
        jpype.java.lang.Thread.detach()
