"""The demo loses nothing and shows no traceback: every value of its API is checked by the demo itself (through
`gradio_client`, raw values included); the limits and the unknown-character rule are the ones the commands share
(`hf_vaswani.limits.MAX_NUM_BEAMS`, `hf_vaswani.inference`); ``hf-vaswani demo --device bogus`` is one line; the
record files are written atomically and removed when the app closes or the process ends, and Gradio's cache is
pruned. The model is the one of tests/vaswani_demo/test_app.py (the shipped checkpoint when it exists, else a tiny
one).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

from hf_vaswani import cli, source_checks  # noqa: E402
from hf_vaswani.checked_source import is_checked  # noqa: E402
from hf_vaswani.inference import UnknownCharactersWarning, check_known_characters, generation_limits  # noqa: E402
from hf_vaswani.limits import MAX_NUM_BEAMS  # noqa: E402
from vaswani_demo import DemoBackend, build_app, launch_app  # noqa: E402
from vaswani_demo.settings import CACHE_PRUNE_SECONDS, FILE_TTL_SECONDS, MAX_BEAMS  # noqa: E402

pytest.importorskip("gradio")
pytest.importorskip("gradio_client")

from tests.helpers import PROCESS_TIMEOUT, ROOT  # noqa: E402
from tests.vaswani_demo.test_app import _free_port  # noqa: E402

#: `backend` and `model_path` (tests/vaswani_demo/conftest.py): the demo tests' model.
DEMO_MODEL = "test"


@pytest.fixture(scope="module")
def client(backend: DemoBackend, tmp_path_factory: pytest.TempPathFactory):
    from gradio_client import Client

    app = build_app(backend=backend)
    port = _free_port()
    launch_app(app, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True)
    try:
        downloads = str(tmp_path_factory.mktemp("downloads"))
        yield Client(f"http://127.0.0.1:{port}/", verbose=False, analytics_enabled=False, download_files=downloads)
    finally:
        app.close()


# ------------------------------------------------------------------------------------ the /translate values


BAD_VALUES = [
    ({"num_beams": "abc"}, "The beam size must be a whole number from 1 to {beams}, got 'abc'."),
    ({"num_beams": 0}, "The beam size must be a whole number from 1 to {beams}, got 0."),
    ({"num_beams": 2.5}, "The beam size must be a whole number from 1 to {beams}, got 2.5."),
    ({"num_beams": True}, "The beam size must be a whole number from 1 to {beams}, got True."),
    ({"num_beams": [2]}, "The beam size must be a whole number from 1 to {beams}, got [2]."),
    ({"max_new_tokens": "many"}, "The maximum length must be a whole number from 1 to {tokens}, got 'many'."),
    ({"max_new_tokens": 100_000}, "The maximum length must be a whole number from 1 to {tokens}, got 100000."),
    ({"direction": "xx-yy"}, "Choose a translation direction: Spanish → English (es-en) or English → Spanish (en-es)."),
    ({"direction": 3}, "Choose a translation direction"),
    ({"layer": "99"}, "The decoder layer must be \"mean\" or a whole number from 0 to {layer}, got '99'."),
    ({"layer": "first"}, "The decoder layer must be"),
    ({"head": "1,x"}, 'The head must be "mean", a head from 0 to {head} or several heads separated by commas'),
    ({"head": "99"}, "The head must be"),
    ({"text": 123}, "The text must be a string, got int."),
    ({"text": None}, "The text box is empty"),
]


@pytest.mark.parametrize(("values", "expected"), BAD_VALUES, ids=[str(v) for v, _ in BAD_VALUES])
def test_api_answers_bad_values_with_the_demos_own_sentence(client, backend, values: dict, expected: str):
    """Gradio's preprocessing would turn most of these into its generic "error" without a message."""
    arguments = {"text": "el gato negro", "direction": "es-en", **values}
    text, direction = arguments.pop("text"), arguments.pop("direction")
    runs = backend.runner.model_runs
    translation, status, pairs = client.predict(text, direction, **arguments, api_name="/translate")
    expected = expected.format(
        beams=backend.choices.max_beams,
        tokens=backend.choices.max_new_tokens_limit,
        layer=backend.choices.decoder_layers - 1,
        head=backend.choices.decoder_heads - 1,
    )
    assert status.startswith(expected), status
    assert translation == "" and not pairs["data"] and "Traceback" not in status
    assert backend.runner.model_runs == runs, "a refused value ran the model"


