"""What the launched demo answers before Gradio sees a request (`vaswani_demo.security`): only its own host names
(DNS rebinding), no upload route; and what its app does with malformed raw calls and many sessions: the demo's own
sentence for a wrong number of values (no traceback), at most `MAX_SESSIONS` sessions' state kept. Real HTTP
requests to a demo launched on 127.0.0.1, on a tiny random model (nothing here depends on the translations).
"""

from __future__ import annotations

import http.client
import json
import os
import uuid

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

pytest.importorskip("gradio")
httpx = pytest.importorskip("httpx")

from tests.vaswani_demo.test_app import _free_port  # noqa: E402
from vaswani_demo import build_app, launch_app  # noqa: E402
from vaswani_demo.security import needs_uploads, served_host_names  # noqa: E402
from vaswani_demo.settings import MAX_SESSIONS  # noqa: E402


def _get(port: int, path: str, host: str | None) -> int:
    """The status of a raw GET of `path`, with `host` as its Host header (HTTP/1.0 without one for None)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    if host is None:
        connection._http_vsn, connection._http_vsn_str = 10, "HTTP/1.0"
    connection.putrequest("GET", path, skip_host=True)
    if host is not None:
        connection.putheader("Host", host)
    connection.endheaders()
    try:
        return connection.getresponse().status
    finally:
        connection.close()


# ---------------------------------------------------------------------------------------------- host names


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "[::1]:{port}", "127.0.0.2"])
def test_the_demos_own_host_names_are_answered(served, host: str):
    _, port = served
    assert _get(port, "/config", host.format(port=port)) == 200


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:{port}",
        "localhost.evil.example",
        "192.168.1.9",
        "127.0.0.1:{port}@evil.example",  # (no browser sends it; a parser that stops at ":" would read 127.0.0.1)
        "localhost:{port}/evil.example",
    ],
)
def test_another_host_name_is_refused(served, host: str):
    """DNS rebinding: a page of evil.example whose name now points at 127.0.0.1 must not read the demo."""
    _, port = served
    assert _get(port, "/config", host.format(port=port)) == 403
    assert _get(port, "/gradio_api/info", host.format(port=port)) == 403
    answer = httpx.post(
        f"http://127.0.0.1:{port}/gradio_api/call/translate",
        json={"data": ["el gato negro", "es-en", 1, 8, None, None]},
        headers={"Host": host.format(port=port)},
    )
    assert answer.status_code == 403 and "host names it serves on" in answer.text


def test_a_request_without_host_is_answered(served):
    """HTTP/1.0 without Host: no browser sends one, so it cannot be a rebinding attack."""
    _, port = served
    assert _get(port, "/config", None) == 200


def test_host_name_reads_only_a_name_and_a_port():
    from vaswani_demo.security import host_name

    assert [host_name(h) for h in ("127.0.0.1:7860", "[::1]:7860", "LOCALHOST.", "::1")] == [
        "127.0.0.1",
        "::1",
        "localhost",
        "::1",
    ]
    for odd in ("127.0.0.1:7860@evil.example", "localhost:80:80", "[::1]evil", "local host"):
        assert host_name(odd) == odd  # matches none of the served names


def test_a_refused_file_is_answered_without_its_path(served, tmp_path):
    """Gradio names the path it refuses; the guard answers 403 without it."""
    _, port = served
    for path in ("/etc/passwd", str(tmp_path), os.path.abspath(__file__)):
        answer = httpx.get(f"http://127.0.0.1:{port}/gradio_api/file={path}")
        assert answer.status_code == 403 and answer.text == "403 Forbidden: this demo does not serve that file.\n"
        assert int(answer.headers["content-length"]) == len(answer.content)


def test_served_host_names():
    assert served_host_names("127.0.0.1") == {"127.0.0.1", "localhost", "::1"}
    assert served_host_names("demo.lan") == {"127.0.0.1", "localhost", "::1", "demo.lan"}
    assert "abc123.gradio.live" in served_host_names("127.0.0.1", "https://abc123.gradio.live")
    assert served_host_names("0.0.0.0") is None and served_host_names("::") is None  # every interface: every name


# ------------------------------------------------------------------------------------------------- uploads


def _files_under(folder: str) -> set[str]:
    return {os.path.join(path, name) for path, _, names in os.walk(folder) for name in names}


def test_uploads_are_refused_and_nothing_is_stored(served):
    app, port = served
    uploads = app.server_app.uploaded_file_dir
    before = _files_under(uploads)
    answer = httpx.post(
        f"http://127.0.0.1:{port}/gradio_api/upload", files={"files": ("note.txt", b"not for the demo")}
    )
    assert answer.status_code == 404 and "takes no file uploads" in answer.text
    assert not app.upload_file_set
    assert _files_under(uploads) == before


def test_an_app_with_an_upload_component_keeps_the_route():
    import gradio as gr

    assert not needs_uploads([gr.Textbox(), gr.File(interactive=False), gr.State()])
    assert needs_uploads([gr.Textbox(), gr.File()])


# ------------------------------------------------------------------------------------ malformed raw calls


def _raw_call(port: int, endpoint: str, data: list, session: str | None = None) -> tuple[str, str]:
    """(last SSE event, its data) of a raw call of `endpoint`."""
    body = {"data": data, **({"session_hash": session} if session else {})}
    posted = httpx.post(f"http://127.0.0.1:{port}/gradio_api/call/{endpoint}", json=body)
    assert posted.status_code == 200, posted.text
    answer = httpx.get(f"http://127.0.0.1:{port}/gradio_api/call/{endpoint}/{posted.json()['event_id']}", timeout=60)
    lines = answer.text.strip().splitlines()
    events = [line.split(":", 1)[1].strip() for line in lines if line.startswith("event:")]
    datas = [line.split(":", 1)[1].strip() for line in lines if line.startswith("data:")]
    return events[-1], datas[-1]


@pytest.mark.parametrize(
    ("endpoint", "data", "wanted"),
    [
        ("translate", [], 6),
        ("translate", ["el gato negro"], 6),
        ("translate", ["el gato negro", "es-en", 1, 8, None, None, "one too many"], 6),
        ("alignment", [], 5),  # the documented values: the session's record is no API value
        ("alignment", ["mean"], 5),
        ("view", [None, "head", "cross", "extra"], 2),
        ("record", [None, None], 0),
    ],
)
def test_a_wrong_number_of_values_gets_the_demos_sentence(
    served, capfd: pytest.CaptureFixture[str], endpoint: str, data: list, wanted: int
):
    _, port = served
    event, payload = _raw_call(port, endpoint, data)
    assert event == "error"
    told = json.loads(payload)["error"]
    assert told.startswith(f"The endpoint /{endpoint} takes {wanted} values ("), told
    assert f"got {len(data)}" in told
    assert "Traceback" not in capfd.readouterr().err


def test_the_documented_values_without_the_session_state_are_taken(served):
    _, port = served
    session = uuid.uuid4().hex
    assert _raw_call(port, "translate", ["el gato negro", "es-en", 1, 6, None, None], session)[0] == "complete"
    assert _raw_call(port, "alignment", [None, None, "words", None, True], session)[0] == "complete"
    assert _raw_call(port, "view", ["head", "cross"], session)[0] == "complete"
    assert _raw_call(port, "record", [], session)[0] == "complete"


def test_the_sentence_follows_the_requests_language(served):
    _, port = served
    posted = httpx.post(
        f"http://127.0.0.1:{port}/gradio_api/call/translate", json={"data": []}, headers={"Accept-Language": "es"}
    )
    answer = httpx.get(f"http://127.0.0.1:{port}/gradio_api/call/translate/{posted.json()['event_id']}", timeout=60)
    assert "El punto de acceso /translate recibe 6 valores" in answer.text


# ------------------------------------------------------------------------------------------------ sessions


def test_the_launched_app_keeps_at_most_max_sessions(served):
    app, _ = served
    assert app.state_session_capacity == MAX_SESSIONS


@pytest.mark.slow
def test_fresh_sessions_beyond_the_cap_drop_the_oldest_records(backend, monkeypatch: pytest.MonkeyPatch):
    import vaswani_demo.app as app_module

    cap = 4
    monkeypatch.setattr(app_module, "MAX_SESSIONS", cap)
    app = build_app(backend=backend)
    port = _free_port()
    launch_app(app, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True)
    try:
        sessions = [uuid.uuid4().hex for _ in range(cap + 6)]
        for session in sessions:
            event, _ = _raw_call(port, "translate", ["el gato negro", "es-en", 1, 6, None, None], session)
            assert event == "complete"
        kept = app.state_holder.session_data
        assert len(kept) <= cap
        records = [value for state in kept.values() for value in state.state_data.values() if value is not None]
        assert 1 <= len(records) <= cap
        assert sessions[-1] in kept and sessions[0] not in kept
        # the newest session still draws from its record
        assert _raw_call(port, "alignment", [None, None, None, "words", None, True], sessions[-1])[0] == "complete"
    finally:
        app.close()


# ------------------------------------------------------------------------------------------ special tokens


@pytest.mark.parametrize("text", ["<pad> <pad> <pad>", "</s>", "<s> </s> <pad>"])
def test_text_made_of_special_tokens_is_refused_like_unknown_characters(served, backend, text: str):
    """The shared rule (`hf_vaswani.source_checks.unknown_characters`) counts special tokens typed as text; the
    demo says what they are, and the model does not run."""
    _, port = served
    runs = backend.runner.model_runs
    event, payload = _raw_call(port, "translate", [text, "es-en", 1, 8, None, None])
    translation, status, pairs, _ = json.loads(payload)
    assert event == "complete" and translation == "" and not pairs["data"]
    assert status.startswith("The text is made of the model's special tokens ("), status
    assert backend.runner.model_runs == runs, "special tokens ran the model"


def test_a_special_token_inside_words_is_noted(backend):
    message, notes = backend.runner.check_text("el gato <pad> negro", "es-en")
    assert message is None and notes == ["<pad>: the model's special tokens, not words, read as markers."]
