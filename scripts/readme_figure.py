"""Draw the README's first picture from the shipped checkpoint: "el gato negro" translated, its words aligned by the
model's aligner (lines between the sentences, the course's picture) and its attention as a heatmap.

    python scripts/readme_figure.py --out docs/images/el-gato-negro.png
"""

import argparse
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hf_vaswani.inference import load_translator
from vaswani_inspect import alignment_matrix, extract, source_words, target_words
from vaswani_inspect.plots import plot_alignment_links


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="pretrained/vaswani-tatoeba-es-en")
    parser.add_argument("--sentence", default="el gato negro")
    parser.add_argument("--out", type=Path, default=Path("docs/images/el-gato-negro.png"))
    args = parser.parse_args()

    model, tokenizer = load_translator(args.model, device="cpu")
    record = extract(model, tokenizer, args.sentence, direction="es-en")
    links = plot_alignment_links(record, skip_punctuation=True)
    matrix = alignment_matrix(record, skip_punctuation=True)  # the model's aligner, as the lines

    figure = Figure(figsize=(9.0, 2.8), dpi=110)
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1.5, 1.0]})
    links.canvas.draw()
    left.imshow(np.asarray(links.canvas.buffer_rgba()))
    left.set_axis_off()
    left.set_title("word alignment", fontsize=10)
    right.imshow(matrix, cmap="Blues", vmin=0.0, vmax=1.0)
    right.set_xticks(range(len(source_words(record))), source_words(record))
    right.set_yticks(range(len(target_words(record))), target_words(record))
    right.set_title("the same heads' cross-attention", fontsize=10)
    figure.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out)
    print(args.out)


if __name__ == "__main__":
    main()
