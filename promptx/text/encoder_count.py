"""Count a diffusion text encoder's tokens exactly, where a tokenizer is at hand offline.

The word/token budget of a profile (``length.encoder``, ``length.max_encoder_tokens``)
is checked with an ``EncoderCounter``:

- ``ClipBpeCounter`` ("clip-bpe"): CLIP's byte-level BPE, computed here from the merges
  file that the ``open_clip_torch`` package ships (``open_clip/bpe_simple_vocab_16e6.txt.gz``;
  install it with ``pip install --no-deps open_clip_torch``: its dependencies would pull a
  CUDA torch and torchvision). The file is located with ``importlib``; open_clip itself is
  never imported (it imports torch).
- ``TokenizerCounter`` ("tokenizer:DIR" or "pipeline:tokenizer_3"): a local tokenizer, from a
  ``tokenizer.json`` (``tokenizers`` library), a directory of tokenizer files (transformers'
  ``AutoTokenizer``, offline) or a diffusers pipeline directory (``counter_from_directory``).
- ``EstimateCounter`` ("estimate"): ``promptx.text.cleanup.estimate_encoder_tokens``, the
  labelled fallback when neither is available.

``counter_for(encoder, tokenizer_dir)`` picks one. Every counter counts the tokens of the text
only, without the start/end (BOS/EOS) tokens the encoder adds: compare with the usable
length (75 of CLIP's 77). Importing this module is cheap: no torch, no transformers.
"""

from __future__ import annotations

import functools
import gzip
import html
import importlib.util
import json
import re
import unicodedata
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from promptx.errors import InvalidInputError, ModelNotFoundError
from promptx.text.cleanup import estimate_encoder_tokens

__all__ = [
    "ClipBpeCounter",
    "EncoderCounter",
    "EstimateCounter",
    "TokenizerCounter",
    "clip_merges_file",
    "counter_for",
    "counter_from_directory",
]


class EncoderCounter(ABC):
    """Counts the tokens a text encoder makes of a text (special tokens excluded)."""

    #: the label reported to users: "clip-bpe", "tokenizer:DIR", "pipeline:tokenizer_2", "estimate"
    name: str
    #: False for the estimate, True for a real tokenizer
    exact: bool = True

    @abstractmethod
    def count(self, text: str) -> int:
        """Tokens of ``text``, without BOS/EOS."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class EstimateCounter(EncoderCounter):
    """``estimate_encoder_tokens(text, encoder)`` behind the counter interface."""

    exact = False

    def __init__(self, encoder: str | None) -> None:
        self.name = "estimate"
        self.encoder = encoder

    def count(self, text: str) -> int:
        return estimate_encoder_tokens(text, self.encoder)


# ------------------------------------------------------------------------- CLIP BPE

_CLIP_MERGES = 49152 - 256 - 2  # CLIP's vocabulary: 256 bytes x 2 (+"</w>"), merges, 2 specials
_CLIP_SPECIALS = ("<|startoftext|>", "<|endoftext|>")
_SPECIAL_SPLIT = re.compile("(" + "|".join(re.escape(s) for s in _CLIP_SPECIALS) + ")")
# Unicode White_Space: what both Python's and the tokenizers library's \s agree on
# (Python's str \s also takes \x1c-\x1f, which CLIP's fast tokenizer keeps as symbols).
_WS = r"\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_WS_RUN = re.compile(f"[{_WS}]+")
_NOT_CLIP_SPACE = re.compile("[\x1c-\x1f]")
_CLIP_PIECE_PATTERN = (
    r"<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}|"
    rf"[^{_WS}\p{{L}}\p{{N}}]+"
)
_CACHE_LIMIT = 200_000


def _byte_symbols() -> list[str]:
    """The printable character CLIP's (and GPT-2's) byte-level BPE uses for each byte.

    Bytes that are printable Latin-1 characters stand for themselves; the others (control
    characters, space, a few Latin-1 gaps) are given the characters from U+0100 up, in byte order.
    """
    printable = {*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)}
    symbols, extra = [], 0
    for b in range(256):
        if b in printable:
            symbols.append(chr(b))
        else:
            symbols.append(chr(256 + extra))
            extra += 1
    return symbols


def clip_merges_file() -> Path | None:
    """open_clip's ``bpe_simple_vocab_16e6.txt.gz``, or None when open_clip_torch is not installed.

    Finds the package directory without importing open_clip (which imports torch).
    """
    try:
        spec = importlib.util.find_spec("open_clip")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for folder in spec.submodule_search_locations or ():
        path = Path(folder) / "bpe_simple_vocab_16e6.txt.gz"
        if path.is_file():
            return path
    return None


def _read_merges(path: Path) -> list[tuple[str, str]]:
    """The first 48894 merges of a CLIP merges file (gzip or plain; first line a header)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    merges: list[tuple[str, str]] = []
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            first = fh.readline()
            if "#version" not in first and not first.startswith("#"):
                raise InvalidInputError(
                    f"{path}: not a CLIP BPE merges file (no '#version' header)"
                )
            for line in fh:
                parts = line.split()
                if len(parts) != 2:
                    if not parts:
                        continue
                    raise InvalidInputError(f"{path}: malformed merge line {line.strip()!r}")
                merges.append((parts[0], parts[1]))
                if len(merges) == _CLIP_MERGES:
                    break
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise InvalidInputError(f"cannot read CLIP BPE merges from {path}: {exc}") from exc
    if not merges:
        raise InvalidInputError(f"{path}: no merges")
    return merges


