"""The positions view (`vaswani_demo.positions_view`): the model's own positional encoding, and the last sentence
shuffled, drawn from the toolkit's numbers, in the page's language; before any translation, the encoding alone and
what to do for the rest."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gradio")

from vaswani_demo.positions_view import positions_outputs  # noqa: E402
from vaswani_demo.testing import TINY_SENTENCES  # noqa: E402
from vaswani_demo.texts import message  # noqa: E402
from vaswani_inspect.positions import order_blindness, positional_encoding  # noqa: E402


@pytest.mark.slow
def test_the_view_draws_the_models_encoding_and_the_shuffled_sentence(backend):
    summary, table, order = positions_outputs(backend, None, language="es")
    assert order is None and summary.endswith(message("es", "positions.none"))
    served = backend.runner.models[0]
    encoding = positional_encoding(served.model)
    assert f"{encoding.kind}" in {"sinusoidal", "learned"} and "codificación posicional" in summary
    np.testing.assert_allclose(table.axes[0].images[0].get_array(), encoding.table, atol=1e-6)

    direction = backend.choices.directions[0]
    record = backend.runner.translate(TINY_SENTENCES[0], direction).record
    summary, _, order = positions_outputs(backend, record, language="en")
    expected = order_blindness(served.model, served.tokenizer, record.source_text, direction=direction)
    assert f"“{expected.shuffled_source}”" in summary
    with_positions, without_positions = (line.get_ydata() for line in order.axes[0].lines)
    np.testing.assert_allclose(with_positions, expected.with_positions, atol=1e-9)
    np.testing.assert_allclose(without_positions, expected.without_positions, atol=1e-9)


@pytest.mark.slow
def test_t5_shows_its_relative_bias(tiny_architecture_folders):
    from vaswani_demo import DemoBackend

    other = DemoBackend.load(str(tiny_architecture_folders["t5"]), backend="torch")
    try:
        summary, table, order = positions_outputs(other, None, language="es")
        assert summary.startswith(message("es", "positions.summary.relative")) and table is not None
    finally:
        other.close()
