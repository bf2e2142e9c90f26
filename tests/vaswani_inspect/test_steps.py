"""The decoding trace (`vaswani_inspect.steps`): the same tokens and scores as `generate()` for greedy and beam
search on the shipped checkpoint and on every tiny architecture, the tree and attention rows it records, its JSON
round trip, its figures, and ``hf-vaswani inspect --steps`` (whose defaults are the demo's)."""

import json
import math
import warnings

import numpy as np
import pytest
import torch

from vaswani_inspect.directions import resolve_direction, source_for, source_language_settings
from vaswani_inspect.steps import DecodingTrace, generation_defaults, trace_decoding

ES_EN, EN_ES = ("El gato se comió el ratón.", "es-en"), ("The cat ate the mouse.", "en-es")
#: (num_beams, length_penalty, sentences): greedy and the model's own settings (beam 4, 0.6) both ways, then other
#: beam sizes and length penalties one way each.
SEARCHES = [(1, None, [ES_EN, EN_ES]), (None, None, [ES_EN, EN_ES]), (4, 1.0, [EN_ES]), (3, 2.0, [ES_EN])]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread: on a shared CPU, tiny matrix products are many times faster without thread hand-offs."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny_models(tiny_architecture_folders):
    from vaswani_inspect.loading import load_for_inspection

    return {name: load_for_inspection(folder) for name, folder in tiny_architecture_folders.items()}


