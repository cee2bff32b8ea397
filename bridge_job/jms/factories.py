"""A provider's JMS ConnectionFactory (javax.jms or jakarta.jms: api.py), built from configuration without
provider-specific code.

Two ways, as `JmsSpec` allows:

- `connectionFactory`: a class name and bean properties. The class is instantiated with its public no-arg
  constructor and each property is set through its JavaBean setter (`brokerURL` -> `setBrokerURL`). The
  value (an integer or text) is coerced to the setter's parameter type: `"5000"` becomes
  an `int` for `setSendTimeout(int)`, `"true"` a `boolean`, a name an enum constant. A property without a
  setter, or a value that does not fit, is a `JmsError` naming the class, the property and the expected
  type; values of secret-looking properties (password, ...) never appear in messages.
- `jndi`: an `InitialContext` from the initial context factory, provider URL and extra environment, and
  a lookup of the connection factory's name.

`describe_location` gives the "where" of error messages: the factory's URL property, the JNDI provider
URL, or the class name.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from typing import Any

import jpype

from bridge_job.config import ConnectionFactorySpec, JmsSpec, JndiSpec
from bridge_job.jms.api import api_of
from bridge_job.jms.errors import JavaException, JmsError, jms_error, reason

BeanScalar = int | str  # a bean property's value as the spec gives it (config/schema.py `BeanValue`)

_SECRET_WORDS = ("password", "secret", "credential", "token", "passphrase")


def is_secret(property_name: str) -> bool:
    lowered = property_name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


_WHERE_ENDINGS = ("host", "hostname", "port", "connectionnamelist", "queuemanager", "channel")


def describe_location(spec: JmsSpec) -> str:
    """Where the connection goes, for messages: a URL when the configuration has one."""
    if spec.jndi is not None:
        return spec.jndi.provider_url
    factory = spec.connection_factory
    assert factory is not None  # JmsSpec validates that exactly one is set
    for name, value in factory.properties.items():
        if "url" in name.lower() and not is_secret(name):
            return str(value)
    # No URL (IBM MQ: hostName, port, queueManager, channel): the class and the properties that say where.
    where = [
        f"{name}={value}"
        for name, value in factory.properties.items()
        if name.lower().endswith(_WHERE_ENDINGS) and not is_secret(name)
    ]
    return f"{factory.class_name} ({', '.join(where)})" if where else factory.class_name


def connection_factory(spec: JmsSpec) -> Any:
    """The ConnectionFactory the spec describes (the JVM must be running)."""
    if spec.jndi is not None:
        return _look_up(spec.jndi)
    assert spec.connection_factory is not None
    return _construct(spec.connection_factory)


# ---------------------------------------------------------------------------------------------------
# Class name and bean properties


def _construct(spec: ConnectionFactorySpec) -> Any:
    try:
        factory_class = jpype.JClass(spec.class_name)
    except (TypeError, JavaException) as error:
        raise JmsError(
            f"connection factory class {spec.class_name} is not on the JMS classpath ({reason(error)})"
        ) from error
    api_of(factory_class)  # a JmsError naming the class when it is no ConnectionFactory of either API
    try:
        factory = factory_class()
    except (TypeError, JavaException) as error:
        raise jms_error(
            f"cannot instantiate {spec.class_name} with its no-argument constructor", error
        ) from error
    setters = _setters(factory.getClass())
    for name, value in spec.properties.items():
        _set_bean_property(factory, setters, spec.class_name, name, value)
    return factory


def _setters(java_class: Any) -> dict[str, list[Any]]:
    """Public one-argument `setX` methods by bean property name (`brokerURL`, `sendTimeout`)."""
    modifier = jpype.JClass("java.lang.reflect.Modifier")
    found: dict[str, list[Any]] = {}
    for method in java_class.getMethods():
        method_name = str(method.getName())
        if (
            len(method_name) > 3
            and method_name.startswith("set")
            and method.getParameterCount() == 1
            and not modifier.isStatic(method.getModifiers())
        ):
            found.setdefault(method_name[3].lower() + method_name[4:], []).append(method)
    return found


def _set_bean_property(
    factory: Any, setters: dict[str, list[Any]], class_name: str, name: str, value: BeanScalar
) -> None:
    methods = setters.get(name[:1].lower() + name[1:])
    if methods is None:
        by_lower = {key.lower(): key for key in setters}
        exact = by_lower.get(name.lower())
        methods = setters[exact] if exact is not None else None
    if methods is None:
        close = difflib.get_close_matches(name, list(setters), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise JmsError(f"connection factory {class_name} has no bean property {name!r}{hint}")
    shown = "***" if is_secret(name) else repr(value)
    problems = []
    for method in _by_preference(methods, value):
        parameter_type = method.getParameterTypes()[0]
        try:
            argument = coerce(value, parameter_type)
        except ValueError as error:
            problems.append(str(error))
            continue
        try:
            method.invoke(factory, argument)
        except JavaException as error:
            if is_secret(name):  # the provider's message might quote the value
                raise JmsError(f"cannot set {class_name}.{name} = ***: the setter failed") from None
            raise jms_error(f"cannot set {class_name}.{name} = {shown}", error) from error
        return
    raise JmsError(f"cannot set {class_name}.{name} = {shown}: {'; '.join(problems)}")


def _by_preference(methods: list[Any], value: BeanScalar) -> list[Any]:
    """Overloaded setters: try the one taking the value's own kind first, String last."""

    def rank(method: Any) -> int:
        type_name = str(method.getParameterTypes()[0].getName())
        if type_name == "java.lang.String":
            return 1 if isinstance(value, str) else 2
        return 0 if not isinstance(value, str) else 1

    return sorted(methods, key=rank)


