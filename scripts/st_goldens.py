#!/usr/bin/env python3
"""Reference vectors ("goldens") for the Rust sentence-transformers embedder (datasets/src/embed/).

What it makes (everything under datasets/tests/fixtures/st/, which it deletes and rewrites):

    bert/ mpnet/ xlm-roberta/   three tiny seeded *base* model directories, one per architecture
                                (hidden 32, 2 layers, 4 heads, intermediate 37, 64 positions, a
                                vocabulary of a few hundred entries): config.json, model.safetensors
                                (written by transformers' save_pretrained), tokenizer.json (built
                                here with the `tokenizers` library), tokenizer_config.json,
                                special_tokens_map.json. No sentence-transformers file: a base
                                directory is a plain Hugging Face model.
    goldens.json                a JSON list of cases. A case names its `base`, the ST files to
                                write over a copy of it (`files`: relative path -> JSON content;
                                `binary_files`: relative path -> base64 bytes, used for the Dense
                                layer's 2_Dense/model.safetensors), its `queries` and `passages`,
                                the prompts applied (`query_prompt` / `passage_prompt`, null for
                                none), what sentence-transformers tokenised (`query_input_ids`,
                                `passage_input_ids`, `prompt_lengths`) and the vectors
                                `SentenceTransformer.encode` returned (`query_vectors`,
                                `passage_vectors`: float32 values written as exact decimals).
    real_goldens.json           the same vectors for the two real models installed under
                                /work/models-st (all-MiniLM-L6-v2, all-mpnet-base-v2), with the
                                sha256 of their model.safetensors; a test uses them only where the
                                model is installed and the hash matches.

Prompts follow the MTEB rule hopbench applies: queries get prompts["query"]; passages get
prompts["document"], else prompts["passage"]; a side with neither gets the prompt named by
default_prompt_name (if any). "Has" means the key is present in config_sentence_transformers.json
(an empty string there means: no prompt). The script passes the resolved prompt explicitly
(`encode(texts, prompt=...)`), never relying on encode_query/encode_document (whose own rule differs).

The case `bert-legacy-no-modules-json` writes no ST file at all; its expected vectors are
Transformer + Pooling(mean) + Normalize built explicitly, as hopbench defines a legacy directory.
(A bare `SentenceTransformer(dir)` in sentence-transformers 6.3 gives the same direction WITHOUT
the L2 normalisation; the script checks that too.)

How to run (needs torch, transformers, sentence-transformers, tokenizers, numpy; CPU is enough):

    HF_HUB_OFFLINE=1 /work/venv-st/bin/python scripts/st_goldens.py            # write everything
    HF_HUB_OFFLINE=1 /work/venv-st/bin/python scripts/st_goldens.py --verify   # re-encode, compare

It is deterministic (fixed seeds, one torch thread) and re-runnable. --verify rebuilds every case
from the written fixture files exactly as the Rust test does (copy the base directory, write the
case's files), loads it in sentence-transformers, encodes again and requires a zero difference;
it also re-checks each pooling mode against an independent re-implementation of the documented
formulas. CI does NOT run this script (CI has no torch): its outputs are committed, and the Rust
test compares against them (1e-5 per component).

Written against sentence-transformers 6.3.0, transformers 5.25.0, tokenizers 0.23.3,
torch 2.15.0; /work/st-semantics.md documents the semantics these goldens pin down.
"""

import argparse
import base64
import hashlib
import json
import os
import shutil
import sys
import tempfile
import unicodedata
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import save as safetensors_save  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors  # noqa: E402

import sentence_transformers  # noqa: E402
import transformers  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers.base.modules import Normalize, Transformer  # noqa: E402
from sentence_transformers.sentence_transformer.modules import Pooling  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "datasets" / "tests" / "fixtures" / "st"
REAL_MODELS = Path(os.environ.get("ST_REAL_MODELS", "/work/models-st"))

HIDDEN = 32
LAYERS = 2
HEADS = 4
INTERMEDIATE = 37
MAX_POSITIONS = 64
MAX_SEQ_LENGTH = 24  # sentence_bert_config.json of most cases: the long passage is cut here
DENSE_OUT = 16

# ---------------------------------------------------------------------------------------------
# Texts. Queries and passages are encoded as such (prompts per the MTEB rule).
# ---------------------------------------------------------------------------------------------

LONG_PASSAGE = (
    "The old city grew along the river for many centuries, and its people built bridges, "
    "markets and churches that still stand today. Traders came from the north and the south "
    "to sell wine, salt and cloth, while the river carried boats to the sea. In the long winter "
    "nights the families told stories about the founding of the city, the great fire and the "
    "flood that changed the course of the river forever."
)

QUERIES = [
    "how do cats sleep at night",
    "What is the capital of France?",
    "   leading and trailing spaces   ",
    "Café in MÜNCHEN: crème brûlée?",
    "zyxqwv snow\u2603man",  # a word split into pieces, and one with a character outside every vocabulary
    "hi",
]