def _generate(model, tokenizer, text, direction, settings):
    how = resolve_direction(model, tokenizer, direction)
    with source_language_settings(tokenizer, how):
        input_ids = tokenizer(source_for(how, text), return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        return model.generate(input_ids=input_ids, output_scores=True, return_dict_in_generate=True, **settings)


def _assert_same_as_generate(model, tokenizer, text, direction, trace):
    """The trace's output and scores are generate()'s with the settings the trace reports."""
    output = _generate(model, tokenizer, text, direction, trace.settings["generate"])
    sequence = output.sequences[0].tolist()
    length = len(trace.target_ids)
    pad = model.generation_config.pad_token_id
    assert sequence[:length] == trace.target_ids and all(token == pad for token in sequence[length:])
    if trace.num_beams > 1:
        assert trace.sequence_score == pytest.approx(float(output.sequences_scores[0]), abs=1e-5)
    else:
        expected = model.compute_transition_scores(output.sequences, output.scores, normalize_logits=True)[0]
        found = [node.log_probability for node in trace.path()[1:]]
        np.testing.assert_allclose(found, expected.tolist()[: len(found)], atol=1e-5)


@pytest.mark.parametrize(("num_beams", "length_penalty", "sentences"), SEARCHES)
def test_the_trace_decodes_as_generate_on_the_shipped_model(shipped, num_beams, length_penalty, sentences):
    model, tokenizer = shipped
    for text, direction in sentences:
        trace = trace_decoding(
            model, tokenizer, text, direction, num_beams=num_beams, length_penalty=length_penalty, top_k=3
        )
        assert trace.settings["no_repeat_ngram_size"] == 3  # the model's generation_config
        assert trace.num_beams == (num_beams or 4)
        assert trace.settings["length_penalty"] == (0.6 if length_penalty is None else length_penalty)
        _assert_same_as_generate(model, tokenizer, text, direction, trace)


def test_the_trace_decodes_as_generate_on_every_architecture(tiny_models):
    """Random tiny models repeat themselves: no_repeat_ngram_size, forced BOS/EOS and bad words all act here."""
    for name, (model, tokenizer) in tiny_models.items():
        direction, text = ("en-es", "The black cat.") if name == "t5" else ("es-en", "El gato negro.")
        for settings in ({"num_beams": 1}, {"num_beams": 4, "length_penalty": 0.6, "no_repeat_ngram_size": 2}):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                trace = trace_decoding(model, tokenizer, text, direction, max_new_tokens=6, top_k=2, **settings)
            _assert_same_as_generate(model, tokenizer, text, direction, trace)


@pytest.fixture(scope="module")
def beam_trace(shipped):
    model, tokenizer = shipped
    return trace_decoding(model, tokenizer, "el gato negro", "es-en", num_beams=4, top_k=4)


def test_the_tree_holds_every_hypothesis_and_the_winner(beam_trace):
    trace = beam_trace
    assert trace.text == "the black cat"
    assert [node.piece for node in trace.path()] == trace.target_pieces
    statuses = {node.status for node in trace.beams}
    assert {"kept", "pruned", "finished"} <= statuses
    assert trace.beams[trace.winner].status == "finished" and trace.beams[trace.winner].ended
    assert trace.finished[0] == trace.winner and len(trace.finished) <= 4
    for node in trace.beams[1:]:
        parent = trace.beams[node.parent]
        assert node.step == parent.step + 1
        assert node.cumulative_log_probability == pytest.approx(
            parent.cumulative_log_probability + node.log_probability
        )
        length = node.step + 1
        assert node.score == pytest.approx(node.cumulative_log_probability / length**0.6, rel=1e-5)
    for step in trace.steps:
        assert 1 <= len(step.hypotheses) <= 4 and all(trace.beams[h].status != "pruned" for h in step.hypotheses)
        assert all(len(per) == 4 for per in step.candidates)
        for per in step.candidates:
            probabilities = [candidate.probability for candidate in per]
            assert probabilities == sorted(probabilities, reverse=True) and 0 < probabilities[0] <= 1


def test_each_step_records_the_attention_rows_of_the_new_position(shipped, beam_trace):
    from vaswani_inspect import extract

    model, tokenizer = shipped
    trace = beam_trace
    record = extract(model, tokenizer, "el gato negro", trace.text, direction="es-en")
    assert record.target_ids == trace.target_ids
    for step in trace.steps:
        if step.chosen is None:
            continue
        cross = np.array(step.cross_attention["layers"][step.chosen_hypothesis])
        own = np.array(step.self_attention["layers"][step.chosen_hypothesis])
        assert cross.shape == (3, 4, len(trace.source_pieces))
        assert own.shape == (3, 4, step.index + 1)  # the future is masked: the row covers the prefix only
        np.testing.assert_allclose(cross, record.cross[:, :, step.index, :], atol=1e-5)
        np.testing.assert_allclose(own, record.decoder[:, :, step.index, : step.index + 1], atol=1e-5)
        assert sum(step.cross_attention["aligner"]) == pytest.approx(1.0, abs=1e-4)
        assert step.chosen.token_id == trace.target_ids[step.index + 1]


def test_the_aligner_row_points_at_the_source_word_of_each_output_word(beam_trace):
    trace = beam_trace
    looked_at = {}
    for step in trace.steps:
        if step.chosen is not None and step.chosen.piece.strip("▁") in ("the", "black", "cat"):
            words = step.cross_attention["aligner_words"]
            looked_at[step.chosen.piece.strip("▁")] = trace.source_words[int(np.argmax(words))]
    assert looked_at == {"the": "el", "black": "negro", "cat": "gato"}


def test_the_trace_survives_json(beam_trace):
    data = json.loads(json.dumps(beam_trace.to_dict()))
    again = DecodingTrace.from_dict(data)
    assert again == beam_trace
    with pytest.raises(ValueError, match="Not a decoding trace"):
        DecodingTrace.from_dict({"steps": []})


def test_greedy_is_one_path(shipped):
    model, tokenizer = shipped
    trace = trace_decoding(model, tokenizer, "el gato negro", "es-en", num_beams=1)
    assert len(trace.beams) == len(trace.steps) + 1 and trace.path() == trace.beams
    assert all(step.chosen is not None and len(step.hypotheses) == 1 for step in trace.steps)
    assert math.isclose(trace.sequence_score, trace.beams[-1].cumulative_log_probability / len(trace.steps))


def test_bad_settings_are_refused(shipped):
    model, tokenizer = shipped
    with pytest.raises(ValueError, match="top_k"):
        trace_decoding(model, tokenizer, "el gato", "es-en", top_k=0)
    with pytest.raises(ValueError, match="greedy and beam search only"):
        trace_decoding(model, tokenizer, "el gato", "es-en", do_sample=True)
    with pytest.raises(ValueError, match="one sentence"):
        trace_decoding(model, tokenizer, ["el gato"], "es-en")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"num_beams": 4, "num_beam_groups": 2, "diversity_penalty": 0.5}, "group beam search"),
        ({"nm_beams": 3}, "'nm_beams' \\(did you mean 'num_beams'\\?\\)"),
        ({"eos_token_id": []}, "eos_token_id is an empty list"),
        ({"forced_bos_token_id": 8005}, "forced_bos_token_id=8005 is not a token id"),
        ({"length_penalty": float("nan")}, "length_penalty must be a finite number"),
        ({"logits_processor": []}, "not 'logits_processor'"),
    ],
)
def test_the_trace_refuses_what_generate_refuses(shipped, settings, message):
    """Each of these is a traceback or a refusal in generate(), or a search it cannot follow: one clear line."""
    model, tokenizer = shipped
    with pytest.raises(ValueError, match=message):
        trace_decoding(model, tokenizer, "el gato", "es-en", **settings)


