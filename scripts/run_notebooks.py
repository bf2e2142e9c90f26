"""Execute the course notebooks (notebooks/*.ipynb) and save them with their outputs.

    python scripts/run_notebooks.py                          # every notebook, outputs saved in place
    python scripts/run_notebooks.py notebooks/03_*.ipynb     # some of them
    python scripts/run_notebooks.py --out /tmp/executed      # leave the notebooks alone, write executed copies

Each notebook runs top to bottom in a fresh kernel of this Python (`sys.executable`, which needs ipykernel), with
the notebook's folder as working directory and `HF_HUB_OFFLINE=1`, as a student would run it; the first cell that
raises stops it, and the command exits with status 1 after trying the others. Prints each notebook's run time and
size. Needs nbclient, nbformat and ipykernel (the [notebooks] or [test] extra).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
#: The kernel name the notebooks declare in their metadata; here it always means this Python.
KERNEL_NAME = "python3"


def use_this_python(kernels: Path) -> None:
    """Make kernel `KERNEL_NAME` run `sys.executable`: a kernel spec in `kernels`, put first on JUPYTER_PATH (so a
    user-wide "python3" kernel of another Python cannot be picked)."""
    spec = kernels / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"}))
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(kernels), os.environ.get("JUPYTER_PATH")]))


def execute(path: Path, out: Path, timeout: int) -> float:
    """Run the notebook at `path` and write it, outputs included, to `out`; return the seconds it took.

    Raises:
        nbclient.exceptions.CellExecutionError: a cell raised (the message holds its traceback).
    """
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name=KERNEL_NAME,
        record_timing=False,  # no timestamps in the saved file: re-running changes only what the cells print
        coalesce_streams=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, out)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to run (default: notebooks/*.ipynb)")
    parser.add_argument("--out", type=Path, help="write the executed notebooks to this folder instead of in place")
    parser.add_argument("--timeout", type=int, default=300, help="seconds one cell may run (default: 300)")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or sorted(NOTEBOOKS.glob("*.ipynb"))
    if not paths:
        parser.error(f"no notebooks in {NOTEBOOKS}")
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    failed = []
    with tempfile.TemporaryDirectory() as kernels:
        use_this_python(Path(kernels))
        from nbclient.exceptions import CellExecutionError

        for path in paths:
            out = args.out / path.name if args.out else path
            try:
                seconds = execute(path, out, args.timeout)
            except CellExecutionError as error:
                print(f"FAILED {path.name}:\n{error}", file=sys.stderr)
                failed.append(path.name)
                continue
            print(f"{path.name}: {seconds:.0f} s, {out.stat().st_size / 1024:.0f} KB", flush=True)
    if failed:
        print(f"{len(failed)} notebook(s) failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
