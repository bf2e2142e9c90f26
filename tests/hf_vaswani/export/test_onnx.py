"""The ONNX translator reads its length limit from the generation config, as `generate()` does (issue 27: it used
to stop every sentence at 19 tokens, transformers' default ``max_length`` of 20, whatever the config said)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from hf_vaswani import VaswaniForConditionalGeneration
from tests.helpers import PROCESS_TIMEOUT, tiny_config, tiny_tokenizer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning"),  # torch.export's own
]

#: Longer than transformers' default of 19 new tokens, within the tiny model's 64 positions.
MAX_NEW_TOKENS = 30


def _never_ending_model(folder: Path) -> Path:
    """A tiny random model whose `</s>` logit is 0 (the largest of its random logits is almost surely above it),
    so that every sentence runs to the length limit; its generation config sets `max_new_tokens`."""
    tokenizer = tiny_tokenizer()
    torch.manual_seed(0)
    model = VaswaniForConditionalGeneration(tiny_config(vocab_size=len(tokenizer))).eval()
    with torch.no_grad():
        model.lm_head.weight[model.config.eos_token_id] = 0
    model.generation_config.update(num_beams=1, max_new_tokens=MAX_NEW_TOKENS)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_the_onnx_translator_follows_the_generation_configs_max_new_tokens(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    from hf_vaswani.export.onnx import OnnxGreedyTranslator

    folder = _never_ending_model(tmp_path / "model")
    executable = shutil.which("hf-vaswani") or str(Path(sys.executable).with_name("hf-vaswani"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [executable, "export-onnx", str(folder), str(tmp_path / "onnx")],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=PROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    model = VaswaniForConditionalGeneration.from_pretrained(folder).eval()
    tokenizer = tiny_tokenizer()
    batch = tokenizer([">>en<< El gato negro duerme.", ">>en<< Hola."], return_tensors="pt", padding=True)
    with torch.inference_mode():
        ours = model.generate(**batch)  # the generation config's max_new_tokens
    assert ours.shape[1] == 1 + MAX_NEW_TOKENS
    onnx = OnnxGreedyTranslator(tmp_path / "onnx", threads=1)
    theirs = onnx.generate(batch["input_ids"].numpy(), batch["attention_mask"].numpy())
    assert theirs.tolist() == ours.tolist()
    texts = onnx.translate(["El gato negro duerme."], "es-en")
    assert texts == [tokenizer.decode(ours[0], skip_special_tokens=True).strip()]
