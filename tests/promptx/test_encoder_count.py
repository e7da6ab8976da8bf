"""Tests for promptx.text.encoder_count: exact CLIP BPE counts, local tokenizers, the choice.

The CLIP tests need open_clip_torch's merges file (``pip install --no-deps open_clip_torch``),
an optional install: without it they skip and promptx falls back to the estimate. The
reference is transformers' own CLIPTokenizer, built here from a vocab.json + merges.txt
written from that same file (offline); local tokenizers are trained here with ``tokenizers``.
"""

import csv
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from promptx.errors import InvalidInputError, ModelNotFoundError
from promptx.text.cleanup import CleanResult, clean_output, estimate_encoder_tokens, fit_length
from promptx.text.encoder_count import (
    ClipBpeCounter,
    EncoderCounter,
    EstimateCounter,
    TokenizerCounter,
    clip_merges_file,
    counter_for,
    counter_from_directory,
)

# shared/ lies beside the project checkout (read-only); never copy it in.
PROMPTS = Path(__file__).resolve().parents[3] / "shared" / "data" / "prompts"
if not PROMPTS.is_dir():
    PROMPTS = Path("/work/shared/data/prompts")

MERGES = clip_merges_file()
needs_clip = pytest.mark.skipif(
    MERGES is None, reason="open_clip_torch (CLIP's BPE merges) is not installed"
)

HAND = [
    "",
    "   ",
    "a photo of a cat",
    "A Photo Of A CAT",
    "cat",
    "a",
    # digits
    "8k uhd, 1024x768, 60fps",
    "the year 1999",
    "pi is 3.14159",
    "100% cotton",
    "4K HDR",
    "room 101b",
    "1st 2nd 3rd 4th",
    "0.5mm lens at f/1.8",
    "x2 x10 x100",
    # punctuation and SD syntax
    "wow!!! what?!",
    "cat... dog…",
    "(masterpiece:1.2), [cat], {dog}",
    "a--b -- c — d – e",
    "`code`",
    "hello,world;again:yes",
    "#hashtag @user $100 ^_^",
    "a/b\\c|d",
    "((((best quality))))",
    "<lora:foo:0.8>",
    "\"quoted\" and 'single'",
    "semi;colon",
    "a_b_c",
    "~tilde~ *star* +plus+ =eq=",
    # apostrophes
    "it's",
    "don't",
    "we're here",
    "they've gone",
    "I'm",
    "you'll see",
    "he'd",
    "cats' toys",
    "rock 'n' roll",
    "IT'S LOUD",
    "O'Clock",
    "it’s curly",
    "don’t",
    "'sun",
    "''quoted''",
    "the 90's",
    "y'all'd've",
    # CJK
    "一只猫在滑板上",
    "猫，滑板、夕阳。",
    "日本語のテキスト、カタカナ",
    "한국어 텍스트",
    "A cat 猫 on a board 滑板",
    "（全角括号）",
    "ＡＢＣ１２３",
    # emoji
    "🐱🛹",
    "I ❤️ NY",
    "👨‍👩‍👧‍👦 family",
    "🇫🇷 flag",
    "👍🏽 thumbs",
    "cat🐱dog🐶",
    # accents and other scripts
    "café crème brûlée",
    "naïve façade",
    "cafe\u0301 decomposed",
    "Ångström",
    "ΟΔΟΣ ΣΟΦΙΑΣ",
    "straße",
    "İstanbul",
    "Ⅻ roman numeral",
    "x² y³ ½",
    "١٢٣ arabic digits",
    "हिन्दी भाषा",
    "עברית",
    "Привет мир",
    "Ελληνικά",
    "ﬁne ligature",
    "ǅ titlecase",
    # html entities
    "Tom &amp; Jerry",
    "&lt;b&gt;bold&lt;/b&gt;",
    "caf&eacute;",
    "&#39;quote&#39;",
    "a&nbsp;b",
    "&amp;amp;",
    # whitespace
    "a   cat\t\ton\n\na  board",
    "  leading and trailing  ",
    "\u3000ideographic\u3000space",
    "nbsp\xa0here",
    "zero\u200bwidth",
    "\x1cfile\x1dsep\x1e",
    "line\u2028sep",
    "tab\x07bell",
    "cr\r\nlf",
    "\u2003em\u2009thin",
    # long words
    "supercalifragilisticexpialidocious",
    "a" * 300,
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "xqzjvkwpf",
    "antidisestablishmentarianism" * 5,
    "ivy-covered, sun-drenched, well-lit",
    "hyperrealistic ultradetailed photorealistic octane-render",
    # special tokens written out
    "a <|endoftext|> b",
    "<|startoftext|>cat",
    "<|STARTOFTEXT|> upper",
    "<|endoftext",
    "x<|endoftext|><|endoftext|>",
]
# more variety: pairs of the cases above, joined as a tag list and as sentences
HAND += [f"{a}, {b}" for a, b in zip(HAND[2::2], HAND[3::2])] + [
    f"{a}. {b}!" for a, b in zip(HAND[2:], HAND[5:])
]

