#!/usr/bin/env python3
"""Reference scores ("goldens") for the Rust cross-encoder (datasets/src/embed/cross_encoder.rs).

What it makes (everything under datasets/tests/fixtures/ce/, which it deletes and rewrites):

    bert/ bert-2labels/ xlm-roberta/
                        three tiny seeded cross-encoder directories exactly as
                        `CrossEncoder.save_pretrained` of sentence-transformers 6.3 writes them
                        (modules.json with one Transformer, sentence_bert_config.json,
                        config_sentence_transformers.json with `activation_fn`, config.json with
                        `*ForSequenceClassification`, model.safetensors with `bert.` / `roberta.`
                        prefixes and the classification head), on the trunks' configurations and
                        tokenizers of datasets/tests/fixtures/st/ (hidden 32, 2 layers, 4 heads),
                        with model_max_length 32 so that long pairs are cut on both sides.
                        tokenizer.json is the st fixture's own (for XLM-RoBERTa the real-world form
                        with a lone Metaspace pre-tokenizer, which transformers 5 replaces).
                        bert: one label; bert-2labels: two labels named `irrelevant`, `relevant`.
    goldens.json        a JSON list of cases. A case names its `base`, the files to write over a
                        copy of it (`files`: relative path -> JSON content), the files to delete
                        (`remove`), the `label` to score (null: the only one), its `pairs`
                        (query, passage), what sentence-transformers tokenised (`input_ids`,
                        `token_type_ids`, padding removed), the raw `logits` (every label) and the
                        `scores` `CrossEncoder.predict` returned for that label (float32 values
                        written as exact decimals), the `activation`, `num_labels`, `max_length`.
    minilm-head.safetensors
                        a seeded classification head for the real all-MiniLM-L6-v2 trunk:
                        `pooler.dense.{weight,bias}` [384, 384] / [384] and
                        `classifier.{weight,bias}` [1, 384] / [1], stored as float16 (values drawn
                        in float32 and rounded to float16, so the float32 checkpoint assembled
                        from them holds exactly these numbers) to keep the file at 300 KB.
    minilm_goldens.json the same fields for a checkpoint assembled at test time from the installed
                        trunk (models/all-MiniLM-L6-v2, not committed: 90 MB) and that head, in the
                        layout of a Hugging Face cross-encoder (no modules.json; config.json with
                        `BertForSequenceClassification` and `sentence_transformers.activation_fn`;
                        the trunk's tensors under `bert.`, its pooler replaced by the seeded one,
                        `embeddings.position_ids` left out). `assembly` says how; the Rust test
                        does the same and is skipped when the trunk is not installed.

The pairs cover a short pair, long pairs (the passage alone cut, the query alone cut, both cut by
`longest_first`), unicode, an empty passage, an empty query, and leading/trailing/inner whitespace
(`CrossEncoder.predict` does not strip its texts: the text goes to the tokenizer as given; for these
tokenizers, as transformers 5 builds them, whitespace around words does not change the tokens,
which the pair `whitespace` vs `whitespace-stripped` shows).

Each case's logits are also recomputed here from the encoder's hidden states with the documented
head (BERT: classifier(tanh(pooler.dense(h[:, 0]))); XLM-RoBERTa: out_proj(tanh(dense(h[:, 0])))),
in float64, and must agree with the model's (< 2e-5).

How to run (needs torch, transformers, sentence-transformers, tokenizers, numpy; CPU is enough):

    HF_HUB_OFFLINE=1 /work/venv-st/bin/python scripts/ce_goldens.py            # write everything
    HF_HUB_OFFLINE=1 /work/venv-st/bin/python scripts/ce_goldens.py --verify   # re-score, compare

It is deterministic (fixed seeds, one torch thread) and re-runnable. --verify rebuilds every case
from the written fixture files exactly as the Rust test does and requires a zero difference. CI does
NOT run this script (CI has no torch): its outputs are committed, and the Rust test compares
against them (1e-5 per score).

Written against sentence-transformers 6.3.0, transformers 5.25.0, tokenizers 0.23.3, torch 2.15.0;
/work/st-semantics.md section 7 documents the semantics these goldens pin down.
"""

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