def test_generate_refuses_them_too(shipped):
    """The refusals above are generate()'s own (here, the settings the trace ran plain beam search for)."""
    model, tokenizer = shipped
    for settings in ({"num_beams": 4, "num_beam_groups": 2}, {"nm_beams": 3}, {"forced_bos_token_id": 8005}):
        with pytest.raises((ValueError, IndexError)):
            _generate(model, tokenizer, "el gato", "es-en", settings)


def test_a_search_where_nothing_finishes_ends_as_generate_ends(shipped, tiny_models):
    """No hypothesis finishes: generate() returns its first slot (the decoder start alone when every token is
    suppressed; a live candidate with a length penalty of -5), and so does the trace, settings and all."""
    from vaswani_inspect.step_plots import plot_beam_tree

    model, tokenizer = shipped
    suppressed = trace_decoding(
        model, tokenizer, "el gato", "es-en", num_beams=4, suppress_tokens=list(range(model.config.vocab_size))
    )
    assert suppressed.target_ids == [model.generation_config.decoder_start_token_id] and suppressed.finished == []
    assert suppressed.text == "" and suppressed.winner == 0
    _assert_same_as_generate(model, tokenizer, "el gato", "es-en", suppressed)
    plot_beam_tree(suppressed)  # the figures draw a trace without a finished hypothesis
    for name, (model, tokenizer) in tiny_models.items():
        direction, text = ("en-es", "The black cat.") if name == "t5" else ("es-en", "El gato negro.")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trace = trace_decoding(model, tokenizer, text, direction, num_beams=3, length_penalty=-5.0, top_k=2)
        _assert_same_as_generate(model, tokenizer, text, direction, trace)


@pytest.mark.parametrize(
    "settings",
    [
        {"num_beams": 3, "repetition_penalty": 1.3, "min_new_tokens": 6},
        {"num_beams": 2, "early_stopping": "never", "length_penalty": -1.0, "max_new_tokens": 8},
        {"num_beams": 1, "suppress_tokens": [41, 14], "forced_eos_token_id": 2, "max_new_tokens": 5},
    ],
)
def test_the_recorded_settings_reproduce_the_trace(shipped, settings):
    model, tokenizer = shipped
    trace = trace_decoding(model, tokenizer, "El gato se comió el ratón.", "es-en", top_k=2, **settings)
    assert all(trace.settings["generate"][name] == value for name, value in settings.items())
    _assert_same_as_generate(model, tokenizer, "El gato se comió el ratón.", "es-en", trace)


@pytest.mark.parametrize("folder", ["", ".", "/"])
def test_write_steps_refuses_the_working_folders(beam_trace, folder, tmp_path, monkeypatch):
    from vaswani_inspect.step_plots import write_steps

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="trace folder .* is (the current folder|a folder above)"):
        write_steps(beam_trace, folder)
    assert list(tmp_path.iterdir()) == []


