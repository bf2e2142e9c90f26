"""Saving and loading: safetensors round trips, trust_remote_code without our package, Hub cache layout offline,
foreign and corrupt checkpoints, and fine-tuning through Seq2SeqTrainer."""

import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from transformers import (
    AutoModelForSeq2SeqLM,
    BertConfig,
    BertModel,
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
)

from hf_vaswani import VaswaniForConditionalGeneration
from tests.helpers import run_without_our_packages, tiny_config


def saved_model(tmp_path: Path, **overrides) -> tuple[VaswaniForConditionalGeneration, Path]:
    torch.manual_seed(0)
    model = VaswaniForConditionalGeneration(tiny_config(**overrides)).eval()
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    return model, folder


@pytest.mark.parametrize("overrides", [{}, dict(position_encoding="learned", layer_norm_position="pre")])
def test_save_pretrained_round_trip_gives_identical_logits(tmp_path, source_batch, overrides):
    model, folder = saved_model(tmp_path, **overrides)
    assert (folder / "model.safetensors").exists()
    assert not list(folder.glob("*.bin"))
    loaded = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    assert type(loaded) is VaswaniForConditionalGeneration
    input_ids, attention_mask = source_batch
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=torch.tensor([[1, 5], [1, 9]]))
    torch.testing.assert_close(loaded(**inputs).logits, model(**inputs).logits, atol=0, rtol=0)
    assert loaded.lm_head.weight is loaded.model.encoder.embed_tokens.weight


def test_save_writes_remote_code_and_auto_map(tmp_path):
    _, folder = saved_model(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "vaswani"
    assert config["auto_map"] == {
        "AutoConfig": "configuration_vaswani.VaswaniConfig",
        "AutoModel": "modeling_vaswani.VaswaniModel",  # the bare encoder-decoder, for bertviz and the like
        "AutoModelForSeq2SeqLM": "modeling_vaswani.VaswaniForConditionalGeneration",
    }
    assert (folder / "configuration_vaswani.py").exists()
    assert (folder / "modeling_vaswani.py").exists()


def test_half_precision_checkpoint_loads(tmp_path, source_batch):
    model, _ = saved_model(tmp_path)
    folder = tmp_path / "bf16"
    model.to(torch.bfloat16).save_pretrained(folder)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(folder, dtype=torch.float32).eval()
    assert loaded.lm_head.weight.dtype == torch.float32
    input_ids, attention_mask = source_batch
    out = loaded.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=3)
    assert out.shape[0] == 2


#: Run by `run_without_our_packages` (json and sys are imported).
REMOTE_CODE_SCRIPT = """
    import torch
    from transformers import AutoModelForSeq2SeqLM

    model = AutoModelForSeq2SeqLM.from_pretrained(sys.argv[1], trust_remote_code=True).eval()
    input_ids = torch.tensor(json.loads(sys.argv[2]))
    tokens = model.generate(input_ids=input_ids, max_new_tokens=6, num_beams=2)
    assert not any(m.split(".")[0] == "hf_vaswani" for m in sys.modules)
    print(json.dumps({"class": type(model).__name__, "tokens": tokens.tolist()}))
    """


def run_without_our_package(model_id: str, input_ids: torch.Tensor, env: dict) -> dict:
    return run_without_our_packages(REMOTE_CODE_SCRIPT, model_id, json.dumps(input_ids.tolist()), env=env)


@pytest.mark.slow
def test_trust_remote_code_in_fresh_process_without_our_package(tmp_path, source_batch):
    model, folder = saved_model(tmp_path)
    input_ids, _ = source_batch
    expected = model.generate(input_ids=input_ids, max_new_tokens=6, num_beams=2).tolist()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home")}
    result = run_without_our_package(str(folder), input_ids, env)
    assert result == {"class": "VaswaniForConditionalGeneration", "tokens": expected}