class ClipBpeCounter(EncoderCounter):
    """CLIP's tokenizer (SD 1.x/SDXL/SD3's CLIP-L and OpenCLIP-G share it), counted exactly.

    Matches transformers' ``CLIPTokenizer`` (transformers 5; ``CLIPTokenizerFast`` in 4.x),
    which diffusers pipelines load: NFC, lowercase, CLIP's pre-tokenizer regex (contractions,
    letter runs, single digits, runs of other symbols; whitespace dropped), then byte-level
    BPE with "</w>" marking the end of each word. A literal ``<|startoftext|>`` or
    ``<|endoftext|>`` in the text counts 1, as the special token it becomes. (transformers
    4.x's slow ``CLIPTokenizer`` runs ftfy when installed, else splits CJK characters apart:
    the same counts for ordinary English text.)

    ``openai_cleaning=True`` cleans as OpenAI's/open_clip's own tokenizer does instead:
    ``ftfy.fix_text`` (only if ftfy is importable; it is not a dependency) and
    ``html.unescape`` twice before lowercasing. That differs from the default only for text
    with HTML entities ("Tom &amp; Jerry": 5 tokens by default, 3 here) and, with ftfy, for
    curly quotes (ftfy straightens "it’s" to "it's": 2 tokens instead of 4), full-width
    ASCII forms, ligatures and mojibake.

    Counts are cached per whitespace-separated chunk ("twilight," -> 2), so counting the
    prefixes of one text while fitting a budget costs little after the first call.
    Thread-safe.
    """

    def __init__(
        self, merges_file: str | Path | None = None, *, openai_cleaning: bool = False
    ) -> None:
        path = Path(merges_file) if merges_file is not None else clip_merges_file()
        if path is None:
            raise ModelNotFoundError(
                "exact CLIP token counts need CLIP's BPE merges file, which the open_clip_torch "
                "package ships: pip install --no-deps open_clip_torch"
            )
        if not path.is_file():
            raise ModelNotFoundError(f"CLIP BPE merges file {path} does not exist")
        try:
            import regex  # a dependency of transformers; needed for \p{L} and \p{N}
        except ImportError as exc:  # pragma: no cover - transformers always brings it
            raise ModelNotFoundError("exact CLIP token counts need the 'regex' package") from exc
        self.name = "clip-bpe"
        self.path = path
        self.openai_cleaning = openai_cleaning
        self._ranks = {pair: rank for rank, pair in enumerate(_read_merges(path))}
        self._bytes = _byte_symbols()
        self._pieces = regex.compile(_CLIP_PIECE_PATTERN)
        self._cache: dict[str, int] = {}
        self._ftfy = None
        if openai_cleaning:
            try:
                import ftfy

                self._ftfy = ftfy.fix_text
            except ImportError:
                pass

    # the text as the tokenizer sees it ----------------------------------------------
    def _normalize(self, text: str) -> str:
        if self.openai_cleaning:
            if self._ftfy is not None:
                text = self._ftfy(text)
            text = html.unescape(html.unescape(text))
        if not text.isascii():
            text = unicodedata.normalize("NFC", text)
            # the tokenizers library lowercases character by character: no final sigma
            text = text.replace("Σ", "σ")
        return text.lower()

    @staticmethod
    def _chunks(text: str) -> list[str]:
        """Whitespace-separated chunks; no pre-tokenizer piece spans whitespace."""
        if _NOT_CLIP_SPACE.search(text):  # str.split() would split at \x1c-\x1f; CLIP does not
            return [c for c in _WS_RUN.split(text) if c]
        return text.split()

    # BPE -----------------------------------------------------------------------------
    def _bpe(self, word: str) -> list[str]:
        """The BPE tokens of one pre-tokenized word (merges applied lowest rank first)."""
        symbols = [self._bytes[b] for b in word.encode("utf-8", "surrogatepass")]
        symbols[-1] += "</w>"
        ranks = self._ranks
        while len(symbols) > 1:
            best_rank, best = None, None
            for pair in zip(symbols, symbols[1:]):
                rank = ranks.get(pair)
                if rank is not None and (best_rank is None or rank < best_rank):
                    best_rank, best = rank, pair
            if best is None:
                break
            first, second = best
            merged, i, n = [], 0, len(symbols)
            while i < n:  # every occurrence of the pair, left to right
                if i < n - 1 and symbols[i] == first and symbols[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        return symbols

    def _parts(self, text: str) -> list[str]:
        """``text`` split around literal special tokens (kept as parts of their own)."""
        return [p for p in _SPECIAL_SPLIT.split(text) if p] if "<|" in text else [text]

    def tokens(self, text: str) -> list[str]:
        """The BPE tokens of ``text`` (for inspection and tests; ``count`` is the fast path)."""
        out: list[str] = []
        for part in self._parts(text):
            if part in _CLIP_SPECIALS:
                out.append(part)
                continue
            for chunk in self._chunks(self._normalize(part)):
                for word in self._pieces.findall(chunk):
                    out.extend(self._bpe(word))
        return out

    def count(self, text: str) -> int:
        if not text:
            return 0
        if "<|" in text:
            return sum(1 if p in _CLIP_SPECIALS else self._count(p) for p in self._parts(text))
        return self._count(text)

    def _count(self, text: str) -> int:
        chunks = self._chunks(self._normalize(text))
        cache = self._cache
        try:
            return sum(map(cache.__getitem__, chunks))
        except KeyError:
            pass
        total = 0
        for chunk in chunks:
            n = cache.get(chunk)
            if n is None:
                n = sum(len(self._bpe(word)) for word in self._pieces.findall(chunk))
                if len(cache) < _CACHE_LIMIT:
                    cache[chunk] = n
            total += n
        return total


# ---------------------------------------------------------------- local tokenizers

_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "spiece.model",
    "tokenizer.model",
    "sentencepiece.bpe.model",
    "vocab.txt",
)
_SUBFOLDER = re.compile(r"tokenizer(?:_(\d+))?")
# encoder family -> words that name it in model_index.json / configs, most specific first
_FAMILIES = (
    ("umt5", ("umt5", "t5")),
    ("t5", ("t5",)),
    ("clip", ("clip",)),
    ("llama", ("llama", "llava")),
    ("mistral", ("mistral", "pixtral", "tekken")),
    ("qwen", ("qwen",)),
    ("gemma", ("gemma",)),
    ("glm", ("glm", "chatglm")),
    ("bert", ("bert",)),
)