import sentence_transformers  # noqa: E402
import transformers  # noqa: E402
from sentence_transformers import CrossEncoder  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "datasets" / "tests" / "fixtures" / "ce"
ST_FIXTURES = ROOT / "datasets" / "tests" / "fixtures" / "st"
MINILM = Path(os.environ.get("CE_MINILM_TRUNK", ROOT / "models" / "all-MiniLM-L6-v2"))

MAX_LENGTH = 32  # model_max_length of the tiny fixtures: long pairs are cut on both sides

SIGMOID = "torch.nn.modules.activation.Sigmoid"
IDENTITY = "torch.nn.modules.linear.Identity"
TANH = "torch.nn.modules.activation.Tanh"
RELU = "torch.nn.modules.activation.ReLU"

# ---------------------------------------------------------------------------------------------
# Pairs
# ---------------------------------------------------------------------------------------------

LONG_PASSAGE = (
    "The old city grew along the river for many centuries, and its people built bridges, "
    "markets and churches that still stand today. Traders came from the north and the south "
    "to sell wine, salt and cloth, while the river carried boats to the sea."
)
LONG_QUERY = (
    "which old city along the river had people who built bridges and markets and churches, "
    "where traders came from the north and the south to sell wine and salt"
)

PAIRS = [
    ("short", "how do cats sleep at night", "Cats sleep for most of the day and hunt at night."),
    ("long-passage", "What is the capital of France?", LONG_PASSAGE),
    ("long-query", LONG_QUERY, "Paris is the capital and the largest city of France."),
    ("long-both", LONG_QUERY, LONG_PASSAGE),
    ("unicode", "Café in MÜNCHEN: crème brûlée?", "THE Café serves CRÈME brûlée in München."),
    ("unknown-pieces", "zyxqwv snow\u2603man", "ok"),
    ("empty-passage", "What is the capital of France?", ""),
    ("empty-query", "", "Paris is the capital and the largest city of France."),
    ("whitespace", "   leading and trailing spaces   ", "\tTabs and  double  spaces\n here "),
    ("whitespace-stripped", "leading and trailing spaces", "Tabs and double spaces here"),
]

MINILM_LONG = " ".join(
    [
        "Sentence embeddings map a piece of text to a fixed-size vector so that texts with similar "
        "meanings end up close to one another.",
        "A transformer reads the tokens of the text, every layer mixing information between the "
        "positions through attention, and a pooling step turns the token vectors into one vector.",
    ]
    * 9
)  # about 400 word pieces: with a query of about 300, longest_first cuts both to fit 512