LONG_TAGS = (  # 80+ CLIP tokens
    "masterpiece, best quality, ultra-detailed, 8k wallpaper, a ginger tabby cat riding a red "
    "skateboard, sunny suburban street, low angle, motion blur, warm afternoon light, shallow "
    "depth of field, detailed fur, photograph, sharp focus, bokeh, golden hour, cinematic "
    "lighting, film grain, anamorphic lens flare, volumetric fog, trending on artstation, "
    "octane render, hdr, vivid colors"
)
LONG_PARAGRAPH = (  # 80+ CLIP tokens, sentences
    "A ginger tabby cat balances on a red skateboard as it rolls down a sunlit suburban street. "
    "Its fur ripples in the warm afternoon breeze while the camera tracks alongside at a low "
    "angle. Dust motes glitter in the golden light, and the wheels clatter over cracks in the "
    "asphalt. Children on the sidewalk point and laugh, "
    "and a dog barks from behind a white picket fence."
)


def data_prompts() -> list[str]:
    prompts = []
    for name in (
        "vbench_all_dimension.txt",
        "vbench_all_dimension_gpt4o_longer.txt",
        "vbench_all_dimension_wan_extended.txt",
        "vbench_all_dimension_cn.txt",
        "geneval_prompts.txt",
    ):
        prompts += [
            ln for ln in (PROMPTS / name).read_text(encoding="utf-8").splitlines() if ln.strip()
        ]
    with open(PROMPTS / "partiprompts.tsv", encoding="utf-8", newline="") as fh:
        prompts += [row[0] for row in list(csv.reader(fh, delimiter="\t"))[1:] if row]
    return prompts


# --------------------------------------------------------------- the CLIP reference


def _byte_alphabet() -> list[str]:
    """GPT-2/CLIP's byte -> printable character table, in CLIP's vocabulary order."""
    keep = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    rest = [b for b in range(256) if b not in keep]
    return [chr(b) for b in keep] + [chr(256 + i) for i in range(len(rest))]


@pytest.fixture(scope="module")
def clip_files(tmp_path_factory) -> Path:
    """vocab.json + merges.txt of CLIP, written from open_clip's bpe_simple_vocab_16e6.txt.gz."""
    if MERGES is None:
        pytest.skip("open_clip_torch (CLIP's BPE merges) is not installed")
    lines = gzip.open(MERGES, "rt", encoding="utf-8").read().split("\n")
    merges = lines[1 : 49152 - 256 - 2 + 1]
    alphabet = _byte_alphabet()
    vocab = alphabet + [c + "</w>" for c in alphabet] + ["".join(m.split()) for m in merges]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    folder = tmp_path_factory.mktemp("clip")
    (folder / "vocab.json").write_text(
        json.dumps({tok: i for i, tok in enumerate(vocab)}), encoding="utf-8"
    )
    (folder / "merges.txt").write_text(
        "#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8"
    )
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "CLIPTokenizer"}))
    return folder


@pytest.fixture(scope="module")
def hf_clip(clip_files):
    from transformers import CLIPTokenizer

    tokenizer = CLIPTokenizer.from_pretrained(str(clip_files), local_files_only=True)
    tokenizer.model_max_length = 10**9
    # the files are CLIP's: the well-known ids of "a photo of a cat"
    assert tokenizer("a photo of a cat").input_ids == [49406, 320, 1125, 539, 320, 2368, 49407]
    return tokenizer


@pytest.fixture(scope="module")
def clip() -> ClipBpeCounter:
    if MERGES is None:
        pytest.skip("open_clip_torch (CLIP's BPE merges) is not installed")
    return ClipBpeCounter()


def _hf_count(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False).input_ids)