def test_generation_defaults_are_the_demos(shipped):
    from vaswani_demo.choices import DemoChoices

    model, tokenizer = shipped
    choices = DemoChoices.from_model(model, tokenizer)
    assert generation_defaults(model) == {
        "num_beams": choices.default_beams,
        "max_new_tokens": choices.default_max_new_tokens,
    }


def test_the_figures_change_with_the_input_and_speak_the_language(shipped, beam_trace):
    from vaswani_inspect.step_plots import plot_beam_tree, plot_step

    model, tokenizer = shipped
    other = trace_decoding(model, tokenizer, "Tengo un gato negro.", "es-en", num_beams=2, top_k=3)

    def words(figure):
        shown = {text.get_text() for ax in figure.axes for text in (*ax.texts, *ax.get_xticklabels())}
        return shown | {ax.get_title(loc="left") for ax in figure.axes}

    tree, other_tree = words(plot_beam_tree(beam_trace)), words(plot_beam_tree(other, language="es"))
    assert {"cat", "black", "Beam search: 4 hypotheses kept per step"} <= tree
    assert {"have", "Búsqueda en haz: 2 hipótesis por paso"} <= other_tree and "have" not in tree
    step = words(plot_step(beam_trace, 2))
    assert "Step 3: candidates for the next word" in step and {"cat", "gato", "negro"} <= step
    assert any("← chosen" in text for text in step)
    assert "Paso 1: candidatos para la palabra siguiente" in words(plot_step(other, 0, language="es"))
    with pytest.raises(ValueError, match="language"):
        plot_step(beam_trace, 0, language="fr")
    with pytest.raises(ValueError, match="step index"):
        plot_step(beam_trace, len(beam_trace.steps))


def test_each_panel_of_a_step_is_a_small_figure_of_its_own(beam_trace):
    from vaswani_inspect.step_plots import plot_candidates, plot_prefix, plot_source_attention

    candidates = plot_candidates(beam_trace, 1, language="es")
    assert candidates.axes[0].get_title(loc="left") == "Paso 2: candidatos para la palabra siguiente"
    assert [label.get_text() for label in candidates.axes[0].get_yticklabels()][-1] == "black"
    source = plot_source_attention(beam_trace, 1)
    assert [label.get_text() for label in source.axes[0].get_xticklabels()] == ["el", "gato", "negro"]
    heights = [bar.get_height() for bar in source.axes[0].patches]
    assert heights.index(max(heights)) == 2  # "black" is read off "negro"
    prefix = plot_prefix(beam_trace, 1)
    assert [text.get_text() for text in prefix.axes[0].texts][:3] == ["<s>", "the", "black"]
    assert [box.get_hatch() for box in prefix.axes[0].patches][3:] == ["//"] * (len(beam_trace.target_pieces) - 3)
    for shown in (candidates, source, prefix):
        assert len(shown.axes) == 1 and not shown.get_layout_engine()  # fixed margins: fast to draw
        assert shown.get_figwidth() <= 7 and shown.get_figheight() <= 5
    with pytest.raises(ValueError, match="step index"):
        plot_prefix(beam_trace, -1)
    with pytest.raises(ValueError, match="hypothesis"):
        plot_candidates(beam_trace, 0, hypothesis=9)


def test_the_tree_can_shade_the_current_step(beam_trace):
    from vaswani_inspect.step_plots import plot_beam_tree

    def shaded(figure):
        return [patch for patch in figure.axes[0].patches if patch.get_facecolor()[:3] != (1.0, 1.0, 1.0)]

    assert not shaded(plot_beam_tree(beam_trace))
    (band,) = shaded(plot_beam_tree(beam_trace, current=1))
    assert band.get_x() == pytest.approx(1.5) and band.get_width() == pytest.approx(1.0)  # the column of step 2
    with pytest.raises(ValueError, match="step index"):
        plot_beam_tree(beam_trace, current=len(beam_trace.steps))


