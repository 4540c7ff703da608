"""Why pytest chose a rootdir without the ini target: it reads plugin options only after it has chosen its rootdir,
so the value of ``--dws-agent /abs/path/agent`` (a space, not ``=``) is a test path to it, and ``/abs/path``
becomes the rootdir (docs/running.md). The suite's usage error names the option and the spelling that avoids it.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest


def split_value_taken_for_rootdir(config: pytest.Config) -> tuple[str, str, Path] | None:
    """The ``--dws-X VALUE`` pair (a space, not ``=``) whose VALUE, an existing path, pytest took for a test path
    when it chose the rootdir: the rootdir holds the path and does not hold the directory pytest was run from."""
    args = [str(a) for a in config.invocation_params.args]
    here = Path(config.invocation_params.dir).resolve()
    root = Path(config.rootpath).resolve()
    if here.is_relative_to(root):
        return None
    for option, value in itertools.pairwise(args):
        if not option.startswith("--dws-") or "=" in option or value.startswith("-"):
            continue
        path = (here / value).resolve()
        if path.exists() and path.is_relative_to(root):
            return option, value, root
    return None