def test_clip_counter_agrees_with_transformers_on_hand_written_cases(clip, hf_clip):
    assert len(HAND) >= 200
    wrong = [
        (t, clip.count(t), _hf_count(hf_clip, t))
        for t in HAND
        if clip.count(t) != _hf_count(hf_clip, t)
    ]
    assert wrong == []


@pytest.mark.skipif(not PROMPTS.is_dir(), reason="shared/data/prompts is not available")
def test_clip_counter_agrees_with_transformers_on_benchmark_prompts(clip, hf_clip):
    prompts = data_prompts()
    assert len(prompts) > 5000
    wrong = [t for t in prompts if clip.count(t) != _hf_count(hf_clip, t)]
    assert wrong == []


def test_clip_tokens_are_transformers_tokens(clip, hf_clip):
    for text in (
        "a photo of a cat",
        "It's 8k, don't you think?!",
        "supercalifragilistic café 猫 🐱",
        "a <|endoftext|> b",
    ):
        assert clip.tokens(text) == hf_clip.convert_ids_to_tokens(
            hf_clip(text, add_special_tokens=False).input_ids
        )


def test_clip_counts_exclude_start_and_end_tokens(clip, hf_clip):
    assert clip.count("a photo of a cat") == 5 == len(hf_clip("a photo of a cat").input_ids) - 2
    assert clip.count("") == 0 and clip.count(" \n\t ") == 0
    assert (clip.name, clip.exact) == ("clip-bpe", True)


def test_clip_counter_on_directory_files_through_auto_tokenizer(clip, clip_files):
    counter = counter_from_directory(clip_files)  # no tokenizer.json: transformers' AutoTokenizer
    assert counter.name == f"tokenizer:{clip_files}"
    for text in HAND[:60]:
        assert counter.count(text) == clip.count(text), text


def test_openai_cleaning_unescapes_html_like_open_clip(clip, hf_clip):
    openai = ClipBpeCounter(openai_cleaning=True)
    import html

    for text in ("Tom &amp; Jerry", "&lt;b&gt;bold&lt;/b&gt;", "&amp;amp;", "a photo of a cat"):
        assert openai.count(text) == _hf_count(hf_clip, html.unescape(html.unescape(text)))
    assert openai.count("Tom &amp; Jerry") < clip.count("Tom &amp; Jerry")


