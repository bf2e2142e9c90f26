"""Without decoder inputs, the model's error names what the decoder takes (issue 27: it named ``input_ids``, which
the caller had passed): ``decoder_input_ids``, ``decoder_inputs_embeds`` or ``labels``."""

import os

import pytest
import torch

from hf_vaswani import VaswaniForConditionalGeneration
from tests.helpers import CHECKPOINT, run_without_our_packages, tiny_config

MESSAGE = "Pass exactly one of decoder_input_ids and decoder_inputs_embeds, or labels"


def test_the_missing_decoder_input_error_names_the_decoder_inputs_and_labels():
    model = VaswaniForConditionalGeneration(tiny_config()).eval()
    input_ids = torch.tensor([[4, 10, 11, 2]])
    with pytest.raises(ValueError, match=MESSAGE):
        model(input_ids=input_ids)
    with pytest.raises(ValueError, match=MESSAGE):  # both at once
        model(input_ids=input_ids, decoder_input_ids=input_ids, decoder_inputs_embeds=torch.zeros(1, 4, 32))
    assert model(input_ids=input_ids, labels=torch.tensor([[10, 2]])).loss is not None


@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="the shipped checkpoint is not in this checkout")
def test_the_shipped_remote_code_gives_the_same_error(tmp_path):
    script = """
        import torch
        from transformers import AutoModelForSeq2SeqLM

        model = AutoModelForSeq2SeqLM.from_pretrained(sys.argv[1], trust_remote_code=True)
        try:
            model(input_ids=torch.tensor([[4, 10, 2]]))
        except ValueError as error:
            print(json.dumps(str(error)))
        """
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home"), "OMP_NUM_THREADS": "1"}
    assert MESSAGE in run_without_our_packages(script, str(CHECKPOINT), env=env)
