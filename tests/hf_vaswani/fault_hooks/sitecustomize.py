"""Test instrumentation for `hf-vaswani train` subprocesses, loaded by putting this folder on PYTHONPATH.

Python imports ``sitecustomize`` at start-up, so the real ``hf-vaswani`` command (or ``torchrun -m
hf_vaswani.cli``) runs with these hooks, each switched on by an environment variable:

* ``HF_VASWANI_TEST_PAUSE_AT_STEP=N`` and ``HF_VASWANI_TEST_PAUSE_FILE=PATH``: while the checkpoint of step N
  is being written (model, optimizer and RNG states already on disk, ``trainer_state.json`` not yet), write
  the folder being written to PATH and sleep, so that a test can kill the process in the middle of a save.
* ``HF_VASWANI_TEST_HASH_DIR=DIR``: when a process of a (distributed) run finishes training, it writes the
  SHA-256 of its own copy of the weights to ``DIR/rank{RANK}.txt``.
* ``HF_VASWANI_TEST_PAUSE_IN_AVERAGING=PATH``: while the averaged model is being written (config and tokenizer
  copied, weights not yet), write the folder being written to PATH and sleep, so that a test can kill the
  process in the middle of the averaging.
"""

import hashlib
import os


def weights_sha256(state_dict) -> str:
    """SHA-256 of a state dict: names in order, values as float32 bytes."""
    digest = hashlib.sha256()
    for name, tensor in sorted(state_dict.items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().float().contiguous().numpy().tobytes())
    return digest.hexdigest()


_PAUSE_AT = os.environ.get("HF_VASWANI_TEST_PAUSE_AT_STEP")
_HASH_DIR = os.environ.get("HF_VASWANI_TEST_HASH_DIR")
# Only the processes that train: not torchrun's launcher (which has no LOCAL_RANK) in a distributed run.
_TRAINS = _PAUSE_AT or (_HASH_DIR and os.environ.get("LOCAL_RANK") is not None)

if _TRAINS:
    import time
    from pathlib import Path

    from hf_vaswani import training

    if _PAUSE_AT:
        _save_rng_state = training.VaswaniTrainer._save_rng_state

        def _pausing_save_rng_state(self, output_dir):
            _save_rng_state(self, output_dir)
            if self.state.global_step == int(_PAUSE_AT):
                Path(os.environ["HF_VASWANI_TEST_PAUSE_FILE"]).write_text(str(output_dir), encoding="utf-8")
                time.sleep(600)

        training.VaswaniTrainer._save_rng_state = _pausing_save_rng_state

    if _HASH_DIR and os.environ.get("LOCAL_RANK") is not None:
        _train = training.VaswaniTrainer.train

        def _hashing_train(self, *args, **kwargs):
            result = _train(self, *args, **kwargs)
            text = f"{weights_sha256(self.model.state_dict())} {self.state.global_step}\n"
            Path(_HASH_DIR, f"rank{self.args.process_index}.txt").write_text(text, encoding="utf-8")
            return result

        training.VaswaniTrainer.train = _hashing_train

_PAUSE_IN_AVERAGING = os.environ.get("HF_VASWANI_TEST_PAUSE_IN_AVERAGING")

if _PAUSE_IN_AVERAGING:
    import time
    from pathlib import Path

    from hf_vaswani.training import averaging

    _copy_model_files = averaging._copy_model_files

    def _pausing_copy_model_files(checkpoint, out_dir):
        _copy_model_files(checkpoint, out_dir)
        Path(_PAUSE_IN_AVERAGING).write_text(str(out_dir), encoding="utf-8")
        time.sleep(600)

    averaging._copy_model_files = _pausing_copy_model_files