PASSAGES = [
    "Cats sleep for most of the day and hunt at night.",
    "Paris is the capital and the largest city of France.",
    LONG_PASSAGE,
    "\tTabs and  double  spaces\n here ",
    "THE Café serves CRÈME brûlée in München.",
    "ok",
]

# Words left out of the vocabularies on purpose (they are split into pieces or become unknown).
OOV_WORDS = {"zyxqwv", "largest", "trailing", "founding", "centuries", "snow\u2603man"}
# Characters left out of every vocabulary (they become the unknown token).
OOV_CHARS = {"\u2603", "Ü", "È"}

# Common words that fill the vocabularies up to a few hundred entries (whole-word pieces).
FILLER_WORDS = (
    "about after again air all also always an another any are around as away back be because been before "
    "being below between big both but by call came can change child children come could country day did "
    "different do does down each earth end enough even every example eye face family far father feet few "
    "find first follow food form found four from get give go good got great group grow had hand hard has "
    "have he head hear help her here high him his home house how idea if important into it its just keep "
    "kind know land last late learn leave left let life light like line list little live long look made "
    "make man many may me mean men might mile more mother move much must my name near need never new next "
    "no not now number off often old on once one only open or other our out over own page paper part people "
    "picture place plant play point put question quick read real right river room run said same saw say "
    "school sea second see seem sentence set she should show side small so some something sometimes song "
    "soon sound spell stand start state still stop story study such take talk tell than that their them "
    "then there these they thing think those thought three through time together too took tree try turn "
    "two under until up us use very walk want was watch water way we well went were what when where which "
    "while white who why will with without word work world would write year you young your"
).split()

PROMPT_TEXTS = [
    "query: ",
    "document: ",
    "passage: ",
    "Represent this text for retrieval: ",
    "Classify: ",
]

# ---------------------------------------------------------------------------------------------
# Real-model texts (no prompts: these models have none).
# ---------------------------------------------------------------------------------------------

REAL_LONG = " ".join(
    [
        "Sentence embeddings map a piece of text to a fixed-size vector so that texts with similar "
        "meanings end up close to one another.",
        "A transformer reads the tokens of the text, every layer mixing information between the "
        "positions through attention, and a pooling step turns the token vectors into one vector.",
    ]
    * 14
)  # well over 384 word pieces: truncated at 256 (MiniLM) and 384 (MPNet)

REAL_QUERIES = [
    "how do cats sleep at night",
    "What is the capital of France?",
    "  Café in MÜNCHEN: crème brûlée?  ",
    "hi",
]
REAL_PASSAGES = [
    "Cats sleep for most of the day and hunt at night.",
    "Paris is the capital and the largest city of France.",
    REAL_LONG,
    "\tTabs and  double  spaces\n here, with an odd word: zyxqwv snow\u2603man.",
]

# ---------------------------------------------------------------------------------------------
# Tokenizers
# ---------------------------------------------------------------------------------------------


def all_texts():
    return QUERIES + PASSAGES + PROMPT_TEXTS + [" ".join(FILLER_WORDS)]


def bert_words():
    """The pre-tokenised words of every text under BERT's (uncased, accent-stripping) normalizer."""
    norm = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)
    pre = pre_tokenizers.BertPreTokenizer()
    words = set()
    for t in all_texts():
        for w, _ in pre.pre_tokenize_str(norm.normalize_str(t)):
            words.add(w)
    return words


def wordpiece_vocab(specials):
    words = bert_words()
    oov = {unicodedata.normalize("NFD", w.lower()) for w in OOV_WORDS} | {w.lower() for w in OOV_WORDS}
    chars = sorted({c for w in words for c in w if c not in {c2.lower() for c2 in OOV_CHARS}} | set("abcdefghijklmnopqrstuvwxyz0123456789"))
    singles = [c for c in chars]
    continuations = ["##" + c for c in chars if c.isalnum()]
    suffixes = ["##s", "##ed", "##ing", "##est", "##st", "##ies", "##ury", "##ur", "##nd", "##ail", "##ing"]
    whole = sorted(w for w in words if len(w) > 1 and w not in oov and all(c.isalnum() for c in w))
    extra = ["large", "trail", "cent", "found", "the", "a", "of", "and", "is", "to", "in", "for", "at"]
    vocab = []
    for tok in specials + singles + continuations + suffixes + extra + whole:
        if tok not in vocab:
            vocab.append(tok)
    return vocab


def build_wordpiece_tokenizer(vocab, cls, sep, unk, pad, mask, roberta_post):
    ids = {t: i for i, t in enumerate(vocab)}
    tok = Tokenizer(models.WordPiece(ids, unk_token=unk, continuing_subword_prefix="##", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    # `<mask>` takes the space before it (lstrip), as in MPNet's and RoBERTa's tokenizers.
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False, lstrip=(t == "<mask>")) for t in [cls, sep, unk, pad, mask]])
    if roberta_post:
        tok.post_processor = processors.RobertaProcessing((sep, ids[sep]), (cls, ids[cls]), trim_offsets=True, add_prefix_space=False)
    else:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{cls}:0 $A:0 {sep}:0",
            pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
            special_tokens=[(cls, ids[cls]), (sep, ids[sep])],
        )
    return tok


