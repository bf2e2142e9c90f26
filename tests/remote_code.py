"""Scripts run in a fresh Python process that cannot import our packages (hf_vaswani, vaswani_inspect), as for
someone who loads a saved folder with ``trust_remote_code=True`` and does not have them: shared by
test_save_load.py and test_convert_marian.py."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

#: The lines run first: importing hf_vaswani or vaswani_inspect then fails. They also import json and sys.
REFUSE_OUR_PACKAGES = textwrap.dedent(
    """
    import importlib.abc, json, sys

    class RefuseOurPackage(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in ("hf_vaswani", "vaswani_inspect"):
                raise ImportError("this process must not import " + name)

    sys.meta_path.insert(0, RefuseOurPackage())
    """
)


def run_without_our_packages(script: str, *args: str, env: dict[str, str]) -> dict[str, Any]:
    """Run `script` after `REFUSE_OUR_PACKAGES` in a fresh Python process (arguments `args`, environment `env`,
    working directory ``/``); fails the test on a non-zero exit status, else returns its last line of output,
    read as JSON."""
    result = subprocess.run(
        [sys.executable, "-c", REFUSE_OUR_PACKAGES + textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