#: Values the drawing endpoints refuse (after a translation), and the start of their sentence.
BAD_DRAWING_VALUES = [
    ("/alignment", {"unit": "pixels"}, 'The heatmap unit must be "words" or "tokens", got \'pixels\'.'),
    ("/alignment", {"layer": "99"}, 'The decoder layer must be "mean" or a whole number from 0 to {layer}, got'),
    ("/alignment", {"head": "1,x"}, 'The head must be "mean", a head from 0 to {head} or several heads'),
    ("/alignment", {"shift": "yes"}, "The shift must be true or false, got 'yes'."),
    ("/alignment", {"skip_punctuation": 1}, "Skip punctuation must be true or false, got 1."),
    ("/view", {"view": "table"}, 'The bertviz view must be "head" or "model", got \'table\'.'),
    ("/view", {"kind": "self"}, 'The attention kind must be "encoder", "decoder" or "cross", got \'self\'.'),
]


@pytest.mark.parametrize(
    ("endpoint", "values", "expected"), BAD_DRAWING_VALUES, ids=[f"{e} {v}" for e, v, _ in BAD_DRAWING_VALUES]
)
def test_drawing_endpoints_refuse_bad_values_with_the_demos_own_sentence(
    client, backend, endpoint: str, values: dict, expected: str
):
    from gradio_client.exceptions import AppError

    assert client.predict("el gato negro", "es-en", num_beams=1, api_name="/translate")[1].startswith("Translated")
    expected = expected.format(layer=backend.choices.decoder_layers - 1, head=backend.choices.decoder_heads - 1)
    with pytest.raises(AppError) as refused:
        client.predict(**values, api_name=endpoint)
    assert str(refused.value).startswith(expected), str(refused.value)
    assert client.predict(api_name=endpoint)  # the session's translation is still there to draw


def test_api_accepts_numbers_as_strings_and_several_heads(client, backend):
    translation, status, *_ = client.predict(
        "el gato negro", "es-en", num_beams="2", max_new_tokens=12.0, layer="mean", head="0,1", api_name="/translate"
    )
    assert status.startswith("Translated") and translation, status


def test_limits_are_the_shared_ones(backend):
    limits = generation_limits(backend.runner.model)
    assert backend.choices.max_beams == min(MAX_BEAMS, MAX_NUM_BEAMS, limits.num_beams)
    assert backend.choices.max_new_tokens_limit <= limits.max_new_tokens
    assert 1 <= backend.choices.default_beams <= backend.choices.max_beams
    refused = backend.runner.translate("el gato negro", "es-en", backend.choices.max_beams + 1)
    assert not refused.ok and refused.status.startswith("The beam size must be")
    refused = backend.runner.translate("el gato negro", "es-en", 1, backend.choices.max_new_tokens_limit + 1)
    assert not refused.ok and refused.status.startswith("The maximum length must be")


@pytest.mark.parametrize(
    "text",
    ["🙂🐈😀", "el gato 🐈 negro", "🐈🐈🐈🐈🐈 gato", "🐈🐈🐈 gato", "el gato negro", "猫が好きです", "el 猫 negro"],
)
def test_unknown_characters_follow_the_commands_rule(backend, text: str):
    """The demo refuses exactly the texts `hf_vaswani.inference.check_known_characters` refuses, and notes the
    unknown characters exactly where it warns."""
    message, notes = backend.runner.check_text(text, "es-en")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check_known_characters(backend.runner.tokenizer, [text], ["the text"])
            refused = False
        except ValueError:
            refused = True
    warned = any(issubclass(w.category, UnknownCharactersWarning) for w in caught)
    assert (message is not None) == refused, message
    if refused:
        assert "does not know any of these characters" in message and "<unk>" in message
    else:
        assert bool(notes) == warned, notes
        assert all("never seen" in note for note in notes)


def test_a_demo_request_checks_its_text_once(backend, monkeypatch):
    from vaswani_demo import checks
    from vaswani_demo.checks import translation_request

    asked = []
    real = source_checks.unknown_characters

    def counted(tokenizer, text):
        asked.append(str(text))
        return real(tokenizer, text)

    monkeypatch.setattr(source_checks, "unknown_characters", counted)
    monkeypatch.setattr(checks, "unknown_characters", counted)
    runner = backend.runner
    request = translation_request(runner.choices, runner.routes, "el gato negro", "es-en", 1, 3)
    assert is_checked(request.text, "es-en") and asked == ["el gato negro"]
    assert runner.run(request).ok
    assert asked.count("el gato negro") == 1  # (the translation, read as the record's target, is checked as one)


# ------------------------------------------------------------------------------------------ the command line


