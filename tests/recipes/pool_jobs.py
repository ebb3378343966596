"""Jobs for the worker-pool tests, in a module that imports nothing heavy (spawned workers import it)."""


def square(x: int, queue) -> int:
    queue.put((f"job{x}", x, 3))
    return x * x
