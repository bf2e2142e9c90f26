import json

from vaswani_inspect.training_curves import plot_training_curves


def test_training_curves_png(tmp_path):
    state = {
        "log_history": [
            {"step": 10, "loss": 5.0},
            {"step": 20, "loss": 4.0},
            {"step": 20, "eval_bleu": 3.0, "eval_loss": 4.2},
            {"step": 30, "loss": 3.5},
        ]
    }
    (tmp_path / "trainer_state.json").write_text(json.dumps(state))
    png = plot_training_curves(tmp_path / "trainer_state.json", tmp_path / "curves.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
