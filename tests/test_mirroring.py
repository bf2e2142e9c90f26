"""The test tree mirrors the source tree (tests/README.md): every ``tests/<package>/.../test_X.py`` tests the module
``<package>/.../X.py`` (or the subpackage ``<package>/.../X/``), except the files of `CROSS_MODULE`, which test what
several modules do together. The files directly in tests/ are about the whole project."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ROOT

#: The source trees that tests/ mirrors.
PACKAGES = ("hf_vaswani", "vaswani_inspect", "vaswani_demo", "benchmarks")

#: Test files that name no one module, each with what it tests across modules.
CROSS_MODULE = {
    "hf_vaswani/test_broken_models.py": "a broken model folder refused by every command and by the demo",
    "hf_vaswani/test_distributed.py": "the training command under torchrun, two processes",
    "hf_vaswani/test_ecosystem.py": "the transformers paths a user takes: pipeline, bertviz, static cache, PEFT",
    "hf_vaswani/test_messages.py": "one-line errors of several commands (tokenizer files, a full disk, align-eval)",
    "hf_vaswani/test_output_paths.py": "every command that writes a folder refuses the folder it runs in",
    "hf_vaswani/test_save_load.py": "saving and loading through transformers: remote code, Hub cache, Trainer",
    "hf_vaswani/test_shipped_checkpoint.py": "the checkpoint in pretrained/: its folder, card and translations",
    "hf_vaswani/test_stale_staging.py": "staging folders left by a killed command, in every command that writes",
    "vaswani_inspect/test_extract_checks.py": "extract refuses what the commands refuse, with their messages",
    "vaswani_inspect/test_patching_transformer_lens.py": "patching's cells against TransformerLens's hook points",
    "vaswani_demo/test_classroom.py": "the demo in class: course examples, page language, figures, steps",
    "benchmarks/test_benchmark_scripts.py": "several benchmark scripts end to end on tiny dimensions",
}


def mirrored_problems(tests_root: Path, source_root: Path, exceptions: dict[str, str]) -> list[str]:
    """One line per test file under `tests_root`'s package folders that names no module of `source_root`, and per
    exception that no longer exists."""
    problems = []
    for package in PACKAGES:
        for test_file in sorted((tests_root / package).rglob("test_*.py")):
            relative = test_file.relative_to(tests_root)
            if relative.as_posix() in exceptions:
                continue
            module = source_root / relative.parent / relative.name.removeprefix("test_")
            if not module.is_file() and not (module.with_suffix("") / "__init__.py").is_file():
                problems.append(f"tests/{relative.as_posix()} names no module {module.relative_to(source_root)}")
    problems += [
        f"tests/{name} is listed in CROSS_MODULE but missing"
        for name in exceptions
        if not (tests_root / name).is_file()
    ]
    return problems


def test_every_test_file_names_the_module_it_tests():
    assert not mirrored_problems(ROOT / "tests", ROOT, CROSS_MODULE), (
        "move the tests to the module's mirrored path (tests/README.md), or list the file in CROSS_MODULE"
    )


def test_the_rule_reports_a_test_file_without_its_module_and_a_stale_exception(tmp_path):
    (tmp_path / "hf_vaswani" / "data").mkdir(parents=True)
    (tmp_path / "hf_vaswani" / "backends.py").touch()
    (tmp_path / "hf_vaswani" / "data" / "__init__.py").touch()
    tests_root = tmp_path / "tests"
    (tests_root / "hf_vaswani" / "export").mkdir(parents=True)
    for name in ("test_backends.py", "test_data.py", "test_across.py", "export/test_onnx.py"):
        (tests_root / "hf_vaswani" / name).touch()
    problems = mirrored_problems(tests_root, tmp_path, {"hf_vaswani/test_across.py": "", "hf_vaswani/test_gone.py": ""})
    assert problems == [
        "tests/hf_vaswani/export/test_onnx.py names no module hf_vaswani/export/onnx.py",
        "tests/hf_vaswani/test_gone.py is listed in CROSS_MODULE but missing",
    ]