class TokenizerCounter(EncoderCounter):
    """A local tokenizer: a ``tokenizers.Tokenizer`` or a transformers tokenizer.

    Counts ``encode(text, add_special_tokens=False)``: no BOS/EOS or other tokens the
    tokenizer's post-processor adds, no truncation, no padding (even where tokenizer.json
    configures them). Special tokens written literally in the text count, as they take a place.
    """

    def __init__(self, tokenizer: Any, name: str) -> None:
        self.name = name
        from tokenizers import Tokenizer

        if isinstance(tokenizer, Tokenizer):
            tokenizer = Tokenizer.from_str(tokenizer.to_str())  # a private copy to reconfigure
            tokenizer.no_truncation()
            tokenizer.no_padding()
            self._count = lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)
        elif callable(getattr(tokenizer, "encode", None)):
            # the caller's tokenizer is not touched (a pipeline's must keep its own max length);
            # verbose=False: no "longer than the model's maximum" warnings, we count, not encode
            self._count = lambda text: len(
                tokenizer.encode(text, add_special_tokens=False, verbose=False)
            )
        else:
            raise InvalidInputError(f"{name}: not a tokenizer ({type(tokenizer).__name__})")
        self.tokenizer = tokenizer

    def count(self, text: str) -> int:
        return self._count(text) if text else 0