MINILM_PAIRS = [
    ("short", "how do cats sleep at night", "Cats sleep for most of the day and hunt at night."),
    ("relevant", "What is the capital of France?", "Paris is the capital and the largest city of France."),
    ("irrelevant", "What is the capital of France?", "Cats sleep for most of the day and hunt at night."),
    ("long-passage", "what does a pooling step do", MINILM_LONG),
    ("long-both", MINILM_LONG[: len(MINILM_LONG) * 3 // 4], MINILM_LONG),
    ("unicode", "Café in MÜNCHEN: crème brûlée?", "THE Café serves CRÈME brûlée in München, zyxqwv snow\u2603man."),
    ("empty-passage", "What is the capital of France?", ""),
    ("whitespace", "  What is the capital\tof France?  ", "\nParis  is the capital.\n"),
]

# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def write_json(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def dumps_compact(obj, level=0):
    """Indented JSON whose lists of numbers (a token id list, the logits) each sit on one line."""
    pad = "  " * (level + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {dumps_compact(v, level + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * level + "}"
    if isinstance(obj, list):
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in obj):
            return json.dumps(obj)
        if not obj:
            return "[]"
        return "[\n" + ",\n".join(pad + dumps_compact(x, level + 1) for x in obj) + "\n" + "  " * level + "]"
    return json.dumps(obj, ensure_ascii=False)


def write_compact(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        f.write(dumps_compact(obj))
        f.write("\n")
    assert json.loads(path.read_text(encoding="utf-8")) == obj


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def f32_list(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64).tolist()


def init_weights(model, seed):
    """Seeded weights, large enough that the scores spread over the activation's range."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "LayerNorm" in name:
                if name.endswith("weight"):
                    p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
                else:
                    p.copy_(0.2 * torch.randn(p.shape, generator=g))
            elif "embeddings" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))


# ---------------------------------------------------------------------------------------------
# Tiny base directories
# ---------------------------------------------------------------------------------------------

BASES = {
    # name: (st fixture trunk, model class, labels, seed)
    "bert": ("bert", transformers.BertForSequenceClassification, ["LABEL_0"], 1101),
    "bert-2labels": ("bert", transformers.BertForSequenceClassification, ["irrelevant", "relevant"], 1202),
    "xlm-roberta": ("xlm-roberta", transformers.XLMRobertaForSequenceClassification, ["LABEL_0"], 1303),
}


def make_base(name):
    """A seeded cross-encoder on the st fixture's trunk configuration and tokenizer, saved by
    CrossEncoder.save_pretrained (the sentence-transformers 6.3 layout)."""
    trunk, cls, labels, seed = BASES[name]
    src = ST_FIXTURES / trunk
    cfg_dict = json.loads((src / "config.json").read_text(encoding="utf-8"))
    cfg = type(transformers.AutoConfig.for_model(cfg_dict["model_type"])).from_dict(cfg_dict)
    cfg.architectures = [cls.__name__]
    cfg.id2label = dict(enumerate(labels))
    cfg.label2id = {label: i for i, label in enumerate(labels)}
    torch.manual_seed(seed)
    model = cls(cfg)
    init_weights(model, seed)
    model.eval()
    out = FIXTURES / name
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model.save_pretrained(tmp, safe_serialization=True)
        for f in ["tokenizer.json", "special_tokens_map.json"]:
            shutil.copy(src / f, tmp / f)
        tok_cfg = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
        tok_cfg["model_max_length"] = MAX_LENGTH
        write_json(tmp / "tokenizer_config.json", tok_cfg)
        ce = CrossEncoder(str(tmp), device="cpu")
        assert ce.num_labels == len(labels), (name, ce.num_labels)
        ce.save_pretrained(str(out))
    # the st fixture's tokenizer.json, in the form real models ship it (not transformers' rebuild)
    shutil.copy(src / "tokenizer.json", out / "tokenizer.json")
    for p in out.iterdir():
        if p.name == "README.md":
            p.unlink()


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------


def st_config(activation):
    """config_sentence_transformers.json as sentence-transformers 6.3 writes it for a CrossEncoder."""
    return {
        "__version__": {"pytorch": "2.15.0", "sentence_transformers": "6.3.0", "transformers": "5.25.0"},
        "activation_fn": activation,
        "default_prompt_name": None,
        "model_type": "CrossEncoder",
        "prompts": {},
    }


def base_config(base, **extra):
    cfg = json.loads((FIXTURES / base / "config.json").read_text(encoding="utf-8"))
    cfg.update(extra)
    return cfg


LEGACY = ["modules.json", "sentence_bert_config.json", "config_sentence_transformers.json"]


def cases():
    def case(name, base, description, files=None, remove=None, label=None):
        return {"name": name, "base": base, "description": description, "files": files or {}, "remove": remove or [], "label": label}

    return [
        case("bert-sigmoid", "bert", "sentence-transformers 6.3 layout, one label: the saved activation_fn Sigmoid"),
        case(
            "bert-identity",
            "bert",
            "one label, config_sentence_transformers.json activation_fn Identity: the raw logit",
            files={"config_sentence_transformers.json": st_config(IDENTITY)},
        ),
        case(
            "bert-2labels-relevant",
            "bert-2labels",
            "two labels (saved activation_fn Identity), scored by the label named `relevant`",
            label="relevant",
        ),
        case(
            "bert-2labels-index-0",
            "bert-2labels",
            "two labels, scored by the label at index 0 (`irrelevant`)",
            label="0",
        ),
        case("xlm-roberta-sigmoid", "xlm-roberta", "XLM-RoBERTa head (classifier.dense, classifier.out_proj), one label, Sigmoid"),
        case(
            "bert-legacy-config-tanh",
            "bert",
            "no modules.json (a Hugging Face cross-encoder): config.json sentence_transformers.activation_fn Tanh (what sentence-transformers 4/5 saved)",
            files={"config.json": base_config("bert", sentence_transformers={"activation_fn": TANH, "version": "4.0.1"})},
            remove=LEGACY,
        ),
        case(
            "bert-2labels-legacy-sbert-ce-relu",
            "bert-2labels",
            "no modules.json: config.json sbert_ce_default_activation_function ReLU (what sentence-transformers < 4 saved), label `relevant` (some logits negative)",
            files={"config.json": base_config("bert-2labels", sbert_ce_default_activation_function=RELU)},
            remove=LEGACY,
            label="relevant",
        ),
        case(
            "bert-legacy-st-config-ignored",
            "bert",
            "no modules.json but a config_sentence_transformers.json saying Identity: sentence-transformers reads that file only through modules.json, so the default Sigmoid applies",
            files={"config_sentence_transformers.json": st_config(IDENTITY)},
            remove=["modules.json", "sentence_bert_config.json"],
        ),
        case(
            "bert-max-seq-length-24",
            "bert",
            "sentence_bert_config.json max_seq_length 24 (read through modules.json) replaces model_max_length 32",
            files={
                "sentence_bert_config.json": {
                    "transformer_task": "sequence-classification",
                    "max_seq_length": 24,
                    "modality_config": {"text": {"method": "forward", "method_output_name": "logits"}},
                    "module_output_name": "scores",
                }
            },
        ),
        case(
            "bert-default-prompt",
            "bert",
            "config_sentence_transformers.json default_prompt_name: predict puts that prompt before each query (not the passage)",
            files={"config_sentence_transformers.json": dict(st_config(SIGMOID), prompts={"rerank": "rerank: "}, default_prompt_name="rerank")},
        ),
    ]


def materialise(c, dest, base_dir=None):
    """What the Rust test does: copy the base directory, delete `remove`, write `files` over it."""
    shutil.copytree(base_dir or FIXTURES / c["base"], dest)
    for rel in c.get("remove", []):
        (dest / rel).unlink()
    for rel, content in c["files"].items():
        write_json(dest / rel, content)


# ---------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------


def label_index(model, label):
    if label is None:
        assert model.num_labels == 1
        return 0
    names = [model.config.id2label[i] for i in range(model.num_labels)]
    return names.index(label) if label in names else int(label)


def tokenised(model, pairs):
    f = model.preprocess([list(p) for p in pairs], prompt=model._resolve_prompt(None, None))
    ids = [row[mask.bool()].tolist() for row, mask in zip(f["input_ids"], f["attention_mask"])]
    if "token_type_ids" in f:
        types = [row[mask.bool()].tolist() for row, mask in zip(f["token_type_ids"], f["attention_mask"])]
    else:
        types = [[0] * len(i) for i in ids]
    return ids, types


def score(model, pairs, label):
    texts = [list(p) for p in pairs]
    s = model.predict(texts, batch_size=4, convert_to_numpy=True, show_progress_bar=False)
    logits = model.predict(texts, batch_size=4, convert_to_numpy=True, show_progress_bar=False, activation_fn=torch.nn.Identity())
    assert s.dtype == np.float32
    if model.num_labels == 1:
        assert s.ndim == 1
        s, logits = s[:, None], logits[:, None]
    return s[:, label_index(model, label)], logits


@torch.no_grad()
def check_head(model, pairs, logits):
    """The documented head, in float64, from the encoder's last hidden states."""
    hf = model[0].model
    f = model.preprocess([list(p) for p in pairs], prompt=model._resolve_prompt(None, None))
    if isinstance(hf, transformers.BertForSequenceClassification):
        h = hf.bert(**{k: v for k, v in f.items() if k in ("input_ids", "attention_mask", "token_type_ids")}).last_hidden_state
        cls = h[:, 0].double()
        pooled = torch.tanh(cls @ hf.bert.pooler.dense.weight.double().T + hf.bert.pooler.dense.bias.double())
        manual = pooled @ hf.classifier.weight.double().T + hf.classifier.bias.double()
    else:
        h = hf.roberta(input_ids=f["input_ids"], attention_mask=f["attention_mask"]).last_hidden_state
        head = hf.classifier
        x = torch.tanh(h[:, 0].double() @ head.dense.weight.double().T + head.dense.bias.double())
        manual = x @ head.out_proj.weight.double().T + head.out_proj.bias.double()
    diff = float(np.abs(manual.numpy() - logits.astype(np.float64)).max())
    assert diff < 2e-5, diff


def activation_name(model):
    fn = model.activation_fn
    return f"{type(fn).__module__}.{type(fn).__name__}"


def run_case(c, work):
    d = work / c["name"]
    materialise(c, d)
    model = CrossEncoder(str(d), device="cpu")
    pairs = [(q, p) for _, q, p in PAIRS]
    scores, logits = score(model, pairs, c["label"])
    check_head(model, pairs, logits)
    ids, types = tokenised(model, pairs)
    out = dict(c)
    out.update(
        activation=activation_name(model),
        num_labels=model.num_labels,
        max_length=model.max_seq_length,
        pair_names=[n for n, _, _ in PAIRS],
        pairs=[list(p) for p in pairs],
        input_ids=ids,
        token_type_ids=types,
        logits=[f32_list(row) for row in logits],
        scores=f32_list(scores),
    )
    return out


# ---------------------------------------------------------------------------------------------
# The real MiniLM trunk with a seeded head
# ---------------------------------------------------------------------------------------------

MINILM_TRUNK_FILES = ["tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"]


def make_minilm_head():
    g = torch.Generator().manual_seed(4404)
    h = 384
    head = {
        "pooler.dense.weight": 0.1 * torch.randn(h, h, generator=g),
        "pooler.dense.bias": 0.1 * torch.randn(h, generator=g),
        "classifier.weight": 0.15 * torch.randn(1, h, generator=g),
        "classifier.bias": 0.1 * torch.randn(1, generator=g),
    }
    save_file({k: v.half().contiguous() for k, v in head.items()}, str(FIXTURES / "minilm-head.safetensors"), metadata={"format": "pt"})


def minilm_config():
    cfg = json.loads((MINILM / "config.json").read_text(encoding="utf-8"))
    cfg["architectures"] = ["BertForSequenceClassification"]
    cfg["id2label"] = {"0": "LABEL_0"}
    cfg["label2id"] = {"LABEL_0": 0}
    cfg["sentence_transformers"] = {"activation_fn": SIGMOID, "version": "4.0.1"}
    return cfg


def assemble_minilm(dest, files):
    """What the Rust test does: the trunk's tokenizer files, the case's config.json, and a
    model.safetensors of the trunk's tensors under `bert.` (without its pooler and position ids)
    and the head's, in float32."""
    dest.mkdir(parents=True)
    for f in MINILM_TRUNK_FILES:
        shutil.copy(MINILM / f, dest / f)
    for rel, content in files.items():
        write_json(dest / rel, content)
    trunk = load_file(str(MINILM / "model.safetensors"))
    tensors = {f"bert.{k}": v for k, v in trunk.items() if not k.startswith("pooler.") and k != "embeddings.position_ids"}
    for k, v in load_file(str(FIXTURES / "minilm-head.safetensors")).items():
        tensors[k if k.startswith("classifier.") else f"bert.{k}"] = v.float().contiguous()
    save_file(tensors, str(dest / "model.safetensors"), metadata={"format": "pt"})


def minilm_goldens(work):
    if not (MINILM / "model.safetensors").exists():
        print(f"skipping the MiniLM trunk: not installed at {MINILM}", file=sys.stderr)
        return None
    make_minilm_head()
    files = {"config.json": minilm_config()}
    d = work / "minilm-ce"
    assemble_minilm(d, files)
    model = CrossEncoder(str(d), device="cpu")
    assert model.max_seq_length == 512, model.max_seq_length
    pairs = [(q, p) for _, q, p in MINILM_PAIRS]
    scores, logits = score(model, pairs, None)
    check_head(model, pairs, logits)
    ids, types = tokenised(model, pairs)
    long_both = ids[[n for n, _, _ in MINILM_PAIRS].index("long-both")]
    assert len(long_both) == 512, len(long_both)
    return {
        "name": "all-MiniLM-L6-v2-seeded-head",
        "trunk": "all-MiniLM-L6-v2",
        "trunk_model_safetensors_sha256": sha256(MINILM / "model.safetensors"),
        "head": "minilm-head.safetensors",
        "assembly": "trunk files " + ", ".join(MINILM_TRUNK_FILES) + "; config.json from `files`; model.safetensors = every trunk tensor but pooler.* and embeddings.position_ids, under `bert.`, + the head as float32 (pooler.dense.* under `bert.`, classifier.* as is)",
        "trunk_files": MINILM_TRUNK_FILES,
        "files": files,
        "label": None,
        "activation": activation_name(model),
        "num_labels": model.num_labels,
        "max_length": model.max_seq_length,
        "pair_names": [n for n, _, _ in MINILM_PAIRS],
        "pairs": [list(p) for p in pairs],
        "input_ids": ids,
        "token_type_ids": types,
        "logits": [f32_list(row) for row in logits],
        "scores": f32_list(scores),
    }


# ---------------------------------------------------------------------------------------------


def fixture_size():
    return sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file())


def write_all():
    torch.set_num_threads(1)
    if FIXTURES.exists():
        shutil.rmtree(FIXTURES)
    FIXTURES.mkdir(parents=True)
    for name in BASES:
        make_base(name)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for c in cases():
            r = run_case(c, work)
            results.append(r)
            lengths = [len(i) for i in r["input_ids"]]
            print(f"{r['name']}: {r['activation']}, {r['num_labels']} labels, max_length {r['max_length']}, tokens {lengths}, scores {np.round(r['scores'], 4).tolist()}")
        write_compact(FIXTURES / "goldens.json", results)
        minilm = minilm_goldens(work)
        if minilm:
            write_compact(FIXTURES / "minilm_goldens.json", minilm)
            print(f"{minilm['name']}: tokens {[len(i) for i in minilm['input_ids']]}, scores {np.round(minilm['scores'], 4).tolist()}")
    print(f"fixtures: {fixture_size()} bytes in {FIXTURES.relative_to(ROOT)}")


def verify():
    torch.set_num_threads(1)
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for c in json.loads((FIXTURES / "goldens.json").read_text(encoding="utf-8")):
            d = work / c["name"]
            materialise(c, d)
            model = CrossEncoder(str(d), device="cpu")
            scores, _ = score(model, [tuple(p) for p in c["pairs"]], c["label"])
            diff = float(np.abs(scores - np.asarray(c["scores"], dtype=np.float32)).max())
            worst = max(worst, diff)
            if diff != 0.0:
                print(f"{c['name']}: max diff {diff}")
        path = FIXTURES / "minilm_goldens.json"
        if path.exists() and (MINILM / "model.safetensors").exists():
            m = json.loads(path.read_text(encoding="utf-8"))
            d = work / "minilm-ce"
            assemble_minilm(d, m["files"])
            model = CrossEncoder(str(d), device="cpu")
            scores, _ = score(model, [tuple(p) for p in m["pairs"]], None)
            diff = float(np.abs(scores - np.asarray(m["scores"], dtype=np.float32)).max())
            worst = max(worst, diff)
    print(f"verified: worst difference {worst}")
    if worst != 0.0:
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--verify", action="store_true", help="re-score from the written fixtures and compare (no writing)")
    args = ap.parse_args()
    print(f"sentence-transformers {sentence_transformers.__version__}, transformers {transformers.__version__}, torch {torch.__version__}")
    if args.verify:
        verify()
    else:
        write_all()


if __name__ == "__main__":
    main()
