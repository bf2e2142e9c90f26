"""hf_vaswani.outputs: what every command writes is checked before any work and written whole or not at all."""

import os
import stat
from pathlib import Path

import pytest

from hf_vaswani.outputs import OutputPlan, publish_dir, write_text


def _tree(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "data.tsv").write_text("a\tb\n")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "a-file").write_text("x")
    return tmp_path


def _plan_error(build) -> str:
    plan = OutputPlan(inputs=build.get("inputs", ()))
    for kind, path, *options in build["outputs"]:
        getattr(plan, kind)(path, **(options[0] if options else {}))
    with pytest.raises((ValueError, OSError)) as error:
        plan.check()
    return str(error.value)


PLAN_ERRORS = {
    "output-is-an-input": ({"inputs": ["{t}/data.tsv"], "outputs": [("file", "{t}/data.tsv")]}, "is also an input"),
    "folder-holds-an-input": (
        {"inputs": ["{t}/model/config.json"], "outputs": [("folder", "{t}/model", {"overwrite": True})]},
        "holds the input",
    ),
    "output-inside-an-input-folder": (
        {"inputs": ["{t}/model"], "outputs": [("folder", "{t}/model/report")]},
        "is inside the input folder",
    ),
    "file-inside-an-input-folder": (
        {"inputs": ["{t}/model"], "outputs": [("file", "{t}/model/scores.json")]},
        "no command writes into what it reads",
    ),
    "same-path-twice": ({"outputs": [("file", "{t}/x.txt"), ("file", "{t}/x.txt")]}, "are the same path"),
    "file-in-a-folder-output": ({"outputs": [("folder", "{t}/out"), ("file", "{t}/out/x.txt")]}, "is inside"),
    "folder-not-empty": ({"outputs": [("folder", "{t}/model")]}, "is not empty: choose a new folder, or pass"),
    "folder-is-a-file": ({"outputs": [("folder", "{t}/a-file")]}, "is a file, not a folder"),
    "file-is-a-folder": ({"outputs": [("file", "{t}/model")]}, "is a folder, not a file"),
    "no-parent-folder": ({"outputs": [("file", "{t}/nowhere/x.txt")]}, "No folder"),
    "below-a-file": ({"outputs": [("folder", "{t}/a-file/out")]}, "is a file"),
    "name-too-long": ({"outputs": [("folder", "{t}/" + "x" * 300)]}, "File name too long"),
}


@pytest.mark.parametrize("build, message", PLAN_ERRORS.values(), ids=PLAN_ERRORS)
def test_plan_is_checked_before_any_work(files, build, message):
    before = _tree(files)
    build = {
        "inputs": [p.format(t=files) for p in build.get("inputs", [])],
        "outputs": [(kind, path.format(t=files), *rest) for kind, path, *rest in build["outputs"]],
    }
    assert message in _plan_error(build)
    assert _tree(files) == before  # the checks leave nothing behind


def test_checks_accept_what_can_be_written(files):
    plan = OutputPlan(inputs=[files / "data.tsv", files / "model"])
    plan.file(files / "scores.json")
    plan.file(files / "a-file")  # an existing file is replaced
    plan.file(files / "model" / "config.json", into_input=True)  # meant to update the input (--write-config)
    plan.folder(files / "new" / "deeper")  # missing parents are created when written
    (files / "empty").mkdir()
    plan.folder(files / "empty")  # an empty folder is not "not empty"
    plan.check()


def test_unwritable_folder_is_found_by_the_check(tmp_path):
    if os.geteuid() == 0:
        folder = Path("/sys")
        if not folder.is_dir():
            pytest.skip("root without /sys")
    else:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o500)
    plan = OutputPlan()
    plan.file(folder / "scores.json", "JSON file")
    with pytest.raises(OSError, match="Cannot write the JSON file"):
        plan.check()


def test_outputs_are_published_together_or_not_at_all(files):
    (files / "old.txt").write_text("old")
    plan = OutputPlan()
    text, folder = plan.file(files / "old.txt"), plan.folder(files / "report")
    plan.check()
    with pytest.raises(RuntimeError), plan.writing() as staged:
        staged(text).write_text("new")
        (staged(folder) / "index.md").write_text("# report")
        raise RuntimeError("the work failed half-way")
    assert (files / "old.txt").read_text() == "old" and not (files / "report").exists()
    assert not [p for p in files.iterdir() if p.name.startswith("tmp-")]
    with plan.writing() as staged:
        staged(text).write_text("new")
        (staged(folder) / "index.md").write_text("# report")
    assert (files / "old.txt").read_text() == "new" and (files / "report" / "index.md").is_file()
    assert not [p for p in files.iterdir() if p.name.startswith("tmp-")]


def test_a_full_disk_names_the_output_not_its_temporary_sibling(files):
    plan = OutputPlan()
    folder = plan.folder(files / "model", overwrite=True)
    with pytest.raises(OSError) as error, plan.writing() as staged:
        raise OSError(27, f"Cannot write {staged(folder) / 'model.safetensors'}: File too large")
    assert str(files / "model" / "model.safetensors") in str(error.value)
    assert f"{str(files / 'model')!r} left as before" in str(error.value)
    assert (files / "model" / "config.json").read_text() == "{}"


def test_a_replaced_folder_keeps_none_of_its_files_and_touches_no_other(files):
    (files / "model.old").mkdir()  # a user's backup next to the folder
    (files / "model.old" / "keep.txt").write_text("mine")
    plan = OutputPlan()
    folder = plan.folder(files / "model", overwrite=True)
    plan.check()
    with plan.writing() as staged:
        (staged(folder) / "model.safetensors").write_bytes(b"new")
    assert sorted(p.name for p in (files / "model").iterdir()) == ["model.safetensors"]
    assert (files / "model.old" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in files.iterdir()) == ["a-file", "data.tsv", "model", "model.old"]


def test_publish_dir_leaves_other_folders_alone(files):
    """The rename step the training checkpoints use too: the previous folder goes to a fresh temporary name."""
    (files / "model.old").mkdir()
    staged = files / "staged"
    staged.mkdir()
    (staged / "weights").write_text("new")
    publish_dir(staged, files / "model")
    assert (files / "model.old").is_dir() and (files / "model" / "weights").read_text() == "new"
    assert not (files / "model" / "config.json").exists()


def test_written_files_get_the_usual_permissions_and_follow_links(files):
    umask = os.umask(0o022)
    os.umask(umask)
    write_text(files / "new.txt", "x")
    assert stat.S_IMODE((files / "new.txt").stat().st_mode) == 0o666 & ~umask  # not the temporary file's 0600
    (files / "a-file").chmod(0o640)
    write_text(files / "a-file", "y")
    assert stat.S_IMODE((files / "a-file").stat().st_mode) == 0o640 and (files / "a-file").read_text() == "y"
    (files / "link.txt").symlink_to(files / "a-file")
    write_text(files / "link.txt", "z")
    assert (files / "link.txt").is_symlink() and (files / "a-file").read_text() == "z"
    write_text("/dev/null", "written in place, never replaced")
    assert Path("/dev/null").is_char_device()