def _has_tokenizer(folder: Path) -> bool:
    return any((folder / f).is_file() for f in _TOKENIZER_FILES)


def _load_folder(folder: Path, name: str) -> TokenizerCounter:
    file = folder / "tokenizer.json"
    if file.is_file():
        return _load_json(file, name)
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except ImportError as exc:  # pragma: no cover - transformers is a dependency
        raise InvalidInputError(f"{folder}: loading tokenizer files needs transformers") from exc
    except Exception as exc:  # noqa: BLE001 - transformers raises many kinds
        raise InvalidInputError(
            f"{folder}: no usable tokenizer ({type(exc).__name__}: {exc})"
        ) from exc
    if isinstance(tokenizer, bool) or not callable(getattr(tokenizer, "encode", None)):
        raise InvalidInputError(f"{folder}: no usable tokenizer")
    return TokenizerCounter(tokenizer, name)


def _load_json(file: Path, name: str) -> TokenizerCounter:
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(file))
    except Exception as exc:  # noqa: BLE001 - tokenizers raises plain Exception
        raise InvalidInputError(f"{file} is not a usable tokenizer.json: {exc}") from exc
    return TokenizerCounter(tokenizer, name)


def encoder_family(encoder: str | None) -> tuple[str, ...]:
    key = re.sub(r"[^a-z0-9]", "", (encoder or "").lower())
    for family, words in _FAMILIES:
        if key.startswith(family):
            return words
    return ()


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _describe(root: Path, folder: Path, index: dict) -> str:
    """What names the tokenizer in ``folder`` and its text encoder: class names, model types."""
    suffix = folder.name[len("tokenizer") :]
    words = [
        json.dumps(index.get(folder.name, "")),
        json.dumps(index.get("text_encoder" + suffix, "")),
    ]
    words.append(str(_json(folder / "tokenizer_config.json").get("tokenizer_class", "")))
    config = _json(root / ("text_encoder" + suffix) / "config.json")
    words += [str(config.get("model_type", "")), json.dumps(config.get("architectures", ""))]
    return " ".join(words).lower()


def _pick_subfolder(root: Path, folders: list[Path], encoder: str | None) -> Path:
    index = _json(root / "model_index.json")
    described = {f: _describe(root, f, index) for f in folders}
    family = encoder_family(encoder)
    for word in family:
        for folder in folders:
            if word in described[folder]:
                return folder
    if len(folders) == 1:
        any_family = any(w in described[folders[0]] for _, words in _FAMILIES for w in words)
        if not family or not any_family:
            return folders[0]
    found = ", ".join(f.name for f in folders)
    if family:
        raise InvalidInputError(
            f"{root}: no tokenizer for encoder {encoder!r} among {found}; pass the subfolder itself"
        )
    raise InvalidInputError(
        f"{root}: several tokenizers ({found}); name the encoder "
        f"(e.g. clip-l, t5-xxl) or pass the subfolder itself"
    )


