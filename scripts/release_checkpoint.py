"""Turn a finished training run into the shipped, Hub-ready checkpoint folder.

    python scripts/release_checkpoint.py runs/tatoeba-es-en-align --out pretrained/vaswani-tatoeba-es-en \
        --alignment-json runs/align-eval-es-en.json runs/align-eval-en-es.json

Takes `RUN/averaged` (the average of the last checkpoints, sec. 6.1), stores its weights in bfloat16 (loaded in
float32, `hf_vaswani.model_folder.finish_model_folder`), scores the model exactly as users will load it on the run's
own test split (both directions, beam search, sacrebleu defaults), translates the course examples, and writes the
folder: weights, config, generation config, tokenizer, modeling code and translation pipeline for
`trust_remote_code`, `eval_results.json` (with the alignment scores of `hf-vaswani align-eval --json`, when given),
`training_curves.png` and the model card (`README.md`).
"""

import argparse
import json
import platform
import shutil
import time
from pathlib import Path

import torch
from transformers import GenerationConfig

import hf_vaswani  # noqa: F401  (registers the model with the Auto classes, so save_pretrained writes the code)
from hf_vaswani.inference import evaluate_file, load_translator, translate
from hf_vaswani.model_card import write_model_card
from hf_vaswani.model_folder import finish_model_folder
from hf_vaswani.training import find_checkpoints
from vaswani_inspect.training_curves import plot_training_curves

COURSE_EXAMPLES = [
    ("es-en", "el gato negro"),
    ("es-en", "el gato negro duerme"),
    ("es-en", "Tengo un gato negro."),
    ("en-es", "The cat ate the mouse."),
    ("es-en", "El gato se comió el ratón."),
    ("es-en", "El banco aprobó el crédito"),
    ("es-en", "Me senté en el banco de la plaza"),
]