def metaspace_words():
    """Pieces `▁word` of every text (as sentencepiece splits on whitespace), case kept."""
    pre = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)])
    words = set()
    for t in all_texts() + [t.lower() for t in all_texts()]:
        for w, _ in pre.pre_tokenize_str(t):
            words.add(w)
            words.add(w.rstrip(".,:;?!"))  # "▁France?" also gives the piece "▁France"
    return words


def unigram_vocab():
    """(piece, log-probability) list: specials, then `▁` + whole words, sub-word pieces, characters."""
    words = metaspace_words()
    oov = {"▁" + w for w in OOV_WORDS} | {"▁" + w.lower() for w in OOV_WORDS}
    chars = sorted({c for w in words for c in w if c != "▁" and c not in OOV_CHARS})
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    seen = {p for p, _ in vocab}

    def add(piece, score):
        if piece not in seen and all(c not in OOV_CHARS for c in piece):
            seen.add(piece)
            vocab.append((piece, score))

    add("▁", -6.0)
    whole = sorted(w for w in words if w not in oov and len(w) > 1)
    # Only the pieces that are "word-like" (letters, digits) become whole pieces; punctuation stays
    # a character piece, as in a real sentencepiece model.
    for i, w in enumerate(whole):
        body = w[1:] if w.startswith("▁") else w
        if body and all(c.isalnum() for c in body):
            add(w, -8.0 - 0.001 * i)
    for i, p in enumerate(["▁large", "st", "▁trail", "ing", "▁found", "▁cent", "ur", "ies", "s", "ed", "▁snow", "man", "▁zy", "xq"]):
        add(p, -9.0 - 0.01 * i)
    for c in chars:
        add(c, -12.0)
        if c.isalpha():
            add("▁" + c, -11.0)
    vocab.append(("<mask>", 0.0))
    return vocab


def build_unigram_tokenizer(vocab):
    tok = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    # As in the tokenizer.json of real XLM-R models (and multilingual-e5, bge-m3, ...): a lone
    # Metaspace pre-tokenizer. (No Precompiled charsmap: this fixture has no sentencepiece model.)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.add_special_tokens(
        [
            AddedToken("<s>", special=True, normalized=False),
            AddedToken("<pad>", special=True, normalized=False),
            AddedToken("</s>", special=True, normalized=False),
            AddedToken("<unk>", special=True, normalized=False),
            AddedToken("<mask>", special=True, normalized=False, lstrip=True),
        ]
    )
    ids = {p: i for i, (p, _) in enumerate(vocab)}
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", ids["<s>"]), ("</s>", ids["</s>"])],
    )
    return tok


# ---------------------------------------------------------------------------------------------
# Base model directories
# ---------------------------------------------------------------------------------------------


