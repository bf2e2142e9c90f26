"""Fixtures shared by the demo's server tests: a tiny model's backend and the demo serving it on 127.0.0.1."""

from __future__ import annotations

import os

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory):
    """A `DemoBackend` on a tiny random model, translated with PyTorch."""
    pytest.importorskip("gradio")
    from vaswani_demo import DemoBackend
    from vaswani_demo.testing import write_tiny_model

    loaded = DemoBackend.load(write_tiny_model(tmp_path_factory.mktemp("demo-model") / "tiny"), backend="torch")
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