@pytest.mark.parametrize("device", ["bogus", "cuda:7"])
def test_demo_with_a_bad_device_is_one_line_before_loading(
    device: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    import torch

    if device.startswith("cuda") and torch.cuda.device_count() > 7:
        pytest.skip("this machine has a cuda:7")

    def must_not_load(*args, **kwargs):
        raise AssertionError("the model was loaded before the device was checked")

    monkeypatch.setattr(DemoBackend, "load", must_not_load)
    assert cli.main(["demo", "--device", device]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hf-vaswani demo: error: ") and device in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


# ---------------------------------------------------------------------------------------------- the files


def test_records_are_written_atomically(backend, monkeypatch: pytest.MonkeyPatch):
    from vaswani_demo import files as files_module
    from vaswani_inspect.record import AttentionRecord

    written = []
    real_write_text = files_module.write_text

    def spy(path, text, *args, **kwargs):
        written.append(Path(path))
        return real_write_text(path, text, *args, **kwargs)

    monkeypatch.setattr(files_module, "write_text", spy)
    record = backend.runner.translate("el gato negro", "es-en", 1, 12).record
    path = Path(backend.files.save(record))
    assert written == [path] and path.is_relative_to(backend.files.folder)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no staging file left behind
    assert AttentionRecord.load(path).allclose(record)


def test_gradio_cache_is_pruned(backend):
    app = build_app(backend=backend)
    assert app.delete_cache == (CACHE_PRUNE_SECONDS, FILE_TTL_SECONDS)


@pytest.mark.slow
def test_closing_the_app_removes_its_files(model_path: str, tmp_path: Path):
    from gradio_client import Client

    app = build_app(model_path)  # the app loads, and so owns, its backend
    folder = app.demo_backend.files.folder
    assert folder.name.startswith("vaswani-demo-") and folder.is_dir()
    port = _free_port()
    launch_app(app, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True)
    try:
        client = Client(
            f"http://127.0.0.1:{port}/", verbose=False, analytics_enabled=False, download_files=str(tmp_path)
        )
        status = client.predict("el gato negro", "es-en", num_beams=1, max_new_tokens=8, api_name="/translate")[1]
        assert status.startswith("Translated"), status
        assert Path(client.predict(api_name="/record")).is_file()
        assert any(folder.rglob("*.json"))
        cached = [Path(name) for files in app.temp_file_sets for name in files]
        assert any(path.suffix == ".json" and path.exists() for path in cached)
    finally:
        app.close()
    assert not folder.exists()
    assert not [path for path in cached if path.exists()], "Gradio's cached copies outlived the app"


def test_closing_the_app_leaves_a_given_backend_open(backend):
    build_app(backend=backend).close()
    assert backend.files.folder.is_dir()
    assert backend.files.save(backend.runner.translate("el gato negro", "es-en", 1, 8).record)


@pytest.mark.slow
def test_no_record_folder_outlives_the_process(model_path: str, tmp_path: Path):
    """One app is closed, the other is left open when the interpreter exits: no ``vaswani-demo-*`` folder
    remains either way (they are made in the folder Gradio serves its files from, ``GRADIO_TEMP_DIR``)."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    served = tmp_path / "g"
    script = textwrap.dedent(
        f"""
        import os
        os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
        from vaswani_demo import build_app
        closed = build_app({model_path!r}, translation_backend="torch")  # (no CTranslate2 export to make)
        record = closed.demo_backend.runner.translate("el gato negro", "es-en", 1, 8).record
        assert closed.demo_backend.files.save(record)
        closed.close()
        left_open = build_app({model_path!r}, translation_backend="torch")
        assert left_open.demo_backend.files.save(record)
        print(sorted(os.listdir({str(served)!r})))
        """
    )
    env = {**os.environ, "TMPDIR": str(temporary), "OMP_NUM_THREADS": "1", "GRADIO_TEMP_DIR": str(served)}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=PROCESS_TIMEOUT, cwd=ROOT, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "vaswani-demo-" in result.stdout  # the open app's folder existed while the process ran
    assert not list(served.glob("vaswani-demo-*")) and not list(temporary.glob("vaswani-demo-*"))


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT"])
def test_a_stopped_demo_removes_its_record_folder(model_path: str, tmp_path: Path, stop: str):
    """``kill`` (SIGTERM, what a service manager sends) stops the demo as Ctrl-C (SIGINT) does: the record folder
    goes, and the process ends by itself."""
    import signal
    import time
    import urllib.request

    served = tmp_path / "served"
    port = _free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GRADIO_TEMP_DIR": str(served), "GRADIO_ANALYTICS_ENABLED": "False"}
    command = [sys.executable, "-m", "hf_vaswani.cli", "demo", "--model", model_path, "--backend", "torch"]
    demo = subprocess.Popen(
        [*command, "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and demo.poll() is None:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/config", timeout=5).close()
                break
            except OSError:
                time.sleep(1)
        assert demo.poll() is None, demo.stderr.read().decode()[-3000:]
        assert list(served.glob("vaswani-demo-*")), "the demo made no record folder"
        demo.send_signal(getattr(signal, stop))
        demo.wait(timeout=120)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    assert not list(served.glob("vaswani-demo-*"))