def init_weights(model, seed):
    """Seeded weights, large enough that attention is peaked and the pooling modes differ."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "LayerNorm" in name or "layer_norm" in name:
                if name.endswith("weight"):
                    p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
                else:
                    p.copy_(0.2 * torch.randn(p.shape, generator=g))
            elif "embeddings" in name or "relative_attention_bias" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))


def write_json(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def dumps_compact(obj, level=0):
    """Indented JSON whose lists of numbers (a vector, a token id list) each sit on one line."""
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


def make_bert(out):
    vocab = wordpiece_vocab(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok = build_wordpiece_tokenizer(vocab, "[CLS]", "[SEP]", "[UNK]", "[PAD]", "[MASK]", roberta_post=False)
    cfg = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE,
        max_position_embeddings=MAX_POSITIONS,
        type_vocab_size=2,
        pad_token_id=0,
        layer_norm_eps=1e-12,
        hidden_act="gelu",
    )
    torch.manual_seed(1)
    model = transformers.BertModel(cfg)
    init_weights(model, 101)
    special = {"cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "pad_token": "[PAD]", "mask_token": "[MASK]"}
    tok_cfg = dict(tokenizer_class="BertTokenizer", do_lower_case=True, strip_accents=None, tokenize_chinese_chars=True, model_max_length=MAX_POSITIONS, **special)
    save_base(out, model, tok, tok_cfg, special)


def make_mpnet(out):
    vocab = wordpiece_vocab(["<s>", "<pad>", "</s>", "[UNK]"]) + ["<mask>"]
    tok = build_wordpiece_tokenizer(vocab, "<s>", "</s>", "[UNK]", "<pad>", "<mask>", roberta_post=True)
    cfg = transformers.MPNetConfig(
        vocab_size=len(vocab),
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE,
        max_position_embeddings=MAX_POSITIONS,
        relative_attention_num_buckets=32,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        layer_norm_eps=1e-5,
        hidden_act="gelu",
    )
    torch.manual_seed(2)
    model = transformers.MPNetModel(cfg)
    init_weights(model, 202)
    special = {"bos_token": "<s>", "eos_token": "</s>", "cls_token": "<s>", "sep_token": "</s>", "unk_token": "[UNK]", "pad_token": "<pad>", "mask_token": "<mask>"}
    # Positions are padding_idx (1) + 1 + index: 62 tokens use position ids up to 63 < 64.
    tok_cfg = dict(tokenizer_class="MPNetTokenizer", do_lower_case=True, strip_accents=None, tokenize_chinese_chars=True, model_max_length=MAX_POSITIONS - 2, **special)
    save_base(out, model, tok, tok_cfg, special)


def make_xlmr(out):
    vocab = unigram_vocab()
    tok = build_unigram_tokenizer(vocab)
    cfg = transformers.XLMRobertaConfig(
        vocab_size=len(vocab),
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE,
        max_position_embeddings=MAX_POSITIONS,
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        layer_norm_eps=1e-5,
        hidden_act="gelu",
    )
    torch.manual_seed(3)
    model = transformers.XLMRobertaModel(cfg)
    init_weights(model, 303)
    special = {"bos_token": "<s>", "eos_token": "</s>", "cls_token": "<s>", "sep_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>"}
    tok_cfg = dict(tokenizer_class="XLMRobertaTokenizer", model_max_length=MAX_POSITIONS - 2, **special)
    save_base(out, model, tok, tok_cfg, special)


def save_base(out, model, tok, tok_cfg, special):
    out.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.save_pretrained(out, safe_serialization=True)
    tok.save(str(out / "tokenizer.json"))
    write_json(out / "tokenizer_config.json", tok_cfg)
    write_json(out / "special_tokens_map.json", special)
    # Keep only what a model directory needs (save_pretrained may add e.g. generation_config.json).
    for p in out.iterdir():
        if p.name not in {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}:
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()


BASES = {"bert": make_bert, "mpnet": make_mpnet, "xlm-roberta": make_xlmr}

# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------

OLD_TYPES = {
    "Transformer": "sentence_transformers.models.Transformer",
    "Pooling": "sentence_transformers.models.Pooling",
    "Dense": "sentence_transformers.models.Dense",
    "Normalize": "sentence_transformers.models.Normalize",
}
NEW_TYPES = {  # what sentence-transformers 6.x writes
    "Transformer": "sentence_transformers.base.modules.transformer.Transformer",
    "Pooling": "sentence_transformers.sentence_transformer.modules.pooling.Pooling",
    "Dense": "sentence_transformers.base.modules.dense.Dense",
    "Normalize": "sentence_transformers.base.modules.normalize.Normalize",
}


def modules_json(kinds, new_types=False):
    """modules.json for Transformer followed by `kinds` (e.g. ["Pooling", "Normalize"])."""
    types = NEW_TYPES if new_types else OLD_TYPES
    out = [{"idx": 0, "name": "0", "path": "", "type": types["Transformer"]}]
    for i, k in enumerate(kinds, start=1):
        out.append({"idx": i, "name": str(i), "path": f"{i}_{k}", "type": types[k]})
    return out


def pooling_legacy(modes, include_prompt=None):
    """The pre-6.x 1_Pooling/config.json: one boolean per mode."""
    cfg = {
        "word_embedding_dimension": HIDDEN,
        "pooling_mode_cls_token": "cls" in modes,
        "pooling_mode_mean_tokens": "mean" in modes,
        "pooling_mode_max_tokens": "max" in modes,
        "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens" in modes,
        "pooling_mode_weightedmean_tokens": "weightedmean" in modes,
        "pooling_mode_lasttoken": "lasttoken" in modes,
    }
    if include_prompt is not None:
        cfg["include_prompt"] = include_prompt
    return cfg


def pooling_new(mode, include_prompt=True):
    """The 6.x 1_Pooling/config.json: `pooling_mode` a string or a list (concatenated in list order)."""
    return {"embedding_dimension": HIDDEN, "pooling_mode": mode, "include_prompt": include_prompt}


def sbert(max_seq_length=MAX_SEQ_LENGTH, do_lower_case=False):
    cfg = {}
    if max_seq_length is not None:
        cfg["max_seq_length"] = max_seq_length
    cfg["do_lower_case"] = do_lower_case
    return cfg


def st_config(prompts=None, default_prompt_name=None):
    return {
        "__version__": {"sentence_transformers": "2.7.0", "transformers": "4.41.0", "pytorch": "2.3.0"},
        "prompts": prompts or {},
        "default_prompt_name": default_prompt_name,
    }


def dense_weights(seed, in_features, out_features, bias):
    g = torch.Generator().manual_seed(seed)
    tensors = {"linear.weight": (0.4 * torch.randn(out_features, in_features, generator=g)).contiguous()}
    if bias:
        tensors["linear.bias"] = (0.2 * torch.randn(out_features, generator=g)).contiguous()
    return safetensors_save(tensors)


def case(name, base, description, pooling, normalize=True, dense=None, prompts=None, default_prompt_name=None, sbert_cfg=None, new_types=False, legacy=False):
    """One golden case. `pooling`: the 1_Pooling/config.json dict; `dense`: (activation path, bias)."""
    c = {"name": name, "base": base, "description": description, "files": {}, "binary_files": {}}
    if legacy:
        c["legacy"] = True
        return c
    kinds = ["Pooling"] + (["Dense"] if dense else []) + (["Normalize"] if normalize else [])
    c["files"]["modules.json"] = modules_json(kinds, new_types)
    c["files"]["sentence_bert_config.json"] = sbert_cfg if sbert_cfg is not None else sbert()
    c["files"]["1_Pooling/config.json"] = pooling
    c["files"]["config_sentence_transformers.json"] = st_config(prompts, default_prompt_name)
    if dense:
        activation, bias = dense
        in_features = pooling_width(pooling)
        c["files"]["2_Dense/config.json"] = {"in_features": in_features, "out_features": DENSE_OUT, "bias": bias, "activation_function": activation}
        c["binary_files"]["2_Dense/model.safetensors"] = base64.b64encode(dense_weights(len(name) * 7919 + 17, in_features, DENSE_OUT, bias)).decode("ascii")
    if normalize and new_types:
        c["files"][f"{len(kinds)}_Normalize/config.json"] = {"module_input_name": "sentence_embedding", "module_output_name": "sentence_embedding"}
    return c


def pooling_modes(pooling):
    """The ordered modes of a 1_Pooling/config.json, as sentence-transformers 6.3 reads it."""
    if "pooling_mode" in pooling:
        m = pooling["pooling_mode"]
        return [m] if isinstance(m, str) else list(m)
    order = [
        ("pooling_mode_cls_token", "cls"),
        ("pooling_mode_max_tokens", "max"),
        ("pooling_mode_mean_tokens", "mean"),
        ("pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"),
        ("pooling_mode_weightedmean_tokens", "weightedmean"),
        ("pooling_mode_lasttoken", "lasttoken"),
    ]
    modes = [m for k, m in order if pooling.get(k, False)]
    return modes or ["mean"]


def pooling_width(pooling):
    return HIDDEN * len(pooling_modes(pooling))


MODES = ["mean", "cls", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"]
TANH = "torch.nn.modules.activation.Tanh"
IDENTITY = "torch.nn.modules.linear.Identity"
BOTH_PROMPTS = {"query": "query: ", "document": "document: "}


def cases():
    out = []
    # Every architecture x every pooling mode. BERT: the 6.x config format; MPNet: 6.x format and
    # 6.x module type names; XLM-R: the pre-6.x boolean format (as most Hub models have it).
    for base in ["bert", "mpnet", "xlm-roberta"]:
        for mode in MODES:
            normalize = mode == "mean"
            if base == "xlm-roberta":
                pooling = pooling_legacy([mode])
            else:
                pooling = pooling_new(mode)
            out.append(
                case(
                    f"{base}-{mode}" + ("-normalize" if normalize else ""),
                    base,
                    f"{mode} pooling" + (", then Normalize" if normalize else ", no Normalize"),
                    pooling,
                    normalize=normalize,
                    new_types=(base == "mpnet"),
                )
            )
    out += [
        case(
            "bert-cls+mean-legacy-flags",
            "bert",
            "two legacy flags at once: concatenated in ST's fixed legacy order cls, max, mean, mean_sqrt_len_tokens, weightedmean, lasttoken (here cls || mean), then Normalize",
            pooling_legacy(["mean", "cls"]),
        ),
        case(
            "mpnet-mean+max-list",
            "mpnet",
            'pooling_mode ["mean", "max"] (6.x list form): concatenated in LIST order, mean || max (the legacy flags would give max || mean); no Normalize',
            pooling_new(["mean", "max"]),
            normalize=False,
            new_types=True,
        ),
        case(
            "xlm-roberta-lasttoken+weightedmean+cls-list",
            "xlm-roberta",
            'pooling_mode ["lasttoken", "weightedmean", "cls"]: three modes in list order, then Normalize (over the whole 96-wide vector)',
            pooling_new(["lasttoken", "weightedmean", "cls"]),
        ),
        case(
            "bert-prompt-query-only",
            "bert",
            'prompts {"query": "query: "}: queries get "query: ", passages nothing; mean, Normalize',
            pooling_legacy(["mean"]),
            prompts={"query": "query: "},
        ),
        case(
            "mpnet-prompts-query-document",
            "mpnet",
            'prompts {"query", "document"}: both sides prompted; mean, Normalize',
            pooling_new("mean"),
            prompts=dict(BOTH_PROMPTS),
        ),
        case(
            "mpnet-prompts-query-passage",
            "mpnet",
            'prompts {"query", "passage"} (no "document"): passages get the "passage" prompt; mean, Normalize',
            pooling_new("mean"),
            prompts={"query": "query: ", "passage": "passage: "},
        ),
        case(
            "xlm-roberta-default-prompt-name-only",
            "xlm-roberta",
            'prompts {"retrieval", "classification"} + default_prompt_name "retrieval": neither side has its own prompt, so both get the default one; mean, Normalize',
            pooling_legacy(["mean"]),
            prompts={"retrieval": "Represent this text for retrieval: ", "classification": "Classify: "},
            default_prompt_name="retrieval",
        ),
        case(
            "bert-include-prompt-false-mean",
            "bert",
            "include_prompt false, mean: the first prompt_length positions ([CLS] + prompt tokens) are left out of the mean; Normalize",
            pooling_new("mean", include_prompt=False),
            prompts=dict(BOTH_PROMPTS),
        ),
        case(
            "bert-include-prompt-false-cls",
            "bert",
            "include_prompt false, cls: CLS pooling takes the first position left in the mask, i.e. the first text token after the prompt (not [CLS]); no Normalize",
            pooling_new("cls", include_prompt=False),
            normalize=False,
            prompts=dict(BOTH_PROMPTS),
        ),
        case(
            "xlm-roberta-include-prompt-false-weightedmean",
            "xlm-roberta",
            "include_prompt false, weightedmean (legacy flags + include_prompt): prompt positions excluded, the remaining tokens keep their original position weights; no Normalize",
            pooling_legacy(["weightedmean"], include_prompt=False),
            normalize=False,
            prompts=dict(BOTH_PROMPTS),
        ),
        case(
            "mpnet-include-prompt-false-max+lasttoken",
            "mpnet",
            "include_prompt false with max and lasttoken (list order max || lasttoken): max over the non-prompt positions; lasttoken is unaffected (last real token); no Normalize",
            pooling_new(["max", "lasttoken"], include_prompt=False),
            normalize=False,
            new_types=True,
            prompts=dict(BOTH_PROMPTS),
        ),
        case(
            "bert-dense-tanh-normalize",
            "bert",
            "mean -> Dense(32 -> 16, bias, Tanh) -> Normalize; Dense weights in 2_Dense/model.safetensors (linear.weight [16, 32], linear.bias [16])",
            pooling_legacy(["mean"]),
            dense=(TANH, True),
        ),
        case(
            "mpnet-cls+mean-dense-identity-nobias",
            "mpnet",
            'pooling ["cls", "mean"] -> Dense(64 -> 16, no bias, Identity); no Normalize',
            pooling_new(["cls", "mean"]),
            normalize=False,
            dense=(IDENTITY, False),
            new_types=True,
        ),
        case(
            "xlm-roberta-do-lower-case",
            "xlm-roberta",
            "do_lower_case true on a cased (Unigram) tokenizer: ST prepends a Lowercase normalizer; mean, Normalize",
            pooling_legacy(["mean"]),
            sbert_cfg=sbert(do_lower_case=True),
            prompts={"query": "Query: "},
        ),
        case(
            "mpnet-no-max-seq-length",
            "mpnet",
            "sentence_bert_config.json without max_seq_length: the limit is tokenizer_config.json's model_max_length (62) capped at max_position_embeddings (64), i.e. 62; mean, Normalize",
            pooling_new("mean"),
            sbert_cfg=sbert(max_seq_length=None),
            new_types=True,
        ),
        case(
            "bert-legacy-no-modules-json",
            "bert",
            "no ST file at all (no modules.json): hopbench reads it as Transformer + mean pooling + Normalize; max length = min(tokenizer_config model_max_length 64, max_position_embeddings 64) = 64, sentence_bert_config.json is not read",
            None,
            legacy=True,
        ),
    ]
    names = [c["name"] for c in out]
    assert len(names) == len(set(names)), names
    return out


# ---------------------------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------------------------


def resolve_prompts(st_cfg):
    """The MTEB rule (see the module docstring). Returns (query prompt, passage prompt), None for none."""
    prompts = (st_cfg or {}).get("prompts") or {}
    default_name = (st_cfg or {}).get("default_prompt_name")
    default = prompts.get(default_name) if default_name else None
    q = prompts["query"] if "query" in prompts else default
    if "document" in prompts:
        p = prompts["document"]
    elif "passage" in prompts:
        p = prompts["passage"]
    else:
        p = default
    return (q or None), (p or None)


def materialise(c, base_dir, dest):
    """What the Rust test does: copy the base directory, write the case's files over it."""
    shutil.copytree(base_dir, dest)
    for rel, content in c["files"].items():
        write_json(dest / rel, content)
    for rel, b64 in c.get("binary_files", {}).items():
        p = dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(base64.b64decode(b64))


