"""The patching heatmaps (`vaswani_inspect.patching_plots`): the drawn cells are the effects, the labels the pieces
as words, and different results draw different pictures."""

from __future__ import annotations

import numpy as np
import pytest

from vaswani_inspect import patch_activations, plot_patching
from vaswani_inspect.patching_plots import save_patching_figures

SITES = ("encoder", "cross_heads")


@pytest.fixture(scope="module")
def results(model, tokenizer):
    return [
        patch_activations(
            model,
            tokenizer,
            "el gato negro",
            "el perro negro",
            direction="es-en",
            target="the black cat",
            sites=SITES,
            method=method,
        )
        for method in ("attribution", "exhaustive")
    ]


def test_the_cells_are_the_effects_and_the_labels_words(results):
    result = results[0]
    for site in SITES:
        ax = plot_patching(result, site).axes[0]
        np.testing.assert_array_equal(ax.images[0].get_array(), result.effects[site])
        assert [t.get_text() for t in ax.get_yticklabels()] == [f"L{i}" for i in range(result.effects[site].shape[0])]
    columns = [t.get_text() for t in plot_patching(result, "encoder").axes[0].get_xticklabels()]
    assert columns == [">>en<<", "el", "gato→perro", "negro", "</s>"]
    spanish = plot_patching(result, "cross_heads", language="es").axes[0]
    assert spanish.get_title().startswith("Parcheo") and spanish.get_xticklabels()[0].get_text() == "H0"
    with pytest.raises(ValueError, match="no 'decoder' effects"):
        plot_patching(result, "decoder")
    with pytest.raises(ValueError, match="language"):
        plot_patching(result, "encoder", language="fr")


@pytest.mark.slow
def test_two_results_draw_two_pictures(results, tmp_path):
    pictures = []
    for i, (result, formats) in enumerate(zip(results, [("png", "svg"), ("png",)])):
        paths = save_patching_figures(result, tmp_path / str(i), formats=formats)
        assert sorted(p.name for p in paths) == sorted(f"patching-{s}.{f}" for s in SITES for f in formats)
        pictures.append((tmp_path / str(i) / "patching-encoder.png").read_bytes())
    assert pictures[0].startswith(b"\x89PNG") and pictures[0] != pictures[1]
