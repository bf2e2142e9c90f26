"""Every input reaches the demo's status line, malformed queue calls get a 4xx, and what a session leaves on disk is
bounded: one record file per session, overwritten, removed with the session (`vaswani_demo.files.RecordFiles`).
Real HTTP requests to a demo launched on 127.0.0.1, on a tiny random model (nothing here depends on the
translations); memory over many sessions is measured by ``benchmarks/bench_demo_memory.py``.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

pytest.importorskip("gradio")
httpx = pytest.importorskip("httpx")

from vaswani_demo.answers import session_end_handler  # noqa: E402
from vaswani_demo.events import translate_outputs  # noqa: E402
from vaswani_demo.files import RecordFiles  # noqa: E402
from vaswani_demo.security import MAX_QUEUE_BODY_BYTES, queue_call_problem  # noqa: E402


def _raw_call(port: int, endpoint: str, data: list, session: str, language: str = "en") -> tuple[str, object]:
    """(last SSE event, its data) of a raw call of `endpoint`; the body is written with ``ensure_ascii``, as JSON
    carries a lone surrogate (``"\\ud800"``)."""
    body = json.dumps({"data": data, "session_hash": session})
    headers = {"content-type": "application/json", "accept-language": language}
    posted = httpx.post(f"http://127.0.0.1:{port}/gradio_api/call/{endpoint}", content=body, headers=headers)
    assert posted.status_code == 200, posted.text
    answer = httpx.get(f"http://127.0.0.1:{port}/gradio_api/call/{endpoint}/{posted.json()['event_id']}", timeout=60)
    lines = answer.text.strip().splitlines()
    events = [line.split(":", 1)[1].strip() for line in lines if line.startswith("event:")]
    datas = [line.split(":", 1)[1].strip() for line in lines if line.startswith("data:")]
    return events[-1], json.loads(datas[-1])


# ------------------------------------------------------------------------------------ every input, a status line

#: Texts the tokenizer cannot read or the direction must give, and the start of the sentence that refuses them,
#: in English and Spanish.
REFUSED_TEXTS = [
    (">>en<< el gato negro", "The text contains the language token '>>en<<'", "El texto contiene el token de idioma"),
    ("el gato >>fr<< negro", "The text contains the language token '>>fr<<'", "El texto contiene el token de idioma"),
    ("\ud800", "The text contains '\\ud800', half of a character", "El texto contiene '\\ud800', la mitad de un"),
    ("el gato \udfff negro", "The text contains '\\udfff', half of a character", "El texto contiene '\\udfff'"),
]


@pytest.mark.parametrize(("text", "english", "spanish"), REFUSED_TEXTS, ids=[ascii(t) for t, _, _ in REFUSED_TEXTS])
def test_a_text_the_model_cannot_take_is_refused_on_the_status_line(served, backend, text, english, spanish):
    """Through the API, as a browser or client sends it: the answer is the status line, in the request's language,
    and the model does not run."""
    _, port = served
    runs = backend.runner.model_runs
    for language, expected in (("en", english), ("es", spanish)):
        event, (translation, status, pairs, _) = _raw_call(
            port, "translate", [text, "es-en", 1, 8, None, None], uuid.uuid4().hex, language
        )
        assert event == "complete", status
        assert status.startswith(expected), status
        assert translation == "" and not pairs["data"]
    assert backend.runner.model_runs == runs, "a refused text ran the model"


def test_a_refused_text_is_refused_before_any_other_rule(backend):
    """The language token is refused even where the tokenizer would read it as one of its own tokens."""
    result, (translation, status, _, record) = translate_outputs(backend, ">>es<<", "es-en", language="es")
    assert not result.ok and translation == "" and record is None
    assert status.startswith("El texto contiene el token de idioma '>>es<<'"), status
    assert backend.runner.check_text("el gato \ud800", "es-en")[0].startswith("The text contains '\\ud800'")


# ------------------------------------------------------------------------------------------ malformed queue calls


def _join(port: int, body: bytes) -> httpx.Response:
    return httpx.post(
        f"http://127.0.0.1:{port}/gradio_api/queue/join", content=body, headers={"content-type": "application/json"}
    )


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b'{"data": [], "fn_index": 999, "session_hash": "x"}', "fn_index 999 is not one of this app's events"),
        (b'{"data": [], "fn_index": -1, "session_hash": "x"}', "fn_index -1 is not one of"),
        (b'{"data": [], "fn_index": true, "session_hash": "x"}', "fn_index true is not one of"),
        (b'{"data": [], "fn_index": "2", "session_hash": "x"}', 'fn_index "2" is not one of'),
        (b"[1, 2]", "must be a JSON object, got list"),
        (b"not json", "must be JSON"),
        (b'{"data": [], "fn_index": 2, "session_hash": "\\ud800"}', "session_hash must be a string of printable"),
        (b'{"data": [], "fn_index": 2, "session_hash": 7}', "session_hash must be a string of printable"),
        (b'{"data": [], "fn_index": 2}', None),  # Gradio's own check ("Session hash not found."): a 4xx too
        (b"[" * 100_000 + b"]" * 100_000, "must not nest lists and objects more than 32 deep"),  # (RecursionError)
        (b'{"fn_index": 2, "session_hash": "x", "data": [' + b"[" * 40 + b"]" * 40 + b"]}", "more than 32 deep"),
    ],
)
def test_a_malformed_queue_call_is_answered_4xx(served, capfd: pytest.CaptureFixture[str], body: bytes, detail):
    _, port = served
    answer = _join(port, body)
    assert 400 <= answer.status_code < 500, (answer.status_code, answer.text)
    if detail is not None:
        assert answer.status_code == 422 and detail in answer.json()["detail"], answer.text
    assert "Traceback" not in capfd.readouterr().err


def test_a_queue_call_too_large_is_answered_413(served):
    _, port = served
    body = json.dumps({"data": ["x" * MAX_QUEUE_BODY_BYTES], "fn_index": 2, "session_hash": "x"}).encode()
    assert _join(port, body).status_code == 413


def test_a_good_queue_call_goes_on(served):
    app, port = served
    translate = next(index for index, fn in app.fns.items() if fn.api_name == "translate")
    body = {"data": ["el gato negro", "es-en", 1, 4, None, None], "fn_index": translate, "session_hash": "s1"}
    answer = _join(port, json.dumps(body).encode())
    assert answer.status_code == 200 and answer.json()["event_id"], answer.text


def test_queue_call_problem():
    assert queue_call_problem(b'{"fn_index": 3, "data": []}', {1, 2, 3}) is None
    assert queue_call_problem(b'{"data": []}', {1}) is None  # Gradio answers this one (400) itself
    assert "not one of this app's events (0 to 3)" in queue_call_problem(b'{"fn_index": 4}', {0, 1, 2, 3})
    assert "must be JSON" in queue_call_problem(b"\xff\xfe", {0})


# ------------------------------------------------------------------------------------------------ record files


def _record(direction: str = "es-en") -> SimpleNamespace:
    return SimpleNamespace(direction=direction, to_json=lambda: json.dumps({"direction": direction}))


def _json_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json"))


def test_one_record_file_per_session_overwritten(tmp_path: Path):
    files = RecordFiles(tmp_path)
    first = files.save(_record(), "a")
    again = files.save(_record(), "a")
    assert first == again and _json_files(files.folder) == [Path(first)]
    other_direction = files.save(_record("en-es"), "a")
    assert Path(other_direction).name == "attention-en-es.json"
    assert _json_files(files.folder) == [Path(other_direction)], "a session keeps one file"
    assert files.save(_record(), "b") != other_direction and len(_json_files(files.folder)) == 2
    files.close()
    assert not files.folder.exists() and files.save(_record(), "a") is None


def test_record_files_are_removed_with_their_session(tmp_path: Path):
    files = RecordFiles(tmp_path, max_sessions=3)
    paths = {session: files.save(_record(), session) for session in ("a", "b", "c")}
    files.save(_record(), "a")  # "a" used last: "b" is now the oldest
    files.save(_record(), "d")
    assert not Path(paths["b"]).exists() and Path(paths["a"]).exists()
    assert files.sessions == 3 and len(_json_files(files.folder)) == 3
    files.forget("a")
    assert not Path(paths["a"]).parent.exists() and files.sessions == 2
    files.forget("never saved")  # nothing to do
    files.close()


def test_closing_a_page_removes_its_record_file(tmp_path: Path, served):
    """The app's unload event (a page closed) forgets the session's file (`session_end_handler`)."""
    app, _ = served
    assert any(fn.name == "end_session" for fn in app.fns.values()), "no unload event"
    files = RecordFiles(tmp_path)
    path = Path(files.save(_record(), "a"))
    session_end_handler(files)(SimpleNamespace(session_hash="a"))
    assert not path.exists() and files.sessions == 0
    files.close()


def test_a_session_hash_never_names_a_path(tmp_path: Path):
    files = RecordFiles(tmp_path)
    path = Path(files.save(_record(), "../../etc/\ud800"))
    assert path.parent.parent == files.folder
    with pytest.raises(ValueError, match="max_sessions"):
        RecordFiles(tmp_path, max_sessions=0)
    files.close()


def test_the_record_endpoint_reuses_the_sessions_file(served, backend):
    """/record in one session answers the same file each time, served as it is (no copy per call in Gradio's
    cache)."""
    _, port = served
    session = uuid.uuid4().hex
    assert _raw_call(port, "translate", ["el gato negro", "es-en", 1, 6, None, None], session)[0] == "complete"
    before = len(_json_files(backend.files.folder))
    paths = set()
    for _ in range(3):
        event, answer = _raw_call(port, "record", [None], session)
        assert event == "complete", answer
        paths.add(answer[0]["path"])
    assert len(paths) == 1
    (path,) = paths
    assert Path(path).parent.parent == backend.files.folder, "the record was copied into Gradio's cache"
    assert len(_json_files(backend.files.folder)) == before + 1


def test_an_api_call_with_a_broken_session_hash_is_answered_422(served):
    _, port = served
    body = b'{"data": ["el gato negro", "es-en", 1, 4, null, null], "session_hash": "\\ud800"}'
    answer = httpx.post(
        f"http://127.0.0.1:{port}/gradio_api/call/translate", content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 422 and "session_hash must be" in answer.json()["detail"], answer.text
