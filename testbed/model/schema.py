"""Small typed readers for YAML data that raise one-line ConfigErrors."""
import math
import re
from pathlib import Path

import yaml

from testbed.model.errors import ConfigError

INTERFACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,14}$")   # a Linux interface name: at most 15 characters


def env_int(name, default, minimum=0, env=None):
    """An integer setting from the environment (TESTBED_*), or a one-line ConfigError."""
    import os
    text = (os.environ if env is None else env).get(name)
    if text is None or text.strip() == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise ConfigError("environment", name, f"{text!r} is not a whole number") from None
    if value < minimum:
        raise ConfigError("environment", name, f"{value} is below the minimum {minimum}")
    return value


class UniqueKeyLoader(yaml.SafeLoader):
    """yaml's SafeLoader that refuses a mapping with the same key twice (yaml keeps the last
    one silently: a topology's two `hosts: {a: ..., a: ...}` would merge into one host)."""

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<:` merges are not duplicates
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: SafeLoader reports it below
                continue
            if first is not None:
                raise DuplicateKey(key, first.line + 1, key_node.start_mark.line + 1)
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


class DuplicateKey(yaml.YAMLError):
    def __init__(self, key, first_line, second_line):
        super().__init__(f"duplicate key {key!r} on lines {first_line} and {second_line}")
        self.key, self.first_line, self.second_line = key, first_line, second_line


def load_yaml(path):
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(path, "", "file not found") from None
    except OSError as exc:
        raise ConfigError(path, "", f"cannot read: {exc.strerror}") from None
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader
    except DuplicateKey as exc:
        raise ConfigError(path, f"line {exc.second_line}", f"duplicate key {exc.key!r} (first on line "
                                                          f"{exc.first_line}; YAML would keep only the last)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(path, where, f"invalid YAML: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(path, "", "top level must be a mapping")
    return data


def finite(value):
    """False for a float that is nan or infinite (YAML's .nan, .inf); True for any other value."""
    return not isinstance(value, float) or math.isfinite(value)


def join(field, key):
    return f"{field}.{key}" if field else str(key)


class Reader:
    """Reads fields of one mapping, reporting errors as file: field: problem."""

    def __init__(self, data, source, field=""):
        if not isinstance(data, dict):
            raise ConfigError(source, field or "(top)", "must be a mapping")
        self.data, self.source, self.field = data, source, field

    def error(self, key, problem):
        return ConfigError(self.source, join(self.field, key), problem)

    def only(self, allowed):
        for key in self.data:
            if key not in allowed:
                raise self.error(key, f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def sub(self, key, default=None):
        value = self.data.get(key, {} if default is None else default)
        return Reader(value, self.source, join(self.field, key))

    def str(self, key, default=None, choices=None):
        value = self.data.get(key, default)
        if value is None:
            raise self.error(key, "is required")
        if not isinstance(value, str):
            raise self.error(key, f"must be a string, got {value!r}")
        if choices and value not in choices:
            raise self.error(key, f"must be one of {', '.join(choices)}, got {value!r}")
        return value

    def int(self, key, default=None, minimum=None, maximum=None):
        value = self.data.get(key, default)
        if value is None:
            raise self.error(key, "is required")
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"must be an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.error(key, f"must be <= {maximum}, got {value}")
        return value

    def number(self, key, default=None, minimum=None, maximum=None):
        value = self.data.get(key, default)
        if value is None:
            raise self.error(key, "is required")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"must be a number, got {value!r}")
        if not finite(value):  # YAML's .nan passes every bound below, .inf any minimum
            raise self.error(key, f"must be a finite number, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.error(key, f"must be <= {maximum}, got {value}")
        return value

    def bool(self, key, default=None):
        """true/false (YAML's booleans only); `default` (may be None) when the key is absent."""
        value = self.data.get(key, default)
        if value is not None and not isinstance(value, bool):
            raise self.error(key, f"must be true or false, got {value!r}")
        return value

    def list(self, key, default=None):
        value = self.data.get(key, default)
        if value is None:
            raise self.error(key, "is required")
        if not isinstance(value, list):
            raise self.error(key, f"must be a list, got {value!r}")
        return value