def _boolean(value: BeanScalar) -> bool:
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"expected a boolean (true or false), got {value!r}")


def _integer(bits: int) -> Callable[[BeanScalar], int]:
    def convert(value: BeanScalar) -> int:
        number: int | None
        if isinstance(value, int):
            number = value
        else:
            try:
                number = int(value.strip())
            except ValueError:
                number = None
        if number is None or not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
            raise ValueError(f"expected a {bits}-bit integer, got {value!r}")
        return number

    return convert


def _floating(value: BeanScalar) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"expected a number, got {value!r}") from None
    if math.isnan(number) and not (isinstance(value, str) and value.strip().lower() == "nan"):
        raise ValueError(f"expected a number, got {value!r}")
    return number


# Java parameter type -> (boxed class for reflection, coercion of the YAML value).
_COERCIONS: dict[str, tuple[str, Callable[[BeanScalar], Any]]] = {
    "java.lang.String": ("java.lang.String", str),
    "java.lang.Object": ("java.lang.String", str),
    "boolean": ("java.lang.Boolean", _boolean),
    "java.lang.Boolean": ("java.lang.Boolean", _boolean),
    "byte": ("java.lang.Byte", _integer(8)),
    "java.lang.Byte": ("java.lang.Byte", _integer(8)),
    "short": ("java.lang.Short", _integer(16)),
    "java.lang.Short": ("java.lang.Short", _integer(16)),
    "int": ("java.lang.Integer", _integer(32)),
    "java.lang.Integer": ("java.lang.Integer", _integer(32)),
    "long": ("java.lang.Long", _integer(64)),
    "java.lang.Long": ("java.lang.Long", _integer(64)),
    "float": ("java.lang.Float", _floating),
    "java.lang.Float": ("java.lang.Float", _floating),
    "double": ("java.lang.Double", _floating),
    "java.lang.Double": ("java.lang.Double", _floating),
}


def coerce(value: BeanScalar, parameter_type: Any) -> Any:
    """The YAML value as a Java object of the setter's parameter type; ValueError if it does not fit."""
    type_name = str(parameter_type.getName())
    if parameter_type.isEnum():
        constants = [str(c.name()) for c in parameter_type.getEnumConstants()]
        text = str(value)
        matches = [c for c in constants if c == text] or [c for c in constants if c.lower() == text.lower()]
        if not matches:
            raise ValueError(f"expected one of {', '.join(constants)}, got {value!r}")
        enum_class = jpype.JClass(parameter_type)
        return getattr(enum_class, matches[0])
    coercion = _COERCIONS.get(type_name)
    if coercion is None:
        raise ValueError(f"the setter takes a {type_name}, which cannot be given in configuration")
    boxed, convert = coercion
    return jpype.JObject(convert(value), jpype.JClass(boxed))


# ---------------------------------------------------------------------------------------------------
# JNDI


def _look_up(spec: JndiSpec) -> Any:
    context_class = jpype.JClass("javax.naming.Context")
    environment = jpype.JClass("java.util.Hashtable")()
    environment.put(context_class.INITIAL_CONTEXT_FACTORY, spec.initial_context_factory)
    environment.put(context_class.PROVIDER_URL, spec.provider_url)
    for key, value in spec.environment.items():
        environment.put(key, value)
    where = f"JNDI {spec.provider_url} ({spec.initial_context_factory})"
    try:
        context = jpype.JClass("javax.naming.InitialContext")(environment)
    except JavaException as error:
        raise jms_error(f"cannot create the initial context for {where}", error) from error
    try:
        found = context.lookup(spec.connection_factory_name)
    except JavaException as error:
        raise jms_error(f"cannot look up {spec.connection_factory_name!r} in {where}", error) from error
    finally:
        context.close()
    if found is None:
        raise JmsError(f"{spec.connection_factory_name!r} in {where} is null, not a ConnectionFactory")
    try:
        api_of(jpype.JClass(found.getClass()))
    except JmsError as error:
        raise JmsError(f"{spec.connection_factory_name!r} in {where}: {error}") from None
    return found
