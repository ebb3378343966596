"""Name registries: configs select RL functions by name, as verl's core_algos does.

    ADVANTAGES = Registry("advantage estimator")

    @ADVANTAGES.register("grpo")
    def grpo_advantages(...): ...

    ADVANTAGES.get("grpo")      # the function
    ADVANTAGES.get("gpro")      # KeyError naming the registry, the bad name and the choices
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

F = TypeVar("F", bound=Callable)


class Registry(Generic[F]):
    """A name -> function mapping with aliases and a readable error for unknown names."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, F] = {}

    def register(self, name: str, *aliases: str) -> Callable[[F], F]:
        def add(fn: F) -> F:
            for key in (name, *aliases):
                if key in self._items:
                    raise ValueError(f"{self.kind} {key!r} is already registered")
                self._items[key] = fn
            return fn

        return add

    def get(self, name: str) -> F:
        try:
            return self._items[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; choose one of: {', '.join(sorted(self._items))}") from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))
