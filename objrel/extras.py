"""The optional extras of ``pip install 'objrel[...]'``: which package comes from which extra, and the
refusal that names the extra to install when a command needs a package that is missing.

The core (``pip install objrel``) never imports these packages at module level; a function that needs one
imports it where it is used, through ``require`` where a user meets the missing package.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from objrel.errors import MissingExtra

# Top-level import name -> the [project.optional-dependencies] extra of pyproject.toml that installs it.
EXTRA_OF_IMPORT = {
    "streamlit": "app", "starlette": "app", "plotly": "app", "lime": "app", "skimage": "app",
    "onnx": "runtimes", "onnxruntime": "runtimes", "openvino": "runtimes",
    "ray": "ray",
    "psycopg": "postgres",
}


def require(module: str, what: str) -> ModuleType:
    """``module`` imported; MissingExtra, naming the extra that installs it, when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        extra = EXTRA_OF_IMPORT.get(top)
        if extra is None:
            raise
        raise MissingExtra(f"{what} needs {top}, which this objrel was installed without; "
                           f"install it with: pip install 'objrel[{extra}]'") from exc
