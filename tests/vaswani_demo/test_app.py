"""Tests of the translate-and-inspect demo (`vaswani_demo`, `demo/app.py`, ``hf-vaswani demo``).

One app is launched for the whole module on 127.0.0.1 (a free port) and driven through `gradio_client` (the
``/translate`` endpoint, then ``/alignment``, ``/view`` and ``/record``), with 20 concurrent requests, and through a
real browser (Debian's chromium, marked ``browser``). The model is the shipped checkpoint when it exists (or
``$VASWANI_DEMO_TEST_MODEL``), else a tiny random-weight model written for the module (`vaswani_demo.testing`).
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

from hf_vaswani import cli  # noqa: E402
from vaswani_demo import DemoBackend, build_app, drawing, launch_app  # noqa: E402
from vaswani_demo.embed import iframe_html  # noqa: E402
from vaswani_demo.settings import EXAMPLES, MAX_CHARS  # noqa: E402
from vaswani_demo.testing import is_tiny_model, write_tiny_model  # noqa: E402
from vaswani_inspect.alignment import (  # noqa: E402
    align,
    alignment_settings,
    source_words,
    target_words,
    write_alignment_config,
)

pytest.importorskip("gradio")
pytest.importorskip("gradio_client")

from tests.helpers import PROCESS_TIMEOUT, ROOT

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: `model_path` (tests/vaswani_demo/conftest.py): the demo tests' model.
DEMO_MODEL = "test"


@pytest.fixture(scope="module")
def trained(model_path: str) -> bool:
    """True when the tests run on a trained checkpoint (translations can be checked for meaning)."""
    return not is_tiny_model(model_path)


@pytest.fixture(scope="module")
def served(model_path: str):
    """(app, url): the demo served on 127.0.0.1 for the whole module, closed at the end."""
    app = build_app(model_path)
    port = _free_port()
    launch_app(app, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield app, f"http://127.0.0.1:{port}/"
    finally:
        app.close()


@pytest.fixture(scope="module")
def client(served, tmp_path_factory: pytest.TempPathFactory):
    from gradio_client import Client

    _, url = served
    return Client(url, verbose=False, analytics_enabled=False, download_files=str(tmp_path_factory.mktemp("downloads")))


def _translate(client, text: str, direction: str = "es-en", **options) -> dict:
    outputs = client.predict(text, direction, **options, api_name="/translate")
    names = ("translation", "status", "pairs")
    assert len(outputs) == len(names)
    return dict(zip(names, outputs))


def _everything(client, text: str, direction: str = "es-en", kind: str = "encoder", **options) -> dict:
    """`_translate`, then what the page shows of it: /alignment, /view (of `kind`) and /record, same session."""
    out = _translate(client, text, direction, **options)
    plot, links, pairs = client.predict(api_name="/alignment")
    assert pairs == out["pairs"]  # the defaults of both: the model's configuration, punctuation skipped
    view = client.predict(kind=kind, api_name="/view")
    return {**out, "plot": plot, "links": links, "view": view, "record": client.predict(api_name="/record")}


# ------------------------------------------------------------------------------------------- without a server


def test_iframe_html_escapes_the_page_into_srcdoc():
    page = '<p title="x">a & b</p></iframe><script>alert(1)</script>'
    frame = iframe_html(page, height=300, title='view "x"')
    assert frame.count("<iframe") == 1 and frame.endswith("></iframe>")
    assert "<script" not in frame and "</iframe><" not in frame.replace('"></iframe>', "")
    assert 'sandbox="allow-scripts"' in frame and "allow-same-origin" not in frame
    srcdoc = re.search(r'srcdoc="([^"]*)"', frame).group(1)
    assert html.unescape(srcdoc) == page


def test_cli_registers_demo_with_one_line():
    assert "demo" in cli.build_parser().format_help()
    args = cli.build_parser().parse_args(["demo"])
    assert (args.host, args.port, args.share, args.model) == ("127.0.0.1", None, False, None)
    args = cli.build_parser().parse_args(["demo", "--model", "m", "--port", "8000", "--share"])
    assert (args.model, args.port, args.share) == (["m"], 8000, True)
    args = cli.build_parser().parse_args(["demo", "--model", "es-en=a", "--model", "en-es=b"])
    assert args.model == ["es-en=a", "en-es=b"]


def test_cli_missing_model_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert cli.main(["demo", "--model", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hf-vaswani demo: error:") and "Traceback" not in err


def test_missing_default_checkpoint_is_not_looked_up_on_the_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    import hf_vaswani.paths

    monkeypatch.delenv("VASWANI_DEMO_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(hf_vaswani.paths, "default_model_path", lambda: "pretrained/vaswani-tatoeba-es-en")
    with pytest.raises(FileNotFoundError, match="pass --model"):
        DemoBackend.load()


def test_missing_shipped_checkpoint_names_every_way_to_give_a_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    import hf_vaswani.paths

    def missing() -> str:
        raise FileNotFoundError("No model given, and the shipped checkpoint is missing. Pass --model.")

    monkeypatch.delenv("VASWANI_DEMO_MODEL", raising=False)
    monkeypatch.setattr(hf_vaswani.paths, "default_model_path", missing)
    with pytest.raises(FileNotFoundError, match=r"Pass --model\..*\$VASWANI_DEMO_MODEL"):
        DemoBackend.load()
    assert cli.main(["demo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hf-vaswani demo: error: No model given") and err.count("\n") == 1


def test_cli_rejects_bad_numbers_in_one_line(capsys: pytest.CaptureFixture[str]):
    for option, value in (("--port", "0"), ("--port", "65536"), ("--concurrency-limit", "0"), ("--max-queue", "-1")):
        with pytest.raises(SystemExit) as exited:
            cli.main(["demo", option, value])
        err = capsys.readouterr().err
        assert exited.value.code == 2 and err.startswith("hf-vaswani demo: error:") and option in err, err


@pytest.mark.slow
def test_demo_command_module_loads_neither_gradio_nor_the_model():
    """``hf-vaswani`` imports every command module to build its parser: the demo's must stay light."""
    script = "import json, sys; import vaswani_demo.commands; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=PROCESS_TIMEOUT, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = {name.split(".")[0] for name in json.loads(result.stdout)}
    assert not loaded & {"gradio", "vaswani_inspect", "matplotlib", "bertviz"}
    assert "vaswani_demo" in loaded