def load(c, d):
    if c.get("legacy"):
        t = Transformer(str(d))
        return SentenceTransformer(modules=[t, Pooling(t.get_embedding_dimension(), "mean"), Normalize()], device="cpu")
    return SentenceTransformer(str(d), device="cpu")


def f32_list(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64).tolist()


def tokenised(model, texts, prompt):
    """input_ids as sentence-transformers feeds them to the model (padding removed), and prompt_length."""
    f = model.preprocess(texts, prompt=prompt)
    ids = [row[mask.bool()].tolist() for row, mask in zip(f["input_ids"], f["attention_mask"])]
    return ids, f.get("prompt_length")


def encode(model, texts, prompt):
    # prompt="" (not None) so that encode never falls back to default_prompt_name.
    v = model.encode(texts, prompt=prompt or "", batch_size=32, convert_to_numpy=True, show_progress_bar=False)
    assert v.dtype == np.float32
    return v


def run_case(c, work):
    d = work / c["name"]
    materialise(c, FIXTURES / c["base"], d)
    model = load(c, d)
    qp, pp = resolve_prompts(c["files"].get("config_sentence_transformers.json"))
    qv = encode(model, QUERIES, qp)
    pv = encode(model, PASSAGES, pp)
    q_ids, q_pl = tokenised(model, QUERIES, qp)
    p_ids, p_pl = tokenised(model, PASSAGES, pp)
    check_manual(model, c, QUERIES, qp, qv)
    check_manual(model, c, PASSAGES, pp, pv)
    if c.get("legacy"):
        # sentence-transformers 6.3 itself: no modules.json -> Transformer + mean pooling, no Normalize.
        plain = SentenceTransformer(str(d), device="cpu")
        kinds = [type(m).__name__ for m in plain]
        assert kinds == ["Transformer", "Pooling"], kinds
        raw = encode(plain, PASSAGES, None)
        np.testing.assert_allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), pv, atol=2e-7)
    out = dict(c)
    out["query_prompt"] = qp
    out["passage_prompt"] = pp
    out["max_seq_length"] = model.max_seq_length
    out["prompt_lengths"] = {"query": q_pl, "passage": p_pl}
    out["dim"] = int(qv.shape[1])
    out["queries"] = QUERIES
    out["passages"] = PASSAGES
    out["query_input_ids"] = q_ids
    out["passage_input_ids"] = p_ids
    out["query_vectors"] = f32_list(qv)
    out["passage_vectors"] = f32_list(pv)
    return out, model