@pytest.mark.slow
def test_load_by_hub_id_from_offline_cache(tmp_path, source_batch):
    """Lay the files out as huggingface_hub's cache does (models--org--name/snapshots/<commit>, refs/main)."""
    model, folder = saved_model(tmp_path)
    commit = "0123456789abcdef0123456789abcdef01234567"
    cache = tmp_path / "hf_home" / "hub"
    repo = cache / "models--someone--vaswani-tiny"
    shutil.copytree(folder, repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    input_ids, _ = source_batch
    expected = model.generate(input_ids=input_ids, max_new_tokens=6, num_beams=2).tolist()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home")}
    result = run_without_our_package("someone/vaswani-tiny", input_ids, env)
    assert result["tokens"] == expected


def test_checkpoint_of_another_model_type_is_refused(tmp_path):
    folder = tmp_path / "bert"
    BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2)).save_pretrained(
        folder
    )
    with pytest.raises(ValueError, match="'bert' model, not a 'vaswani' one"):
        VaswaniForConditionalGeneration.from_pretrained(folder)


def test_corrupt_checkpoint_fails_loudly(tmp_path):
    _, folder = saved_model(tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])
    with pytest.raises(Exception, match="(?i)(safetensors|deserializ|header|incomplete|invalid)"):
        VaswaniForConditionalGeneration.from_pretrained(folder)


def test_mismatched_config_and_weights_fail_loudly(tmp_path):
    _, folder = saved_model(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["d_model"] = 64
    config["encoder_ffn_dim"] = 128
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(RuntimeError, match="(?i)size mismatch|mismatched"):
        VaswaniForConditionalGeneration.from_pretrained(folder)


# ----------------------------------------------------------------------------------------------------------------
# Fine-tuning through Seq2SeqTrainer on a synthetic reverse task
# ----------------------------------------------------------------------------------------------------------------


class ReverseTask(torch.utils.data.Dataset):
    """Source: random ids then </s>; target: the same ids reversed then </s>."""

    def __init__(self, size: int, seed: int):
        generator = torch.Generator().manual_seed(seed)
        self.items = []
        for _ in range(size):
            length = int(torch.randint(3, 7, (1,), generator=generator))
            ids = torch.randint(6, 20, (length,), generator=generator).tolist()
            self.items.append({"input_ids": ids + [2], "labels": ids[::-1] + [2]})

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict:
        return self.items[index]


def pad_batch(features: list[dict]) -> dict:
    def pad(key, value):
        width = max(len(f[key]) for f in features)
        return torch.tensor([f[key] + [value] * (width - len(f[key])) for f in features])

    input_ids = pad("input_ids", 0)
    return {"input_ids": input_ids, "attention_mask": (input_ids != 0).long(), "labels": pad("labels", -100)}


@pytest.mark.slow
def test_seq2seq_trainer_reduces_loss_and_predicts_with_generate(tmp_path):
    torch.manual_seed(0)
    model = VaswaniForConditionalGeneration(tiny_config(vocab_size=24, label_smoothing=0.0))
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=16,
        per_device_eval_batch_size=16,
        gradient_accumulation_steps=2,
        learning_rate=3e-3,
        max_steps=60,
        logging_steps=10,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        predict_with_generate=True,
        generation_max_length=10,
        generation_num_beams=2,
        disable_tqdm=True,
    )
    trainer = Seq2SeqTrainer(
        model=model,
        args=args,
        train_dataset=ReverseTask(512, seed=0),
        eval_dataset=ReverseTask(16, seed=1),
        data_collator=pad_batch,
    )
    before = trainer.evaluate()["eval_loss"]
    trainer.train()
    after = trainer.evaluate()["eval_loss"]
    assert after < 0.7 * before, (before, after)
    prediction = trainer.predict(ReverseTask(8, seed=2))
    assert prediction.predictions.shape[0] == 8
    assert (prediction.predictions[:, 0] == model.config.decoder_start_token_id).all()
