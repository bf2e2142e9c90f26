"""Text echoed to a terminal (`hf_vaswani.terminal.for_terminal`): escape sequences of the input are shown, not run,
in the one-line warnings and errors of every command."""

import pytest

from hf_vaswani.terminal import for_terminal

#: A window title (OSC), a screen clear (CSI and RIS), a bell, a C1 control and a right-to-left override.
ESCAPES = "\x1b]0;owned\x07 \x1b[2J\x1bc \x9b31m \u202eabc"


def test_control_characters_are_written_as_escapes_on_one_line():
    shown = for_terminal(f"una línea\ncon {ESCAPES}\tfin")
    assert shown == "una línea con \\x1b]0;owned\\x07 \\x1b[2J\\x1bc \\x9b31m \\u202eabc fin"
    assert shown.isprintable()


def test_the_translate_command_shows_the_escapes_of_its_input(capsys):
    from hf_vaswani.cli import main

    assert main(["translate", "--backend", "torch", f"Tengo hambre {ESCAPES} y frío."]) == 0
    err = capsys.readouterr().err
    assert "warning: characters the model has never seen" in err and "\\x1b" in err
    assert not any(c in err for c in "\x1b\x07\x9b\u202e")


def test_an_error_and_a_usage_error_show_the_escapes_too(capsys, tmp_path):
    from hf_vaswani.cli import main

    with pytest.raises(SystemExit):
        main(["translate", "--no-such-option\x1b]0;owned\x07"])  # (without a space: argparse reads it as an option)
    assert main(["evaluate", str(tmp_path / f"pairs{ESCAPES}.tsv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\\x1b]0;owned\\x07") == 2 and not any(c in err for c in "\x1b\x07\x9b\u202e")


def test_every_commands_warnings_show_the_escapes(capsys):
    """``inspect`` (and any command) shows our packages' warnings through the same line as ``translate``."""
    import warnings

    from hf_vaswani.cli import _one_line_warnings
    from hf_vaswani.source_checks import UnknownCharactersWarning

    with _one_line_warnings("inspect"):
        warnings.warn(f"never seen: sentence 1 ({ESCAPES})", UnknownCharactersWarning, stacklevel=1)
    err = capsys.readouterr().err
    assert err.startswith("hf-vaswani inspect: warning:") and "\\x1b]0;owned\\x07" in err and "\x1b" not in err