# ---------------------------------------------------------------------------------------------
# Independent re-implementation of Pooling / Dense / Normalize (checks the documented semantics)
# ---------------------------------------------------------------------------------------------


@torch.no_grad()
def check_manual(model, c, texts, prompt, expected):
    modules = list(model)
    transformer = modules[0]
    f = model.preprocess(texts, prompt=prompt or None)
    feats = transformer({k: v for k, v in f.items()})
    tok = feats["token_embeddings"].double()
    mask = f["attention_mask"].clone()
    pooling = modules[1]
    assert isinstance(pooling, Pooling)
    if not pooling.include_prompt and f.get("prompt_length"):
        mask[:, : f["prompt_length"]] = 0  # right padding: the first prompt_length positions
    m = mask.unsqueeze(-1).double()
    modes = [pooling.pooling_mode] if isinstance(pooling.pooling_mode, str) else list(pooling.pooling_mode)
    parts = []
    for mode in modes:
        if mode == "cls":
            first = mask.argmax(dim=1)  # first position still in the mask
            parts.append(tok[torch.arange(tok.shape[0]), first])
        elif mode == "max":
            parts.append(tok.masked_fill(m == 0, float("-inf")).max(dim=1).values)
        elif mode == "mean":
            parts.append((tok * m).sum(1) / m.sum(1).clamp(min=1e-9))
        elif mode == "mean_sqrt_len_tokens":
            parts.append((tok * m).sum(1) / m.sum(1).clamp(min=1e-9).sqrt())
        elif mode == "weightedmean":
            w = torch.arange(1, tok.shape[1] + 1, dtype=torch.float64).view(1, -1, 1) * m  # position i (0-based) weighs i + 1
            parts.append((tok * w).sum(1) / w.sum(1).clamp(min=1e-9))
        elif mode == "lasttoken":
            last = mask.shape[1] - 1 - mask.flip(1).argmax(dim=1)  # last position with mask 1
            parts.append(tok[torch.arange(tok.shape[0]), last] * (mask.sum(1) > 0).double().unsqueeze(-1))
    x = torch.cat(parts, dim=-1)
    for mod in modules[2:]:
        name = type(mod).__name__
        if name == "Dense":
            w = mod.linear.weight.double()
            x = x @ w.T + (mod.linear.bias.double() if mod.linear.bias is not None else 0.0)
            act = type(mod.activation_function).__name__
            x = torch.tanh(x) if act == "Tanh" else x
            assert act in ("Tanh", "Identity"), act
        elif name == "Normalize":
            x = x / x.norm(dim=-1, keepdim=True).clamp(min=1e-12)
        else:
            raise AssertionError(name)
    diff = np.abs(x.numpy() - expected.astype(np.float64)).max()
    assert diff < 2e-5, (c["name"], diff)