@pytest.fixture
def steps_only(monkeypatch):
    """inspect with its usual report reduced to the alignment file (the rest is tested elsewhere, and slow)."""
    from vaswani_inspect.commands import inspect

    def alignment_only(args, record, folder):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "alignment.txt").write_text("0-0\n", encoding="utf-8")
        return {"pharaoh": folder / "alignment.txt"}

    monkeypatch.setattr(inspect, "_write_inspect_report", alignment_only)


@pytest.mark.slow
def test_inspect_steps_writes_the_trace_and_its_figures(tmp_path, steps_only):
    from hf_vaswani.cli import main

    out = tmp_path / "report"
    argv = ["inspect", "gato", "--direction", "es-en", "--out", str(out), "--num-beams", "2", "--max-new-tokens", "2"]
    argv.append("--steps")  # (two steps: three figures, each drawn twice)
    assert main([*argv, "--steps-language", "es"]) == 0
    trace = DecodingTrace.from_dict(json.loads((out / "steps.json").read_text(encoding="utf-8")))
    assert trace.text == "a cat" and trace.num_beams == 2 and trace.settings["length_penalty"] == 0.6
    names = {path.name for path in (out / "steps").iterdir()}
    expected = {f"step_{i:02d}.{ext}" for i in range(1, len(trace.steps) + 1) for ext in ("svg", "png")}
    assert names == expected | {"beam_tree.svg", "beam_tree.png"}
    assert "Búsqueda en haz" in (out / "steps" / "beam_tree.svg").read_text(encoding="utf-8")
    other = str(tmp_path / "other")
    assert main(["inspect", "el gato", "--target", "the cat", "--out", other, "--steps"]) == 2
    assert not (tmp_path / "other").exists()


def test_inspect_translates_as_the_demo_by_default(shipped):
    """Without options, inspect decodes as the demo does (the model's generation_config): on this sentence the
    output differs from greedy decoding, inspect's former default."""
    import argparse

    from vaswani_demo.choices import DemoChoices
    from vaswani_inspect import extract
    from vaswani_inspect.commands import inspect

    model, tokenizer = shipped
    parser = argparse.ArgumentParser()
    inspect.add_parser(parser.add_subparsers())
    args = parser.parse_args(["inspect", "x", "--out", "unused"])
    settings = inspect._decoding_settings(args, model)
    choices = DemoChoices.from_model(model, tokenizer)
    assert settings == {"num_beams": choices.default_beams, "max_new_tokens": choices.default_max_new_tokens}
    text = "Tengo un gato negro y un perro blanco que siempre duermen juntos."
    ours = extract(model, tokenizer, text, direction="es-en", generate_kwargs=settings).target_text
    greedy = extract(model, tokenizer, text, direction="es-en", generate_kwargs={"num_beams": 1}).target_text
    assert ours != greedy
    args = parser.parse_args(["inspect", "x", "--out", "unused", "--num-beams", "1", "--max-new-tokens", "9"])
    assert inspect._decoding_settings(args, model) == {"num_beams": 1, "max_new_tokens": 9}


def test_cutting_the_logits_leaves_copies_and_other_threads_whole(tiny_models):
    """The demo shares one model between sessions and copies it for gradient methods: while a trace runs, a copy
    made meanwhile and a forward on another thread still get logits for every position."""
    import copy
    import threading

    from vaswani_inspect.steps import _last_position_logits

    model, _ = tiny_models["marian"]
    ids = torch.tensor([[3, 4, 5, 6]])
    decoder_ids = torch.tensor([[model.config.decoder_start_token_id, 7, 8]])
    seen = {}
    with _last_position_logits(model):
        seen["cut"] = model(input_ids=ids, decoder_input_ids=decoder_ids).logits.shape[1]
        seen["copy"] = copy.deepcopy(model)(input_ids=ids, decoder_input_ids=decoder_ids).logits.shape[1]
        other = threading.Thread(
            target=lambda: seen.update(thread=model(input_ids=ids, decoder_input_ids=decoder_ids).logits.shape[1])
        )
        other.start()
        other.join()
    assert seen == {"cut": 1, "copy": 3, "thread": 3}