def run_facts(run: Path) -> dict:
    """Steps, wall time and batch facts read from the run's log and configuration."""
    import yaml

    events = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines() if line.strip()]
    # The shipped weights end at the last averaged checkpoint, not at the last logged step.
    averaged = json.loads((run / "averaged" / "averaged_from.json").read_text())["checkpoints"]
    steps = max(int(Path(path).name.rsplit("-", 1)[1]) for path in averaged)
    events = [event for event in events if event.get("step", 0) <= steps]
    # Wall time of the updates: sum of the gaps between consecutive log events, leaving out restarts (> 10 min).
    times = [event["time"] for event in events if "time" in event]
    wall = sum(b - a for a, b in zip(times, times[1:]) if 0 < b - a < 600)
    config = yaml.safe_load((run / "config.yaml").read_text())
    phrases = run / "splits" / "noun_phrases.tsv"
    n_phrases = len(phrases.read_text(encoding="utf-8").splitlines()) if phrases.is_file() else 0
    return {"steps": steps, "wall_seconds": wall, "config": config, "noun_phrases": n_phrases}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="the training run folder (output_dir of hf-vaswani train)")
    parser.add_argument("--out", type=Path, required=True, help="the folder to write")
    parser.add_argument("--model-id", default="hf-vaswani/vaswani-tatoeba-es-en", help="Hub id for the model card")
    parser.add_argument("--dtype", default="bfloat16", choices=("float32", "float16", "bfloat16"))
    parser.add_argument("--num-beams", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--limit", type=int, default=None, help="score only the first N test pairs (quick checks)")
    parser.add_argument("--summary", default=None, help="the model card's training summary (default: one stage)")
    parser.add_argument(
        "--alignment-json",
        nargs="*",
        type=Path,
        default=[],
        help="align-eval --json reports (one per direction) to record in eval_results.json",
    )
    parser.add_argument(
        "--data-note",
        default="",
        help="appended to the model card's data line, e.g. when a resumed run switched data options mid-way",
    )
    args = parser.parse_args()

    averaged = args.run / "averaged"
    model, tokenizer = load_translator(averaged, dtype="float32")
    staged = args.out.with_name(args.out.name + ".tmp")
    shutil.rmtree(staged, ignore_errors=True)
    model.generation_config = GenerationConfig.from_pretrained(averaged)
    model.to(getattr(torch, args.dtype)).save_pretrained(staged)
    tokenizer.save_pretrained(staged)
    finish_model_folder(staged)

    shipped, tokenizer = load_translator(staged)  # as a user loads it: the stored dtype
    start = time.perf_counter()
    scores = evaluate_file(
        shipped, tokenizer, args.run / "splits" / "test.tsv", num_beams=args.num_beams,
        batch_size=args.batch_size, limit=args.limit,
    )  # fmt: skip
    eval_seconds = time.perf_counter() - start
    examples = [
        {"direction": d, "source": s, "translation": translate(shipped, tokenizer, [s], direction=d)[0]}
        for d, s in COURSE_EXAMPLES
    ]
    facts = run_facts(args.run)
    test_pairs = scores["es-en"]["sentences"]
    (staged / "eval_results.json").write_text(
        json.dumps(
            {
                "test_split": "splits/test.tsv of the training run (held out, never trained on)",
                "num_beams": args.num_beams,
                "weights_dtype": args.dtype,
                "scores": scores,
                "course_examples": examples,
                "eval_seconds": round(eval_seconds, 1),
                "alignment": {str(path.name): json.loads(path.read_text()) for path in args.alignment_json},
            },
            indent=2,
            ensure_ascii=False,
        )
    )
    last = find_checkpoints(args.run)[-1]
    plot_training_curves(last / "trainer_state.json", staged / "training_curves.png")

    config = facts["config"]
    training = config["training"]
    parameters = sum(p.numel() for p in shipped.parameters())
    write_model_card(
        staged,
        model_id=args.model_id,
        results=[{"direction": d, "bleu": scores[d]["bleu"], "chrf": scores[d]["chrf"]} for d in ("es-en", "en-es")],
        training={
            "summary": args.summary
            or (
                f"Trained from scratch with `hf-vaswani train configs/tatoeba-es-en.yaml` (hf-vaswani "
                f"{hf_vaswani.__version__}, torch {torch.__version__}) in bf16 autocast on a CPU."
            ),
            "data": (
                "Tatoeba English-Spanish pairs from manythings.org/anki (116,708 pairs, CC-BY 2.0 France), "
                "deduplicated and split by a hash of the sentences into train / "
                f"{config['data']['validation_size']} validation / {config['data']['test_size']} test pairs; "
                "both directions from the same pairs"
                + (
                    f"; plus {facts['noun_phrases']:,} noun-phrase pairs mined from the training split "
                    "(`data.noun_phrases`, e.g. 'un gato negro' / 'a black cat')"
                    if config["data"].get("noun_phrases")
                    else ""
                )
                + (
                    "; the same phrases again as sentences ('El gato negro.' / 'The black cat.')"
                    if config["data"].get("noun_phrase_sentences")
                    else ""
                )
                + (
                    f"; plus {config['data']['casual_copies']:.0%} of the training pairs again as users type them, "
                    "without final punctuation and lower-case initial except for 'I' and names (`data.casual_copies`)"
                    if config["data"].get("casual_copies")
                    else ""
                )
                + (f"; {args.data_note}" if args.data_note else "")
            ),
            "warmup": training["warmup_steps"],
            "steps": facts["steps"],
            "batch": f"{training['batch_size']} sentence pairs per update, grouped by length",
            "averaged": training["average_last"],
            "hardware": f"2 CPU cores ({platform.processor() or platform.machine()}), no GPU",
            "wall_time": f"{facts['wall_seconds'] / 3600:.1f} h of updates",
            "test_pairs": test_pairs,
            "num_beams": args.num_beams,
            "parameters": f"{parameters / 1e6:.1f}M",
            "weights_dtype": args.dtype,
        },
    )
    shutil.rmtree(args.out, ignore_errors=True)
    staged.rename(args.out)
    summary = {"out": str(args.out), "scores": scores, "course_examples": examples}
    print(json.dumps(summary, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