def counter_from_directory(path: str | Path, encoder: str | None = None) -> TokenizerCounter:
    """A counter from a local tokenizer; nothing is downloaded.

    ``path`` may be:

    - a ``tokenizer.json`` file, or a directory holding one: loaded with the ``tokenizers``
      library (name "tokenizer:PATH");
    - a directory of other tokenizer files (``tokenizer_config.json`` with ``vocab.json`` +
      ``merges.txt``, ``spiece.model``, ...): transformers' ``AutoTokenizer`` with
      ``local_files_only=True`` (name "tokenizer:PATH");
    - a diffusers pipeline directory with ``tokenizer/``, ``tokenizer_2/``, ``tokenizer_3/``...
      (name "pipeline:tokenizer_N"). The subfolder is the first (lowest-numbered) whose
      tokenizer class or text encoder (``model_index.json``'s ``tokenizer_N`` and
      ``text_encoder_N`` entries, ``tokenizer_config.json``'s ``tokenizer_class``,
      ``text_encoder_N/config.json``'s ``model_type`` and ``architectures``) names the
      family of ``encoder``: "clip-l" -> CLIP (SD3's ``tokenizer``), "t5-xxl" -> T5 (SD3's
      ``tokenizer_3``), "umt5-xxl" -> umT5 or T5, "llama" -> Llama/LLaVA, "mistral" ->
      Mistral/Pixtral, "qwen2.5-vl" -> Qwen. A pipeline with a single tokenizer uses it
      unless it clearly belongs to another family than ``encoder``.

    Raises InvalidInputError when the path does not exist or holds no usable tokenizer,
    or when a pipeline's tokenizers cannot be told apart.
    """
    root = Path(path).expanduser()
    if not root.exists():
        raise InvalidInputError(f"tokenizer path {root} does not exist")
    if root.is_file():
        if root.suffix != ".json":
            raise InvalidInputError(f"{root}: give a tokenizer.json file or a tokenizer directory")
        return _load_json(root, f"tokenizer:{root}")
    if _has_tokenizer(root):
        return _load_folder(root, f"tokenizer:{root}")
    try:
        entries = sorted(root.iterdir())
    except OSError as exc:
        raise InvalidInputError(f"cannot read {root}: {exc}") from exc
    folders = [
        d for d in entries if d.is_dir() and _SUBFOLDER.fullmatch(d.name) and _has_tokenizer(d)
    ]
    folders.sort(key=lambda d: int(_SUBFOLDER.fullmatch(d.name).group(1) or 1))
    if not folders:
        raise InvalidInputError(
            f"{root}: no tokenizer here (expected tokenizer.json, tokenizer files such as "
            f"tokenizer_config.json + vocab.json, or a diffusers pipeline with tokenizer/ "
            "subfolders)"
        )
    chosen = _pick_subfolder(root, folders, encoder)
    return _load_folder(chosen, f"pipeline:{chosen.name}")


# ---------------------------------------------------------------------- the choice


@functools.lru_cache(maxsize=1)
def _default_clip() -> ClipBpeCounter | None:
    return ClipBpeCounter() if clip_merges_file() is not None else None


@functools.lru_cache(maxsize=8)
def _cached_directory(path: str, encoder: str | None) -> TokenizerCounter:
    return counter_from_directory(path, encoder)


def counter_for(encoder: str | None, tokenizer_dir: str | Path | None = None) -> EncoderCounter:
    """The best counter at hand for ``encoder`` (a profile's ``length.encoder``).

    1. ``tokenizer_dir`` given: its tokenizer (``counter_from_directory``; errors are raised,
       not hidden behind the estimate);
    2. a CLIP encoder ("clip", "clip-l", "clip_g", ...) and open_clip_torch's merges file
       installed: ``ClipBpeCounter`` ("clip-bpe");
    3. otherwise the estimate, labelled "estimate".

    Counters are shared: the CLIP one and the last few directories' are built once.
    """
    if tokenizer_dir is not None:
        return _cached_directory(str(Path(tokenizer_dir).expanduser().resolve()), encoder)
    if (encoder or "").lower().startswith("clip"):
        clip = _default_clip()
        if clip is not None:
            return clip
    return EstimateCounter(encoder)
