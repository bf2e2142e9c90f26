"""Fixtures shared by the demo's tests: the model a test module serves, its `DemoBackend` and the demo serving it
on 127.0.0.1.

A module chooses its model with a module-level ``DEMO_MODEL``:
- ``"tiny"`` (the default): a tiny random model (`vaswani_demo.testing.write_tiny_model`), translated with PyTorch;
  for what does not depend on the translations.
- ``"test"``: `vaswani_demo.testing.demo_model_for_tests` (``$VASWANI_DEMO_TEST_MODEL``, else the shipped checkpoint
  when it exists, else a tiny random one), on the demo's default backend.
- ``"shipped"``: the shipped checkpoint on the demo's default backend; the module's tests skip without it.
"""

from __future__ import annotations

import os

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"


@pytest.fixture(scope="module")
def model_path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The folder (or Hub id) of the module's ``DEMO_MODEL``."""
    from vaswani_demo.testing import demo_model_for_tests, shipped_checkpoint, write_tiny_model

    kind = getattr(request.module, "DEMO_MODEL", "tiny")
    if kind == "tiny":
        return str(write_tiny_model(tmp_path_factory.mktemp("demo-model") / "tiny"))
    if kind == "test":
        return demo_model_for_tests(tmp_path_factory.mktemp("demo-model"))
    if kind != "shipped":
        raise ValueError(f"DEMO_MODEL must be 'tiny', 'test' or 'shipped', got {kind!r}")
    path = shipped_checkpoint()
    if path is None:
        pytest.skip("the shipped checkpoint is not in this checkout")
    return path


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest, model_path: str):
    """A `DemoBackend` on `model_path`: PyTorch for the tiny model, else the demo's default backend."""
    pytest.importorskip("gradio")
    from vaswani_demo import DemoBackend

    tiny = getattr(request.module, "DEMO_MODEL", "tiny") == "tiny"
    loaded = DemoBackend.load(model_path, backend="torch" if tiny else "auto")
    yield loaded
    loaded.close()


@pytest.fixture(scope="module")
def served(backend):
    """(app, port) of a demo launched on 127.0.0.1 over `backend`."""
    from tests.vaswani_demo.test_app import _free_port
    from vaswani_demo import build_app, launch_app

    app = build_app(backend=backend)
    port = _free_port()
    launch_app(app, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield app, port
    finally:
        app.close()