# ---------------------------------------------------------------------------------------------
# Real models
# ---------------------------------------------------------------------------------------------


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def real_goldens():
    out = []
    for name in ["all-MiniLM-L6-v2", "all-mpnet-base-v2"]:
        d = REAL_MODELS / name
        if not (d / "model.safetensors").exists():
            print(f"skipping {name}: not installed at {d}", file=sys.stderr)
            continue
        model = SentenceTransformer(str(d), device="cpu")
        qv = encode(model, REAL_QUERIES, None)
        pv = encode(model, REAL_PASSAGES, None)
        q_ids, _ = tokenised(model, REAL_QUERIES, None)
        p_ids, _ = tokenised(model, REAL_PASSAGES, None)
        assert max(len(i) for i in p_ids) == model.max_seq_length, "the long passage must be truncated"
        out.append(
            {
                "name": name,
                "hub_id": f"sentence-transformers/{name}",
                "model_safetensors_sha256": sha256(d / "model.safetensors"),
                "modules": [type(m).__name__ for m in model],
                "max_seq_length": model.max_seq_length,
                "dim": int(qv.shape[1]),
                "queries": REAL_QUERIES,
                "passages": REAL_PASSAGES,
                "query_input_ids": q_ids,
                "passage_input_ids": p_ids,
                "query_vectors": f32_list(qv),
                "passage_vectors": f32_list(pv),
            }
        )
    return out