def test_clip_counter_reports_a_missing_or_broken_merges_file(tmp_path):
    with pytest.raises(ModelNotFoundError, match="open_clip_torch|does not exist"):
        ClipBpeCounter(tmp_path / "missing.txt.gz")
    garbage = tmp_path / "garbage.txt.gz"
    garbage.write_bytes(b"not gzip at all")
    with pytest.raises(InvalidInputError):
        ClipBpeCounter(garbage)
    no_header = tmp_path / "merges.txt"
    no_header.write_text("i n\nt h\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="header"):
        ClipBpeCounter(no_header)


# ------------------------------------------------------------------ budget fitting


@needs_clip
@pytest.mark.parametrize(("text", "fmt"), [(LONG_TAGS, "tags"), (LONG_PARAGRAPH, "paragraph")])
def test_clean_output_with_the_clip_counter_cuts_to_75_exact_tokens(clip, text, fmt):
    assert clip.count(text) > 75
    exact = clean_output(
        text, fmt=fmt, max_words=1000, max_encoder_tokens=75, encoder="clip-l", counter=clip
    )
    assert exact.truncated
    assert clip.count(exact.text) <= 75
    if fmt == "tags":  # whole tags: the next one would not fit
        following = text[len(exact.text) :].split(",")[1]
        assert clip.count(exact.text + "," + following) > 75
    else:  # whole sentences: the next one would not fit
        assert text.startswith(exact.text)
        following = text[len(exact.text) :].split(".")[0]
        assert clip.count(exact.text + following + ".") > 75
    assert (exact.encoder_tokens, exact.encoder_counter) == (clip.count(exact.text), "clip-bpe")
    assert (
        fit_length(text, max_words=1000, max_encoder_tokens=75, fmt=fmt, counter=clip) == exact.text
    )

    estimated = clean_output(text, fmt=fmt, max_words=1000, max_encoder_tokens=75, encoder="clip-l")
    assert estimated.truncated
    assert estimated.text == fit_length(
        text, max_words=1000, max_encoder_tokens=75, encoder="clip-l", fmt=fmt
    )
    assert estimate_encoder_tokens(estimated.text, "clip-l") <= 75
    assert (estimated.encoder_tokens, estimated.encoder_counter) == (
        estimate_encoder_tokens(estimated.text, "clip-l"),
        "estimate",
    )


@needs_clip
def test_the_exact_counter_cuts_what_the_estimate_would_wrongly_keep(clip):
    # rare animal names: the estimate counts each 1, CLIP splits them ("qu", "ok", "ka</w>")
    rare = (
        "a quokka, an axolotl, a pukeko, a tuatara, a kakapo, a takahe, a pangolin, an okapi, a "
        "fossa, a saiga, a dugong, a tarsier, a numbat, a quoll, a bilby, a hoiho, a weka, "
        "under a kowhai tree, wildlife photograph"
    )
    assert estimate_encoder_tokens(rare, "clip-l") <= 75 < clip.count(rare)
    assert (
        fit_length(rare, max_words=1000, max_encoder_tokens=75, encoder="clip-l", fmt="tags")
        == rare
    )
    cut = fit_length(rare, max_words=1000, max_encoder_tokens=75, fmt="tags", counter=clip)
    assert cut == rare.split(", under")[0]
    assert clip.count(cut) <= 75 < clip.count(cut + ", under a kowhai tree")


def test_clean_output_without_a_counter_is_unchanged():
    raw = "Sure! masterpiece, cat, cat, skateboard,\nneon lights, masterpiece."
    plain = clean_output(raw, fmt="tags", max_words=200)
    assert plain == CleanResult("masterpiece, cat, skateboard, neon lights", False, False)
    assert plain.encoder_tokens is None and plain.encoder_counter is None
    budgeted = clean_output(raw, fmt="tags", max_words=200, max_encoder_tokens=75, encoder="clip")
    assert budgeted.text == plain.text
    assert (budgeted.encoder_tokens, budgeted.encoder_counter) == (
        estimate_encoder_tokens(plain.text, "clip"),
        "estimate",
    )


def test_a_local_tokenizer_counts_the_budget(tmp_path):
    counter = counter_from_directory(_word_level(tmp_path / "t5"))
    text = ". ".join(SENTENCES[:4]) + "."  # 12 + 9 + 10 + 9 tokens (a word or "." each)
    assert counter.count(text) == 40
    out = clean_output(
        text, fmt="paragraph", max_words=1000, max_encoder_tokens=22, counter=counter
    )
    assert out.truncated
    assert out.text == (
        "A ginger cat rides a red skateboard down a sunny street. "
        "the camera tracks alongside at a low angle."
    )
    assert (out.encoder_tokens, out.encoder_counter) == (21, counter.name)


# ---------------------------------------------------------------- counter_for


@needs_clip
def test_counter_for_a_clip_encoder_is_the_shared_clip_counter():
    counter = counter_for("clip-l")
    assert isinstance(counter, ClipBpeCounter) and counter.name == "clip-bpe"
    assert counter_for("CLIP_G") is counter
    assert counter.count("a photo of a cat") == 5


@pytest.mark.parametrize("encoder", ["t5-xxl", "umt5-xxl", "llama", "mistral", "qwen2.5-vl", None])
def test_counter_for_other_encoders_without_a_directory_is_the_estimate(encoder):
    counter = counter_for(encoder)
    assert isinstance(counter, EstimateCounter) and isinstance(counter, EncoderCounter)
    assert (counter.name, counter.exact) == ("estimate", False)
    assert counter.count(LONG_PARAGRAPH) == estimate_encoder_tokens(LONG_PARAGRAPH, encoder)


def test_counter_for_uses_a_given_directory(tmp_path):
    root = _pipeline(tmp_path)
    counter = counter_for("t5-xxl", tokenizer_dir=root)
    assert counter.name == "pipeline:tokenizer_2"
    assert counter_for("t5-xxl", tokenizer_dir=str(root)) is counter
    with pytest.raises(InvalidInputError):
        counter_for("t5-xxl", tokenizer_dir=tmp_path / "nothing-here")


def test_importing_and_counting_never_imports_torch_or_transformers(tmp_path):
    folder = _word_level(tmp_path / "wl")
    code = (
        "import sys, promptx, promptx.text.encoder_count as ec\n"
        "ec.counter_for('clip-l').count('a cat'); ec.counter_for('t5-xxl').count('a cat')\n"
        f"ec.counter_from_directory({str(folder)!r}).count('a cat')\n"
        "bad = [m for m in ('torch', 'transformers') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_without_open_clip_a_clip_encoder_falls_back_to_the_labelled_estimate():
    code = (  # a fresh interpreter in which open_clip cannot be found
        "import importlib.abc, sys\n"
        "class Hide(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'open_clip':\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        "from promptx.text.encoder_count import clip_merges_file, counter_for\n"
        "from promptx.text.cleanup import estimate_encoder_tokens\n"
        "assert clip_merges_file() is None\n"
        "c = counter_for('clip-l')\n"
        "assert (c.name, c.exact) == ('estimate', False), c\n"
        "assert c.count('a photo of a cat') == "
        "estimate_encoder_tokens('a photo of a cat', 'clip-l')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ------------------------------------------------------------ local tokenizers

SENTENCES = [
    "a ginger cat rides a red skateboard down a sunny street",
    "the camera tracks alongside at a low angle",
    "neon lights reflect on the wet street at night",
    "a castle on a cliff above crashing waves",
    "the cat rides the skateboard",
]


def _word_level(folder: Path, *, padded: bool = True) -> Path:
    """A WordLevel tokenizer.json that adds <s> ... </s> and, in the file, truncates and pads."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        SENTENCES, trainers.WordLevelTrainer(special_tokens=["[UNK]", "<s>", "</s>", "[PAD]"])
    )
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))],
    )
    if padded:
        tok.enable_truncation(max_length=8)
        tok.enable_padding(length=16, pad_id=tok.token_to_id("[PAD]"), pad_token="[PAD]")
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder


def _byte_bpe(folder: Path, *, as_files: bool = False) -> Path:
    """A byte-level BPE trained on SENTENCES: a tokenizer.json, or vocab.json + merges.txt."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        SENTENCES,
        trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    folder.mkdir(parents=True, exist_ok=True)
    if as_files:
        tok.model.save(str(folder))
        (folder / "tokenizer_config.json").write_text(
            json.dumps({"tokenizer_class": "GPT2Tokenizer", "add_prefix_space": False})
        )
    else:
        tok.save(str(folder / "tokenizer.json"))
    return folder


def test_a_tokenizer_json_is_counted_exactly_without_special_tokens_truncation_or_padding(tmp_path):
    from tokenizers import Tokenizer

    folder = _word_level(tmp_path / "wl")
    reference = Tokenizer.from_file(str(folder / "tokenizer.json"))
    reference.no_truncation()
    reference.no_padding()
    counter = counter_from_directory(folder)
    assert isinstance(counter, TokenizerCounter) and counter.name == f"tokenizer:{folder}"
    assert counter.count("a ginger cat rides a red skateboard") == 7
    assert counter.count("a purple cat") == 3  # "purple" is [UNK]: one token
    assert counter.count("") == 0
    for text in SENTENCES + ["the cat rides " * 20, "zebra, unicorn!"]:
        assert counter.count(text) == len(reference.encode(text).ids) - 2
    by_file = counter_from_directory(folder / "tokenizer.json")
    assert by_file.name == f"tokenizer:{folder / 'tokenizer.json'}"
    assert by_file.count("the cat rides " * 20) == 60


def test_a_byte_level_bpe_json_and_its_vocab_files_count_the_same(tmp_path):
    from tokenizers import Tokenizer

    json_counter = counter_from_directory(_byte_bpe(tmp_path / "json"))
    files_counter = counter_from_directory(
        _byte_bpe(tmp_path / "files", as_files=True)
    )  # via AutoTokenizer
    reference = Tokenizer.from_file(str(tmp_path / "json" / "tokenizer.json"))
    for text in SENTENCES + ["Zebra crossing at 5pm!", "café 猫 🐱", "skateboarding cats"]:
        assert json_counter.count(text) == len(reference.encode(text).ids)
        assert files_counter.count(text) == json_counter.count(text), text


def _pipeline(tmp_path: Path, *, index: bool = True) -> Path:
    """A diffusers-style folder: tokenizer/ (CLIP-labelled BPE), tokenizer_2/ (T5-labelled
    WordLevel)."""
    root = tmp_path / "pipe"
    _byte_bpe(root / "tokenizer")
    _word_level(root / "tokenizer_2")
    (root / "text_encoder_2").mkdir()
    (root / "text_encoder_2" / "config.json").write_text(json.dumps({"model_type": "t5"}))
    if index:
        (root / "model_index.json").write_text(
            json.dumps(
                {
                    "_class_name": "SomePipeline",
                    "tokenizer": ["transformers", "CLIPTokenizer"],
                    "text_encoder": ["transformers", "CLIPTextModel"],
                    "tokenizer_2": ["transformers", "T5TokenizerFast"],
                    "text_encoder_2": ["transformers", "T5EncoderModel"],
                    "vae": ["diffusers", "AutoencoderKL"],
                }
            )
        )
    else:
        (root / "tokenizer" / "tokenizer_config.json").write_text(
            json.dumps({"tokenizer_class": "CLIPTokenizer"})
        )
    return root


@pytest.mark.parametrize("index", [True, False])
def test_a_pipeline_directory_gives_the_tokenizer_of_the_encoder(tmp_path, index):
    root = _pipeline(tmp_path, index=index)
    t5 = counter_from_directory(root, encoder="t5-xxl")
    assert t5.name == "pipeline:tokenizer_2"
    assert t5.count("the cat rides the skateboard") == 5
    assert counter_from_directory(root, encoder="umt5-xxl").name == "pipeline:tokenizer_2"
    clip_l = counter_from_directory(root, encoder="clip-l")
    assert clip_l.name == "pipeline:tokenizer"
    assert clip_l.count("the cat rides the skateboard") == counter_from_directory(
        root / "tokenizer"
    ).count("the cat rides the skateboard")
    with pytest.raises(InvalidInputError, match="several tokenizers"):
        counter_from_directory(root)
    with pytest.raises(InvalidInputError, match="no tokenizer for encoder 'llama'"):
        counter_from_directory(root, encoder="llama")


def test_an_sd3_like_pipeline_gives_tokenizer_3_for_t5(tmp_path):
    root = tmp_path / "sd3"
    for name in ("tokenizer", "tokenizer_2"):
        _byte_bpe(root / name)
    _word_level(root / "tokenizer_3")
    (root / "model_index.json").write_text(
        json.dumps(
            {
                "tokenizer": ["transformers", "CLIPTokenizer"],
                "tokenizer_2": ["transformers", "CLIPTokenizer"],
                "tokenizer_3": ["transformers", "T5TokenizerFast"],
                "text_encoder_3": ["transformers", "T5EncoderModel"],
            }
        )
    )
    assert counter_from_directory(root, encoder="t5-xxl").name == "pipeline:tokenizer_3"
    assert counter_from_directory(root, encoder="clip-l").name == "pipeline:tokenizer"


def test_a_pipeline_with_one_tokenizer_uses_it(tmp_path):
    root = tmp_path / "wan"
    _word_level(root / "tokenizer")
    (root / "transformer").mkdir()
    assert counter_from_directory(root, encoder="umt5-xxl").name == "pipeline:tokenizer"
    assert counter_from_directory(root).name == "pipeline:tokenizer"
    (root / "model_index.json").write_text(
        json.dumps({"tokenizer": ["transformers", "T5TokenizerFast"]})
    )
    with pytest.raises(InvalidInputError, match="no tokenizer for encoder 'clip-l'"):
        counter_from_directory(root, encoder="clip-l")


def test_missing_or_garbage_directories_are_invalid_input(tmp_path):
    with pytest.raises(InvalidInputError, match="does not exist"):
        counter_from_directory(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidInputError, match="no tokenizer here"):
        counter_from_directory(empty)
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "tokenizer.json").write_text("{not json")
    with pytest.raises(InvalidInputError, match="not a usable tokenizer.json"):
        counter_from_directory(garbage)
    with pytest.raises(InvalidInputError):
        counter_from_directory(garbage / "tokenizer.json")
    config_only = tmp_path / "config-only"
    config_only.mkdir()
    (config_only / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "NoSuchTokenizer"})
    )
    with pytest.raises(InvalidInputError, match="no usable tokenizer"):
        counter_from_directory(config_only)
    text_file = tmp_path / "notes.txt"
    text_file.write_text("hello")
    with pytest.raises(InvalidInputError):
        counter_from_directory(text_file)
    pipe = tmp_path / "pipe-garbage"
    (pipe / "tokenizer_2").mkdir(parents=True)
    (pipe / "tokenizer_2" / "tokenizer.json").write_text("[]")
    with pytest.raises(InvalidInputError):
        counter_from_directory(pipe, encoder="t5-xxl")
