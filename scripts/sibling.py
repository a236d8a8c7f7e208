"""Loads another script of scripts/ as a module: their file names
(bench-lean.py) are not module names, so `import` cannot."""

import importlib.util
import os

HERE = os.path.dirname(os.path.realpath(__file__))


def load(script):
    """scripts/`script` (as "bench-lean.py"), run as the module bench_lean."""
    name = script.removesuffix(".py").replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, script))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