def _space_launcher():
    spec = importlib.util.spec_from_file_location("vaswani_demo_space_app", ROOT / "demo" / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_space_launcher_help(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exited:
        _space_launcher().main(["--help"])
    assert exited.value.code == 0
    assert "VASWANI_DEMO_MODEL" in capsys.readouterr().out


def test_space_requirements_are_the_demo_extra():
    """demo/requirements.txt lists, one by one, what ``pip install hf-vaswani[demo]`` installs."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]

    def expand(requirements: list[str]) -> set[str]:  # "hf-vaswani[a,b]" -> the requirements of extras a and b
        expanded = set()
        for requirement in requirements:
            if requirement.startswith("hf-vaswani["):
                for extra in requirement.removeprefix("hf-vaswani[").removesuffix("]").split(","):
                    expanded |= expand(extras[extra])
            else:
                expanded.add(requirement)
        return expanded

    lines = (ROOT / "demo" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    listed = {line.strip() for line in lines if line.strip() and not line.startswith(("#", "-"))}
    assert listed == set(project["dependencies"]) | expand(extras["demo"])


def test_space_launcher_and_metadata():
    module = _space_launcher()
    assert module.build_app is build_app and callable(module.main)
    readme = (ROOT / "demo" / "README.md").read_text(encoding="utf-8")
    header = readme.split("---")[1]
    fields = dict(line.split(":", 1) for line in header.strip().splitlines())
    fields = {k.strip(): v.strip().strip("\"'") for k, v in fields.items()}
    import gradio

    assert fields["sdk"] == "gradio" and fields["app_file"] == "app.py"
    assert fields["sdk_version"] == gradio.__version__ == "6.31.0"
    assert {"title", "emoji", "license"} <= set(fields)
    assert (ROOT / "demo" / "requirements.txt").is_file()


def test_redrawing_never_runs_the_model(model_path: str):
    backend = DemoBackend.load(model_path)
    result = backend.runner.translate("el gato negro", "es-en", 2, 8)
    assert result.ok and backend.runner.model_runs == 1
    for layer, head, unit in (("mean", "mean", "words"), ("0", "1", "tokens"), ("1", "mean", "words")):
        figure, pairs = drawing.alignment(result.record, layer, head, unit)
        assert figure is not None and pairs
    for view in ("head", "model"):
        for kind in ("encoder", "decoder", "cross"):
            assert "<iframe" in drawing.view(result.record, view, kind)
    assert backend.runner.model_runs == 1
    assert drawing.alignment(None) == (None, [])
    assert "<iframe" not in drawing.view(None)
    assert result.record.generate_kwargs["num_beams"] == 2
    assert backend.runner.translate("el gato negro", "es-en", 0, 8).status.startswith("The beam size must be")
    assert backend.runner.translate("el gato negro", "es-en", 2, 10_000).status.startswith("The maximum length must be")
    assert backend.runner.translate("el gato negro", "xx-yy").status.startswith("Choose a translation direction")
    assert backend.runner.model_runs == 1


def test_the_pages_drawing_warns_instead_of_failing(model_path: str, monkeypatch: pytest.MonkeyPatch):
    """What follows a translation on the page: an error becomes a warning and an empty output, never an error
    dialog; without a record (a refused text) there is nothing to draw."""
    from vaswani_demo.events import redraw_handlers

    backend = DemoBackend.load(model_path)
    redraw_alignment, redraw_view, offer_record = redraw_handlers(backend)
    record = backend.runner.translate("el gato negro", "es-en", 1, 8).record
    assert offer_record(None) is None and redraw_alignment(None, "0", "0", "words", False, True) == (None, None, [])

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(backend.files, "save", broken)
    monkeypatch.setattr(drawing, "alignment", broken)
    monkeypatch.setattr(drawing, "view", broken)
    with pytest.warns(UserWarning, match=r"The attention record could not be written \(OSError\)"):
        assert offer_record(record) is None
    with pytest.warns(UserWarning, match=r"The alignment could not be drawn \(OSError\)"):
        assert redraw_alignment(record, "0", "0", "words", False, True) == (None, None, [])
    with pytest.warns(UserWarning, match=r"The view could not be drawn \(OSError\)"):
        assert "<iframe" not in redraw_view(record, "head", "encoder")
    backend.close()


def _drawn_links(figure) -> list[tuple[float, float]]:
    """The (source x, target x) ends of every line of a `plot_alignment_links` figure."""
    return sorted((float(line.get_xdata()[0]), float(line.get_xdata()[1])) for line in figure.axes[0].lines)


def _expected_links(figure, record, settings: dict, skip_punctuation: bool) -> list[tuple[float, float]]:
    """Where the lines of `align(record, **settings)` must be: from a source word's x to a target word's x."""
    x = [float(text.get_position()[0]) for text in figure.axes[0].texts]  # source words, then target words
    first_target = len(source_words(record))
    pairs = align(record, **settings, skip_punctuation=skip_punctuation)
    return sorted((x[i], x[first_target + j]) for i, j in pairs)


def test_alignment_controls_change_the_drawn_links(model_path: str):
    from vaswani_inspect.extract import extract

    backend = DemoBackend.load(model_path)
    # A teacher-forced record whose last target word, ".", has a piece of its own.
    record = extract(
        backend.runner.model, backend.runner.tokenizer, "el gato negro .", "the black cat .", direction="es-en"
    )
    assert target_words(record)[-1] == "."
    drawn = {}
    for layer, head, shift, skip in (
        ("mean", "mean", False, True),
        ("mean", "mean", False, False),
        ("0", "1", True, True),
        ("0", "1", False, True),
    ):
        figure = drawing.alignment_links(record, layer, head, shift, skip)
        settings = alignment_settings(record, "mean" if layer == "mean" else int(layer), None, shift)
        settings["heads"] = "all" if head == "mean" else [int(head)]
        assert _drawn_links(figure) == _expected_links(figure, record, settings, skip)
        assert ("shifted" in figure.axes[0].get_title()) == shift
        drawn[layer, head, shift, skip] = _drawn_links(figure)
        _, pairs = drawing.alignment(record, layer, head, "words", shift, skip)
        assert len(pairs) == len(drawn[layer, head, shift, skip])
        assert skip is False or all(row[0] != "." and row[1] != "." for row in pairs)
    # "." gets a line only when punctuation is not skipped.
    assert len(drawn["mean", "mean", False, False]) == len(drawn["mean", "mean", False, True]) + 1
    assert drawing.alignment_links(None) is None


@pytest.mark.slow
def test_alignment_controls_start_at_the_model_configuration(tmp_path: Path):
    from matplotlib.figure import Figure

    from vaswani_demo.events import redraw_handlers, translate_outputs

    folder = write_tiny_model(tmp_path / "tiny")
    configured = {"layer": 1, "heads": [2], "shift": True}
    write_alignment_config(folder, configured)
    backend = DemoBackend.load(folder)
    assert backend.choices.default_choices() == {"layer": "1", "head": "2", "shift": True}
    app = build_app(backend=backend)
    components = {c.elem_id: c for c in app.blocks.values() if getattr(c, "elem_id", None)}
    controls = ("layer", "head", "shift", "skip-punctuation")
    assert {*controls, "alignment-plot", "alignment-links", "alignment-pairs"} <= set(components)
    assert [components[name].value for name in controls] == ["1", "2", True, True]
    parameters = app.get_api_info()["named_endpoints"]["/translate"]["parameters"]
    assert {p["parameter_name"]: p["parameter_default"] for p in parameters[4:6]} == {"layer": "1", "head": "2"}

    result = backend.runner.translate("el gato negro", "es-en")
    record = result.record
    assert record.alignment == configured
    figure, pairs = drawing.alignment(record)  # no choice: the model's configuration, punctuation skipped
    assert "layer 1, head 2, shifted" in figure.axes[0].get_title()
    assert len(pairs) == len(align(record, 1, [2], shift=True, skip_punctuation=True))
    links = drawing.alignment_links(record)
    assert "layer 1, head 2, shifted" in links.axes[0].get_title()
    assert _drawn_links(links) == _expected_links(links, record, configured, True)
    # After a translation the page draws with its controls, which start at the configuration /translate read the
    # word pairs with; unticking the shift draws without it.
    redraw_alignment, *_ = redraw_handlers(backend)
    drawn, lines, drawn_pairs = redraw_alignment(record, "1", "2", "words", True, True)
    assert "layer 1, head 2, shifted" in drawn.axes[0].get_title() and isinstance(lines, Figure)
    assert drawn_pairs == translate_outputs(backend, "el gato negro", "es-en")[1][2]
    unshifted, _, _ = redraw_alignment(record, "1", "2", "words", False, True)
    assert "shifted" not in unshifted.axes[0].get_title()

    # A configuration that averages several heads is one more head choice, and the default.
    write_alignment_config(folder, {"layer": "mean", "heads": [1, 3], "shift": False})
    several = DemoBackend.load(folder)
    assert several.choices.head_choices()[-1] == ("heads 1, 3", "1,3")
    assert several.choices.default_choices() == {"layer": "mean", "head": "1,3", "shift": False}
    figure, _ = drawing.alignment(several.runner.translate("el gato negro", "es-en").record, unit="tokens")
    title = figure.axes[0].get_title()
    assert title.startswith("Attention of each decoder step over the source pieces\n(mean of layers")

    # A configuration that averages readings is the layer choice "model", first and the default; the head and
    # shift controls then do not change what is drawn.
    averaged = {"layer": 0, "heads": [1], "shift": True, "average_with": [{"layer": 1, "heads": [0], "shift": False}]}
    write_alignment_config(folder, averaged)
    aligner = DemoBackend.load(folder)
    label = "the model's aligner: layer 0, head 1, shifted + layer 1, head 0"
    assert aligner.choices.layer_choices()[0] == (label, "model")
    assert aligner.choices.layer_choices("es")[0] == (
        "el alineador del modelo: capa 0, cabeza 1, desplazado + capa 1, cabeza 0",
        "model",
    )
    assert aligner.choices.default_choices() == {"layer": "model", "head": "1", "shift": True}
    record = aligner.runner.translate("el gato negro", "es-en").record
    assert record.alignment == averaged
    expected = align(record, skip_punctuation=True)
    assert expected == align(record, 0, [1], shift=True, average_with=averaged["average_with"], skip_punctuation=True)
    for choices in (("model", "3", False), (None, None, None)):  # the controls' "model", or the API's defaults
        figure, pairs = drawing.alignment(record, choices[0], choices[1], shift=choices[2])
        assert "layer 0, head 1, shifted + layer 1, head 0" in figure.axes[0].get_title()
        assert len(pairs) == len(expected)
        links = drawing.alignment_links(record, *choices)
        assert _drawn_links(links) == _expected_links(links, record, averaged, True)
    single, _ = drawing.alignment(record, "0", "1", shift=True)  # one layer chosen: that reading alone
    assert single.axes[0].get_title().endswith("layer 0, head 1, shifted)")
    tokens, _ = drawing.alignment(record, "model", unit="tokens")  # subword heatmaps show the first reading
    assert "+" not in tokens.axes[0].get_title()


# ------------------------------------------------------------------------------------ through gradio_client


def test_api_documents_four_endpoints(client):
    api = client.view_api(return_format="dict", print_info=False)
    endpoints = api["named_endpoints"]
    assert list(endpoints) == ["/translate", "/alignment", "/view", "/record"]

    def parameters(name: str) -> list[str]:
        return [p["parameter_name"] for p in endpoints[name]["parameters"]]

    def returns(name: str) -> list[str]:
        return [r["label"] for r in endpoints[name]["returns"]]

    assert parameters("/translate") == ["text", "direction", "num_beams", "max_new_tokens", "layer", "head"]
    assert [p["parameter_has_default"] for p in endpoints["/translate"]["parameters"]] == [False] + [True] * 5
    assert returns("/translate") == ["Translation", "Status", "Aligned words"]
    assert parameters("/alignment") == ["layer", "head", "unit", "shift", "skip_punctuation"]
    assert returns("/alignment") == ["Cross-attention heatmap", "Alignment lines", "Aligned words"]
    assert parameters("/view") == ["view", "kind"] and returns("/view") == ["bertviz view"]
    assert parameters("/record") == [] and returns("/record") == ["Attention record (JSON)"]
    assert all(p["parameter_has_default"] for name in ("/alignment", "/view") for p in endpoints[name]["parameters"])


def test_translate_draws_nothing(served, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """/translate answers without drawing a figure or writing a file: those wait for /alignment, /view, /record."""
    from gradio_client import Client

    import vaswani_demo.drawing

    app, url = served

    def never(*args, **kwargs):
        raise AssertionError("/translate drew or wrote something")

    for name in ("word_heatmap", "plot_alignment_links", "plot_heatmap", "view"):
        monkeypatch.setattr(vaswani_demo.drawing, name, never)
    monkeypatch.setattr(app.demo_backend.files, "save", never)
    client = Client(url, verbose=False, analytics_enabled=False, download_files=str(tmp_path))
    out = _translate(client, "el gato negro")
    assert out["status"].startswith("Translated") and out["translation"] and out["pairs"]["data"]


def test_drawing_before_translating_is_a_clear_error(served, tmp_path: Path):
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    _, url = served
    fresh = Client(url, verbose=False, analytics_enabled=False, download_files=str(tmp_path))  # a new session
    for endpoint in ("/alignment", "/view", "/record"):
        with pytest.raises(
            AppError, match=r"^There is no translation yet: call /translate first, with the same client"
        ):
            fresh.predict(api_name=endpoint)


def test_each_session_draws_its_own_translation(served, tmp_path: Path):
    from gradio_client import Client

    _, url = served
    first, second = (
        Client(url, verbose=False, analytics_enabled=False, download_files=str(tmp_path / name)) for name in "ab"
    )
    assert _translate(first, "el gato negro")["status"].startswith("Translated")
    assert _translate(second, "The cat ate the mouse.", "en-es")["status"].startswith("Translated")
    assert "cross-attention" in first.predict(kind="cross", api_name="/view").lower()
    from vaswani_inspect.record import AttentionRecord

    assert AttentionRecord.load(first.predict(api_name="/record")).source_text == "el gato negro"
    assert AttentionRecord.load(second.predict(api_name="/record")).source_text == "The cat ate the mouse."


@pytest.mark.parametrize(("text", "direction"), EXAMPLES)
def test_course_examples(client, trained: bool, text: str, direction: str):
    from vaswani_inspect.record import AttentionRecord

    out = _everything(client, text, direction, kind="cross")
    assert out["translation"].strip(), out["status"]
    assert out["status"].startswith("Translated"), out["status"]
    for figure in (out["plot"], out["links"]):
        assert figure["type"] == "matplotlib" and figure["plot"].startswith("data:image/svg+xml;base64,")
    pairs = out["pairs"]
    assert pairs["headers"] == ["target word", "source word", "weight"] and pairs["data"]
    sources = set(text.replace(".", " .").split()) | set(text.split())
    assert all(0.0 <= row[2] <= 1.0 for row in pairs["data"])
    assert any(row[1] in sources or row[1].rstrip(".") in sources for row in pairs["data"])
    view = out["view"]
    assert view.startswith('<iframe class="vaswani-view"') and 'sandbox="allow-scripts"' in view
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', view).group(1))
    assert "<svg" in page or "d3" in page
    assert "Cross-attention" in page and "https://" not in page.split("</script>")[-1]
    record = AttentionRecord.load(out["record"])
    assert record.source_text == text and record.direction == direction
    assert record.target_text == out["translation"]
    if trained and text == "el gato negro":
        assert "cat" in out["translation"].lower()
    if trained and text == "The cat ate the mouse.":
        assert "gato" in out["translation"].lower()
    if trained and text in ("the black cat", "El gato se comió el ratón."):
        assert ("gato" if direction == "en-es" else "cat") in out["translation"].lower()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "The text box is empty"),
        ("   \n\t ", "only blank space"),
        ("a" * (MAX_CHARS + 1), f"at most {MAX_CHARS} characters"),
        ("1 " * 140, "tokens long, but the model reads at most"),  # 280 characters, more than 128 tokens
        ("🙂🐈😀", "does not know any of these characters"),
    ],
    ids=["empty", "whitespace", "too-many-characters", "too-many-tokens", "emoji-only"],
)
def test_bad_input_gets_a_message(client, text: str, message: str):
    from gradio_client.exceptions import AppError

    out = _translate(client, text)
    assert out["translation"] == ""
    assert message in out["status"] and "Traceback" not in out["status"]
    assert not out["pairs"]["data"]
    with pytest.raises(AppError, match="There is no translation yet"):  # the refused text left no record behind
        client.predict(api_name="/alignment")


def test_emoji_inside_a_sentence_is_translated_with_a_note(client):
    out = _translate(client, "el gato 🐈 negro")
    assert out["translation"] and out["status"].startswith("Translated")
    assert "never seen 🐈" in out["status"]


@pytest.mark.slow
def test_html_input_stays_text(client):
    out = _everything(client, XSS, "en-es", kind="cross")
    assert out["status"].startswith("Translated"), out["status"]
    # Outside the srcdoc attribute there is only the iframe tag; inside it every "<" is escaped.
    assert "<script" not in out["view"] and "<img" not in out["view"]
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', out["view"]).group(1))
    # The page shows the text escaped (heading) or as JSON \u003c escapes, never as markup.
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.slow
def test_twenty_concurrent_requests(client):
    sentences = [EXAMPLES[i % len(EXAMPLES)] for i in range(20)]

    def call(example: tuple[str, str]) -> dict:
        return _translate(client, example[0], example[1], num_beams=1, max_new_tokens=8)

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(call, sentences))
    assert len(results) == 20
    for out in results:
        assert out["status"].startswith("Translated") and out["translation"], out["status"]
    after = _translate(client, "el perro blanco", num_beams=1, max_new_tokens=8)
    assert after["status"].startswith("Translated")


# ------------------------------------------------------------------------------------------------ in a browser


def _offered_source(page: Any, link: Any, expected: str, seconds: float = 60) -> str:
    """The source sentence of the record file `link` offers, read until it is `expected` or `seconds` have passed
    (the file is written while the page draws its figures)."""
    deadline = time.monotonic() + seconds
    while True:
        found = page.request.get(link.get_attribute("href")).json()["source_text"]
        if found == expected or time.monotonic() > deadline:
            return found
        page.wait_for_timeout(250)


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed (apt-get install chromium)")
def test_browser_translate_and_inspect(served):
    playwright = pytest.importorskip("playwright.sync_api")
    from tests.vaswani_demo.browser import show  # here: browser.py imports this module

    app, url = served
    backend = app.demo_backend
    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    outside: list[str] = []
    dialogs: list[str] = []
    local = re.compile(r"^(https?|wss?)://(127\.0\.0\.1|localhost)(:\d+)?/")

    def route(route) -> None:
        request_url = route.request.url
        if local.match(request_url) or request_url.startswith(("data:", "about:", "blob:")):
            route.continue_()
        else:
            outside.append(request_url)
            route.abort()

    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale="en-US")
            context.route("**/*", route)
            page = context.new_page()
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.goto(url, wait_until="domcontentloaded")
            expect = playwright.expect
            source = page.locator("#source-text textarea")
            expect(source).to_be_visible(timeout=60_000)

            source.fill("el gato negro")
            page.locator("#translate-button").click()
            translation = page.locator("#translation textarea")
            expect(translation).not_to_have_value("", timeout=120_000)
            expect(page.locator("#status textarea")).to_have_value(re.compile("^Translated"), timeout=60_000)
            show(page, "translate", "more.label")
            expect(page.locator("#alignment-plot img").first).to_be_visible(timeout=60_000)
            expect(page.locator("#record-file a").first).to_be_visible(timeout=60_000)
            # Counted once the figures are drawn: the source-share bar (drawn with them) runs ALTI+ in the model.
            runs = backend.runner.model_runs
            show(page, "bertviz")
            frame = page.frame_locator("#bertviz iframe")
            expect(frame.locator("svg").first).to_be_visible(timeout=60_000)
            assert frame.locator("svg text").count() > 0
            page.locator("#kind label").filter(has_text="Cross-attention").click()
            expect(page.locator("#bertviz iframe")).to_have_attribute(
                "title", re.compile("Cross-attention"), timeout=60_000
            )
            expect(frame.locator("svg").first).to_be_visible(timeout=60_000)
            expect(frame.locator("h2").first).to_contain_text("Cross-attention")
            show(page, "translate", "options.label")
            plot = page.locator("#alignment-plot img").first
            before = plot.get_attribute("src")
            if backend.choices.default_choices()["layer"] == "model":
                # The model's aligner averages several readings: one layer, chosen, is read alone.
                page.locator("#layer input").first.click()
                page.locator('#layer [role="option"][aria-label="layer 0"]').click()
                expect(plot).not_to_have_attribute("src", before or "", timeout=60_000)
                before = plot.get_attribute("src")
            # Another head than the one the controls start at (the model's alignment configuration).
            other_head = "head 0" if backend.choices.default_choices()["head"] == "1" else "head 1"
            page.locator("#head input").first.click()
            page.locator(f'#head [role="option"][aria-label="{other_head}"]').click()
            expect(plot).not_to_have_attribute("src", before or "", timeout=60_000)
            # The aligned words as lines between the two sentences, redrawn by the shift checkbox.
            links = page.locator("#alignment-links img").first
            expect(links).to_be_visible(timeout=60_000)
            before_links = links.get_attribute("src")
            page.locator("#shift input").click()
            expect(links).not_to_have_attribute("src", before_links or "", timeout=60_000)
            assert backend.runner.model_runs == runs, "changing the view, head or shift ran the model again"
            # Chromium does not paint iframes outside the viewport: make the viewport as tall as the page.
            height = page.evaluate("document.documentElement.scrollHeight")
            page.set_viewport_size({"width": 1280, "height": min(int(height), 8000)})
            page.wait_for_timeout(1000)
            page.screenshot(path=str(artifacts / "demo.png"), full_page=True)

            # A new sentence replaces every figure and the record file; none of the old ones stays next to it.
            old = {
                "plot": page.locator("#alignment-plot img").first.get_attribute("src"),
                "links": links.get_attribute("src"),
            }
            source.fill(XSS)
            page.locator("#translate-button").click()
            expect(page.locator("#alignment-plot img").first).not_to_have_attribute("src", old["plot"], timeout=120_000)
            expect(links).not_to_have_attribute("src", old["links"], timeout=60_000)
            # One record file per session, rewritten in place (`vaswani_demo.files`): the link may keep its address,
            # the file behind it is the new sentence's.
            record_link = page.locator("#record-file a").first
            expect(record_link).to_be_visible(timeout=60_000)
            assert _offered_source(page, record_link, XSS) == XSS
            show(page, "bertviz")
            expect(frame.locator("h1")).to_have_text(XSS, timeout=60_000)
            show(page, "translate")
            page.wait_for_timeout(500)

            page.get_by_role("button", name=re.compile(r"^The cat ate the mouse\.")).click()
            expect(source).to_have_value("The cat ate the mouse.", timeout=60_000)
            expect(page.locator("#status textarea")).to_have_value(
                re.compile("^Translated English → Spanish"), timeout=120_000
            )
        finally:
            browser.close()
    assert dialogs == [], f"input text ran as script: {dialogs}"
    assert outside == [], f"the page tried to reach other hosts: {outside}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def test_ctranslate2_chooses_the_output_and_pytorch_records_its_attention(model_path: str):
    """With the [fast] extra, the demo translates with CTranslate2 (float32 here: PyTorch's tokens) and takes the
    attention from one teacher-forced PyTorch pass over that output."""
    pytest.importorskip("ctranslate2")
    from hf_vaswani.backends import load_ctranslate2

    torch_backend = DemoBackend.load(model_path, backend="torch")
    fast = DemoBackend(
        torch_backend.runner.model,
        torch_backend.runner.tokenizer,
        translator=load_ctranslate2(model_path, quantization="float32"),
    )
    try:
        assert torch_backend.runner.translator is None and fast.runner.translator is not None
        for text in ("el gato negro", "El gato se comió el ratón."):
            expected = torch_backend.runner.translate(text, "es-en", num_beams=2)
            result = fast.runner.translate(text, "es-en", num_beams=2)
            assert result.ok and result.translation == expected.translation
            assert result.record.generate_kwargs["backend"] == "ctranslate2"
            assert result.record.target_ids == expected.record.target_ids
    finally:
        fast.close()
        torch_backend.close()