# ---------------------------------------------------------------------------------------------
# Tokenizer cross-check: tokenizer.json as the Rust `tokenizers` crate reads it vs what ST fed
# ---------------------------------------------------------------------------------------------


def tokenizer_json_ids(d, texts, prompt, max_len, lower):
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    if lower:
        n = tok.normalizer
        seq = [normalizers.Lowercase()] + ([n] if n is not None else [])
        tok.normalizer = normalizers.Sequence(seq)
    tok.enable_truncation(max_len)
    return [e.ids for e in tok.encode_batch([(prompt or "") + t for t in texts])]


def report_tokenizer_differences(c, work):
    d = work / c["name"]
    lower = bool(c["files"].get("sentence_bert_config.json", {}).get("do_lower_case"))
    diffs = []
    for side, texts, prompt, ids in [
        ("query", c["queries"], c["query_prompt"], c["query_input_ids"]),
        ("passage", c["passages"], c["passage_prompt"], c["passage_input_ids"]),
    ]:
        mine = tokenizer_json_ids(d, texts, prompt, c["max_seq_length"], lower)
        for t, a, b in zip(texts, mine, ids):
            if a != b:
                diffs.append((side, t, a, b))
    return diffs


# ---------------------------------------------------------------------------------------------


def fixture_size():
    return sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file())


def write_all():
    torch.set_num_threads(1)
    if FIXTURES.exists():
        shutil.rmtree(FIXTURES)
    FIXTURES.mkdir(parents=True)
    for name, make in BASES.items():
        make(FIXTURES / name)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for c in cases():
            r, _ = run_case(c, work)
            results.append(r)
            diffs = report_tokenizer_differences(r, work)
            for side, t, a, b in diffs:
                print(f"  note {r['name']}: tokenizer.json alone gives {a} for {side} {t!r}, ST fed {b}")
            print(f"{r['name']}: dim {r['dim']}, prompts {r['query_prompt']!r} / {r['passage_prompt']!r}, prompt_lengths {r['prompt_lengths']}, max_seq_length {r['max_seq_length']}")
    write_compact(FIXTURES / "goldens.json", results)
    real = real_goldens()
    if real:
        write_compact(FIXTURES / "real_goldens.json", real)
    print(f"fixtures: {fixture_size()} bytes in {FIXTURES.relative_to(ROOT)}")


def verify():
    torch.set_num_threads(1)
    cases_ = json.loads((FIXTURES / "goldens.json").read_text(encoding="utf-8"))
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for c in cases_:
            d = work / c["name"]
            materialise(c, FIXTURES / c["base"], d)
            model = load(c, d)
            qp, pp = resolve_prompts(c["files"].get("config_sentence_transformers.json"))
            assert (qp, pp) == (c["query_prompt"], c["passage_prompt"]), c["name"]
            for texts, prompt, key in [(c["queries"], qp, "query_vectors"), (c["passages"], pp, "passage_vectors")]:
                v = encode(model, texts, prompt)
                golden = np.asarray(c[key], dtype=np.float64).astype(np.float32)
                assert np.array_equal(np.asarray(c[key], dtype=np.float64), golden.astype(np.float64)), "not float32 values"
                diff = float(np.abs(v - golden).max())
                worst = max(worst, diff)
                check_manual(model, c, texts, prompt, v)
                if diff != 0.0:
                    print(f"{c['name']} {key}: max diff {diff}")
    real_path = FIXTURES / "real_goldens.json"
    if real_path.exists():
        for r in json.loads(real_path.read_text(encoding="utf-8")):
            d = REAL_MODELS / r["name"]
            if not (d / "model.safetensors").exists() or sha256(d / "model.safetensors") != r["model_safetensors_sha256"]:
                print(f"skipping real model {r['name']}")
                continue
            model = SentenceTransformer(str(d), device="cpu")
            for texts, key in [(r["queries"], "query_vectors"), (r["passages"], "passage_vectors")]:
                v = encode(model, texts, None)
                diff = float(np.abs(v - np.asarray(r[key], dtype=np.float32)).max())
                worst = max(worst, diff)
                if diff != 0.0:
                    print(f"{r['name']} {key}: max diff {diff}")
    print(f"verified {len(cases_)} cases (+ real models): worst difference {worst}")
    if worst != 0.0:
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--verify", action="store_true", help="re-encode from the written fixtures and compare (no writing)")
    args = ap.parse_args()
    print(f"sentence-transformers {sentence_transformers.__version__}, transformers {transformers.__version__}, torch {torch.__version__}")
    if args.verify:
        verify()
    else:
        write_all()


if __name__ == "__main__":
    main()
