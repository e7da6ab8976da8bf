"""The fuzz table of issue 44: bad and odd inputs to every surface, each with its typed outcome.

Data only; ``test_fuzz.py`` runs it (one test per case). A case is ``Case(surface, name, input,
expected)``:

- ``api``: ``Call(prompt, target, options, method)`` on a shared ``promptx.Enhancer`` (or
  ``promptx.enhance``); expected ``Raises(ErrorClass, "substring")`` or ``Ok(...)`` (the call
  returns an ``EnhancedPrompt`` that serialises to JSON, with the properties given).
- ``cli``: ``Argv(args, stdin)`` through click's ``CliRunner`` on ``promptx.cli.main:main``;
  ``cli-process``: the same as a real ``python -m promptx`` process. Expected ``Exit(code, kind)``:
  kind ``"error"`` is exit 1 and exactly one stderr line starting ``promptx: error:``, ``"usage"``
  is click's usage error (exit 2, ``Error:``), ``"ok"`` exit 0. Never ``Traceback`` or
  ``internal error``.
- ``batch``: ``BatchFile(name, content)`` run with ``promptx enhance --file F --output O`` in a
  temporary folder; expected ``BatchInvariants`` (see BATCH_TIGHT below).
- ``http``: ``Request(method, path, body)`` to one real ``promptx serve``; expected
  ``Http(status, type)``: every error is ``{"error": {"type", "message"}}`` with a 4xx status;
  ``Http(200, ok=Ok(...))`` for a good request (its answer must be about its own prompt).

``Either(a, b)``: either outcome is right (a promise the docs leave open). ``xfail``: a known
product bug, run as ``xfail(strict=True)``; the expectation stays the right behaviour.

Files a case needs (an image, a directory) are ``Asset("name")`` placeholders that the runner
makes in a temporary folder: ``ok.png``, ``truncated.png``, ``not-an-image.png``, ``missing.png``
(never created), ``a-dir`` (a directory).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from promptx.errors import ImageError, InvalidInputError, UnknownTargetError

MAX_SEED = 2**62
SERVER_MAX_PROMPT_CHARS = 2000  # the fuzz server's --max-prompt-chars
SERVER_MAX_BODY_BYTES = 200_000  # and --max-body-bytes

#: Batch files: every unusable row becomes an error line ``{"id", "error": {"type", "message"}}``
#: and the run goes on (exit 3 when rows failed, else 0); what would fail every row stops the run
#: (exit 1). Every case checks the invariants (no traceback, no internal error, every non-blank
#: input line accounted for by exactly one output line, or a stopping error naming the bad line or
#: file) and, with BATCH_TIGHT, the strict outcome: a case with ``stops`` exits 1; any other
#: writes exactly ``error_rows`` error lines and exits 3 when there are some, else 0.
BATCH_TIGHT = True


# ---------------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Asset:
    """A file the runner creates in a temporary folder (see the module's docstring)."""

    name: str


@dataclass(frozen=True)
class Call:
    prompt: Any
    target: Any = "video"
    options: dict = field(default_factory=dict)
    method: str = "enhance"  # enhance | enhance_many | stream | promptx.enhance


@dataclass(frozen=True)
class Argv:
    args: tuple
    stdin: bytes | None = None


@dataclass(frozen=True)
class BatchFile:
    name: str  # the prompt file's name (its suffix picks text or JSONL)
    content: bytes
    args: tuple = ()  # more options for promptx enhance
    output: str | None = "out.jsonl"  # None: the lines go to stdout
    existing_output: bytes | None = None  # what the output file holds before the run
    runs: int = 1  # 2: the same command again (resuming)
    same_output: bool = False  # --output is the prompt file itself


@dataclass(frozen=True)
class Request:
    method: str = "POST"
    path: str = "/v1/enhance"
    body: bytes | None = None
    content_type: str | None = "application/json"


def post(obj: Any, path: str = "/v1/enhance") -> Request:
    """A JSON POST of ``obj``."""
    return Request(body=json.dumps(obj).encode(), path=path)


# -------------------------------------------------------------------------------- outcomes


@dataclass(frozen=True)
class Raises:
    error: type
    match: str = ""


@dataclass(frozen=True)
class Ok:
    skipped: bool | None = None
    starts_with: str | None = None  # result.text starts with it (the first letter in either case)
    language: str | None = None
    original: str | None = None  # result.original_prompt
    absent: tuple = ()  # substrings result.text must not hold
    count: int | None = None  # enhance_many: how many results


@dataclass(frozen=True)
class Exit:
    code: int
    kind: str  # ok | error | usage
    needle: str = ""  # in the error line (error, usage) or in stdout (ok)
    absent: tuple = ()  # not in stdout


@dataclass(frozen=True)
class BatchInvariants:
    exits: tuple = (0, 1, 3)
    names: str | None = None  # what a stopping error (exit 1) must name: the file or file:line
    error_rows: int = 0  # the error lines expected
    stops: bool = False  # the whole run is refused (exit 1) rather than rows failing


@dataclass(frozen=True)
class Http:
    status: int
    type: str | None = None  # error.type
    needle: str = ""  # in error.message
    ok: Ok | None = None  # for a 200


@dataclass(frozen=True)
class Either:
    options: tuple


@dataclass(frozen=True)
class Case:
    surface: str  # api | cli | cli-process | batch | http
    name: str
    input: Any
    expected: Any
    xfail: str | None = None  # a product bug: the reason, run as xfail(strict=True)

    @property
    def id(self) -> str:
        return f"{self.surface}:{self.name}"


# ------------------------------------------------------------------------------------ API

A_CAT = "a cat on a roof"
_PROMPT_EMPTY = Raises(InvalidInputError, "prompt is empty")
_SEED = Raises(InvalidInputError, "seed must be a non-negative integer")
_TEMPERATURE = Raises(InvalidInputError, "temperature must be between 0 and 2")
_TOKENS = Raises(InvalidInputError, "max_new_tokens must be between 1 and 4096")
_STRENGTH = Raises(InvalidInputError, "strength must be one of light, medium, full")
_LANGUAGE = Raises(InvalidInputError, "unknown language")
_TARGET_TYPE = Raises(InvalidInputError, "target must be a target name")
_UNKNOWN_TARGET = Raises(UnknownTargetError, "unknown target")

API = [
    # the prompt
    Case("api", "prompt-None", Call(None), _PROMPT_EMPTY),
    Case("api", "prompt-empty", Call(""), _PROMPT_EMPTY),
    Case("api", "prompt-whitespace", Call("  \n\t  "), _PROMPT_EMPTY),
    Case(
        "api", "prompt-int", Call(42), Raises(InvalidInputError, "prompt must be a string, not int")
    ),
    Case(
        "api",
        "prompt-bytes",
        Call(b"a cat"),
        Raises(InvalidInputError, "prompt must be a string, not bytes"),
    ),
    Case(
        "api",
        "prompt-list",
        Call(["a cat"]),
        Raises(InvalidInputError, "prompt must be a string, not list"),
    ),
    Case(
        "api",
        "prompt-huge-20001",
        Call("x" * 20_001),
        Raises(InvalidInputError, "the limit is 20000"),
    ),
    Case(
        "api",
        "prompt-huge-words",
        Call("a cat " * 5000),
        Raises(InvalidInputError, "the limit is 20000"),
    ),
    Case(
        "api",
        "prompt-only-markup",
        Call("<b></b><p> </p><br/>"),
        Raises(InvalidInputError, "prompt holds only HTML markup"),
    ),
    Case(
        "api",
        "prompt-script-inside",
        Call("a cat <script>alert(1)</script> on a roof"),
        Ok(
            skipped=False,
            starts_with=A_CAT,
            original=A_CAT,
            absent=("<script", "alert", "</script>"),
        ),
    ),
    Case(
        "api",
        "prompt-script-sdxl",
        Call("a cat <script>alert(1)</script> on a roof", "sdxl"),
        Ok(skipped=False, starts_with=A_CAT, absent=("<script", "alert")),
    ),
    Case(
        "api",
        "prompt-img-onerror",
        Call("a cat on a roof <img src=x onerror=alert(1)>"),
        Ok(skipped=False, starts_with=A_CAT, absent=("<img", "onerror")),
    ),
    Case(
        "api",
        "prompt-script-split-by-a-tag",
        Call("a cat <scr<b>ipt>alert(1)</script> on a roof"),
        Ok(skipped=False, absent=("<script", "alert")),
    ),
    Case(
        "api",
        "prompt-comment-holding-script",
        Call("a cat <!-- <script> --> on a roof"),
        Ok(skipped=False, starts_with=A_CAT, original=A_CAT),
    ),
    Case("api", "prompt-emoji-only", Call("🐱🛹🌙"), Ok(skipped=True, starts_with="🐱🛹🌙")),
    Case("api", "prompt-one-character", Call("x"), Ok(skipped=True, starts_with="x")),
    Case("api", "prompt-punctuation-only", Call("?!"), Ok(skipped=True)),
    Case(
        "api",
        "prompt-control-characters",
        Call("a cat\x07\x1b[31m on a roof"),
        Ok(skipped=False, starts_with="a cat"),
    ),
    Case(
        "api",
        "prompt-NUL-byte",
        Call("a cat\x00 on a roof"),
        Ok(skipped=False, starts_with="a cat"),
    ),
    Case(
        "api",
        "prompt-RTL-arabic",
        Call("قطة على سطح"),
        Ok(skipped=True, language="ar", starts_with="قطة على سطح"),
    ),
    Case("api", "prompt-RTL-hebrew", Call("חתול על הגג"), Ok(skipped=True, language="he")),
    Case("api", "prompt-bidi-override", Call("a cat \u202eon a roof"), Ok(starts_with="a cat")),
    Case(
        "api",
        "prompt-zero-width",
        Call("a\u200b cat\u200d on\ufeff a roof"),
        Ok(skipped=False, starts_with="a"),
    ),
    Case("api", "prompt-long-single-word", Call("a" * 3000), Ok(starts_with="a" * 3000)),
    Case("api", "prompt-200-words-skipped", Call(" ".join(["cat"] * 200)), Ok(skipped=True)),
    Case(
        "api",
        "prompt-200-words-forced",
        Call(" ".join(["cat"] * 200), options={"force": True}),
        Ok(skipped=False),
    ),
    Case(
        "api",
        "prompt-dutch",
        Call("een zwarte kat op het dak"),
        Ok(skipped=True, language="nl", starts_with="een zwarte kat op het dak"),
    ),
    Case(
        "api",
        "prompt-english-and-chinese",
        Call("a cat 一只猫在屋顶上"),
        Ok(skipped=True, language="en+zh"),
    ),
    Case(
        "api",
        "prompt-tabs-and-newlines",
        Call("a cat\n\non\ta roof"),
        Ok(skipped=False, starts_with=A_CAT),
    ),
    Case(
        "api",
        "prompt-lone-surrogate",
        Call("a cat \ud800 on a roof"),
        Raises(InvalidInputError, "lone surrogate"),
    ),
    Case(
        "api",
        "caption-lone-surrogate",
        Call("the cat turns", "i2v", options={"caption": "a cat \udce9"}),
        Raises(InvalidInputError, "caption is not valid text"),
    ),
    Case(
        "api",
        "via-promptx.enhance",
        Call(A_CAT, method="promptx.enhance"),
        Ok(skipped=False, starts_with=A_CAT),
    ),
    Case(
        "api",
        "via-promptx.enhance-bad-seed",
        Call(A_CAT, options={"seed": -1}, method="promptx.enhance"),
        _SEED,
    ),
    # seed
    Case("api", "seed--1", Call(A_CAT, options={"seed": -1}), _SEED),
    Case("api", "seed-2**62+1", Call(A_CAT, options={"seed": MAX_SEED + 1}), _SEED),
    Case(
        "api",
        "seed-2**62",
        Call(A_CAT, options={"seed": MAX_SEED}),
        Ok(skipped=False, starts_with=A_CAT),
    ),
    Case("api", "seed-True", Call(A_CAT, options={"seed": True}), _SEED),
    Case("api", "seed-str-7", Call(A_CAT, options={"seed": "7"}), _SEED),
    Case("api", "seed-1.5", Call(A_CAT, options={"seed": 1.5}), _SEED),
    # temperature
    Case("api", "temperature--0.1", Call(A_CAT, options={"temperature": -0.1}), _TEMPERATURE),
    Case("api", "temperature-2.1", Call(A_CAT, options={"temperature": 2.1}), _TEMPERATURE),
    Case("api", "temperature-hot", Call(A_CAT, options={"temperature": "hot"}), _TEMPERATURE),
    Case("api", "temperature-True", Call(A_CAT, options={"temperature": True}), _TEMPERATURE),
    Case(
        "api", "temperature-nan", Call(A_CAT, options={"temperature": float("nan")}), _TEMPERATURE
    ),
    # max_new_tokens
    Case("api", "max_new_tokens-0", Call(A_CAT, options={"max_new_tokens": 0}), _TOKENS),
    Case("api", "max_new_tokens-5000", Call(A_CAT, options={"max_new_tokens": 5000}), _TOKENS),
    Case("api", "max_new_tokens-True", Call(A_CAT, options={"max_new_tokens": True}), _TOKENS),
    # strength, language, force, style, the other options
    Case("api", "strength-heavy", Call(A_CAT, options={"strength": "heavy"}), _STRENGTH),
    Case("api", "strength-3", Call(A_CAT, options={"strength": 3}), _STRENGTH),
    Case("api", "language-xx", Call(A_CAT, options={"language": "xx"}), _LANGUAGE),
    Case("api", "language-klingon", Call(A_CAT, options={"language": "klingon"}), _LANGUAGE),
    Case("api", "language-5", Call(A_CAT, options={"language": 5}), _LANGUAGE),
    Case("api", "language-empty", Call(A_CAT, options={"language": ""}), _LANGUAGE),
    Case(
        "api",
        "language-pt-BR",
        Call(A_CAT, options={"language": "pt-BR"}),
        Ok(skipped=False, language="pt-BR"),
    ),
    Case(
        "api",
        "force-yes",
        Call(A_CAT, options={"force": "yes"}),
        Raises(InvalidInputError, "force must be true or false"),
    ),
    Case(
        "api",
        "speculative-no",
        Call(A_CAT, options={"speculative": "no"}),
        Raises(InvalidInputError, "speculative must be true or false"),
    ),
    Case(
        "api",
        "style-unknown",
        Call(A_CAT, options={"style": "no-such-style"}),
        Raises(InvalidInputError, "unknown style"),
    ),
    Case(
        "api",
        "style-int",
        Call(A_CAT, options={"style": 3}),
        Raises(InvalidInputError, "style must be a string"),
    ),
    Case(
        "api",
        "caption-int",
        Call(A_CAT, "i2v", options={"caption": 5}),
        Raises(InvalidInputError, "caption must be a string"),
    ),
    Case(
        "api",
        "system_prompt-int",
        Call(A_CAT, options={"system_prompt": 3}),
        Raises(InvalidInputError, "system_prompt must be a string"),
    ),
    Case(
        "api",
        "option-unknown",
        Call(A_CAT, options={"colour": "red"}),
        Raises(InvalidInputError, "unknown option 'colour'"),
    ),
    # target
    Case("api", "target-None", Call(A_CAT, None), _TARGET_TYPE),
    Case("api", "target-5", Call(A_CAT, 5), _TARGET_TYPE),
    Case("api", "target-nosuch", Call(A_CAT, "nosuch"), _UNKNOWN_TARGET),
    Case("api", "target-empty", Call(A_CAT, ""), _UNKNOWN_TARGET),
    # images
    Case(
        "api",
        "image-for-a-t2v-target",
        Call(A_CAT, "video", options={"image": Asset("ok.png")}),
        Raises(InvalidInputError, "takes no image"),
    ),
    Case(
        "api",
        "image-missing-path",
        Call(A_CAT, "i2v", options={"image": Asset("missing.png")}),
        Raises(ImageError, "image not found"),
    ),
    Case(
        "api",
        "image-a-directory",
        Call(A_CAT, "i2v", options={"image": Asset("a-dir")}),
        Raises(ImageError, "not a file"),
    ),
    Case(
        "api",
        "image-truncated-png",
        Call(A_CAT, "i2v", options={"image": Asset("truncated.png")}),
        Raises(ImageError, "truncated or corrupt"),
    ),
    Case(
        "api",
        "image-not-an-image",
        Call(A_CAT, "i2v", options={"image": Asset("not-an-image.png")}),
        Raises(ImageError, "not an image"),
    ),
    Case(
        "api",
        "image-empty-bytes",
        Call(A_CAT, "i2v", options={"image": b""}),
        Raises(ImageError, "empty"),
    ),
    Case(
        "api",
        "image-int",
        Call(A_CAT, "i2v", options={"image": 5}),
        Raises(ImageError, "unsupported image input"),
    ),
    Case(
        "api",
        "i2v-empty-prompt-no-image",
        Call("", "i2v"),
        Raises(InvalidInputError, "needs an image or caption"),
    ),
    Case(
        "api",
        "i2v-empty-prompt-with-image",
        Call("", "i2v", options={"image": Asset("ok.png")}),
        Ok(skipped=False),
    ),
    # several prompts, streams
    Case(
        "api",
        "enhance_many-a-string",
        Call("a string", method="enhance_many"),
        Raises(InvalidInputError, "takes a list of prompts, not one string"),
    ),
    Case(
        "api",
        "enhance_many-bytes",
        Call(b"a string", method="enhance_many"),
        Raises(InvalidInputError, "takes a list of prompts"),
    ),
    Case(
        "api",
        "enhance_many-None-item",
        Call(["a red car", None, "a blue boat"], method="enhance_many"),
        Raises(InvalidInputError, "prompt 1: prompt is empty"),
    ),
    Case(
        "api",
        "enhance_many-int-item",
        Call(["a red car", "a blue boat", 7], method="enhance_many"),
        Raises(InvalidInputError, "prompt 2: prompt must be a string"),
    ),
    Case("api", "enhance_many-empty-list", Call([], method="enhance_many"), Ok(count=0)),
    Case(
        "api",
        "enhance_many-mixed-odd",
        Call(["a red car", "🐱", "een zwarte kat op het dak"], method="enhance_many"),
        Ok(count=3),
    ),
    Case("api", "stream-bad-seed", Call(A_CAT, options={"seed": -1}, method="stream"), _SEED),
    Case("api", "stream-empty-prompt", Call("", method="stream"), _PROMPT_EMPTY),
    Case("api", "stream-good", Call(A_CAT, method="stream"), Ok(skipped=False, starts_with=A_CAT)),
]

# ------------------------------------------------------------------------------------ CLI

_ERR = "error"
CLI = [
    Case(
        "cli",
        "unknown-flag",
        Argv(("enhance", A_CAT, "--bogus")),
        Exit(2, "usage", "No such option"),
    ),
    Case("cli", "unknown-command", Argv(("nosuchcommand",)), Exit(2, "usage", "No such command")),
    Case(
        "cli",
        "seed-not-a-number",
        Argv(("enhance", A_CAT, "--seed", "x")),
        Exit(2, "usage", "--seed"),
    ),
    Case(
        "cli", "seed-negative", Argv(("enhance", A_CAT, "--seed", "-1")), Exit(2, "usage", "--seed")
    ),
    Case(
        "cli",
        "seed-over-2**62",
        Argv(("enhance", A_CAT, "--seed", str(MAX_SEED + 1))),
        Exit(2, "usage", "--seed"),
    ),
    Case(
        "cli",
        "temperature-3",
        Argv(("enhance", A_CAT, "--temperature", "3")),
        Exit(2, "usage", "--temperature"),
    ),
    Case(
        "cli",
        "max-new-tokens-0",
        Argv(("enhance", A_CAT, "--max-new-tokens", "0")),
        Exit(2, "usage", "--max-new-tokens"),
    ),
    Case(
        "cli",
        "strength-heavy",
        Argv(("enhance", A_CAT, "--strength", "heavy")),
        Exit(2, "usage", "--strength"),
    ),
    Case(
        "cli",
        "planner-bogus",
        Argv(("enhance", A_CAT, "--planner", "x")),
        Exit(2, "usage", "--planner"),
    ),
    Case(
        "cli",
        "language-xx",
        Argv(("enhance", A_CAT, "--language", "xx")),
        Exit(1, _ERR, "unknown language 'xx'"),
    ),
    Case(
        "cli",
        "language-klingon",
        Argv(("enhance", A_CAT, "--language", "klingon")),
        Exit(1, _ERR, "unknown language"),
    ),
    Case(
        "cli",
        "style-unknown",
        Argv(("enhance", A_CAT, "--style", "no-such-style")),
        Exit(1, _ERR, "unknown style"),
    ),
    Case(
        "cli",
        "output-without-file",
        Argv(("enhance", A_CAT, "--output", "out.jsonl")),
        Exit(1, _ERR, "use it with --file"),
    ),
    Case(
        "cli",
        "file-and-prompt",
        Argv(("enhance", A_CAT, "--file", Asset("missing.png"))),
        Exit(1, _ERR, "give no PROMPT"),
    ),
    Case(
        "cli",
        "file-missing",
        Argv(("enhance", "--file", Asset("missing.png"))),
        Exit(1, _ERR, "cannot read prompt file"),
    ),
    Case(
        "cli",
        "file-a-directory",
        Argv(("enhance", "--file", Asset("a-dir"))),
        Exit(2, "usage", "is a directory"),
    ),
    Case(
        "cli",
        "target-nosuch",
        Argv(("enhance", A_CAT, "--target", "nosuch")),
        Exit(1, _ERR, "unknown target 'nosuch'"),
    ),
    Case(
        "cli",
        "target-empty",
        Argv(("enhance", A_CAT, "--target", "")),
        Exit(1, _ERR, "unknown target"),
    ),
    Case("cli", "prompt-empty", Argv(("enhance", "")), Exit(1, _ERR, "prompt is empty")),
    Case(
        "cli", "prompt-only-markup", Argv(("enhance", "<b></b>")), Exit(1, _ERR, "only HTML markup")
    ),
    Case(
        "cli", "prompt-huge", Argv(("enhance", "x" * 20_001)), Exit(1, _ERR, "the limit is 20000")
    ),
    Case(
        "cli",
        "image-missing",
        Argv(("enhance", A_CAT, "--target", "i2v", "--image", Asset("missing.png"))),
        Exit(1, _ERR, "image not found"),
    ),
    Case(
        "cli",
        "image-a-directory",
        Argv(("enhance", A_CAT, "--target", "i2v", "--image", Asset("a-dir"))),
        Exit(2, "usage", "is a directory"),
    ),
    Case(
        "cli",
        "image-truncated",
        Argv(("enhance", A_CAT, "--target", "i2v", "--image", Asset("truncated.png"))),
        Exit(1, _ERR, "truncated or corrupt"),
    ),
    Case(
        "cli",
        "workers-without-file",
        Argv(("enhance", A_CAT, "--workers", "2")),
        Exit(1, _ERR, "use them with --file"),
    ),
    Case(
        "cli",
        "remote-model-without-backend",
        Argv(("enhance", A_CAT, "--remote-model", "m")),
        Exit(1, _ERR, "need a remote backend"),
    ),
    Case(
        "cli",
        "templates-dir-missing",
        Argv(("enhance", A_CAT, "--templates-dir", Asset("missing.png"))),
        Exit(1, _ERR, "does not exist"),
    ),
    Case(
        "cli",
        "templates-show-nosuch",
        Argv(("templates", "show", "nosuch")),
        Exit(1, _ERR, "unknown target"),
    ),
    Case(
        "cli",
        "stdin-not-utf8",
        Argv(("enhance", "-"), stdin=b"un caf\xe9"),
        Exit(1, _ERR, "not UTF-8"),
    ),
    Case("cli", "stdin-empty", Argv(("enhance", "-"), stdin=b""), Exit(1, _ERR, "prompt is empty")),
    Case(
        "cli",
        "stdin-bom",
        Argv(("enhance", "-"), stdin=b"\xef\xbb\xbfa cat on a roof"),
        Exit(0, "ok", "A cat on a roof", absent=("\ufeff",)),
    ),
    Case(
        "cli",
        "argv-lone-surrogate-json",
        Argv(("enhance", "a caf\udce9 on a roof", "--json")),
        Exit(1, _ERR, "lone surrogate"),
    ),
    Case("cli", "ok-emoji-passes-through", Argv(("enhance", "🐱")), Exit(0, "ok", "🐱")),
    Case(
        "cli",
        "ok-dutch-passes-through",
        Argv(("enhance", "een zwarte kat op het dak")),
        Exit(0, "ok", "een zwarte kat op het dak"),
    ),
    Case(
        "cli",
        "ok-script-removed",
        Argv(("enhance", "a cat <script>alert(1)</script> on a roof")),
        Exit(0, "ok", "A cat on a roof", absent=("<script", "alert")),
    ),
    Case(
        "cli",
        "ok-json",
        Argv(("enhance", A_CAT, "--json", "--seed", "1")),
        Exit(0, "ok", '"original_prompt": "a cat on a roof"'),
    ),
]

CLI_PROCESS = [
    Case(
        "cli-process",
        "stdin-not-utf8",
        Argv(("enhance", "-"), stdin=b"un caf\xe9"),
        Exit(1, _ERR, "standard input is not UTF-8"),
    ),
    Case(
        "cli-process",
        "stdin-bom-dropped",
        Argv(("enhance", "-"), stdin=b"\xef\xbb\xbfa cat on a roof\n"),
        Exit(0, "ok", "A cat on a roof", absent=("\ufeff",)),
    ),
    Case(
        "cli-process",
        "target-nosuch",
        Argv(("enhance", A_CAT, "--target", "nosuch")),
        Exit(1, _ERR, "unknown target 'nosuch'"),
    ),
    Case(
        "cli-process",
        "seed-not-a-number",
        Argv(("enhance", A_CAT, "--seed", "x")),
        Exit(2, "usage", "--seed"),
    ),
    Case(
        "cli-process",
        "argv-not-utf8-json",
        Argv(("enhance", b"a caf\xe9 on a roof", "--json")),
        Exit(1, _ERR, "lone surrogate"),
    ),
]

# ------------------------------------------------------------------------------ batch files

# every case checks the invariants, and (BATCH_TIGHT) the strict outcome that error_rows and
# stops name


def _jsonl(*rows: Any) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in rows)


def _load_file(rows: int = 240) -> bytes:
    """A big JSONL file: mostly good rows, every 10th line unusable in a different way."""
    bad = [
        b"not json",
        b"[1, 2]",
        {},
        {"prompt": 5},
        {"prompt": "a cat", "target": "nosuch"},
        {"prompt": "a cat", "colour": "red"},
        {"prompt": "<b></b>"},
        {"prompt": "a dog", "target": "i2v", "image": "missing.png"},
    ]
    lines = []
    for i in range(rows):
        if i % 10 == 9:
            line = bad[(i // 10) % len(bad)]
            lines.append(
                line if isinstance(line, bytes) else json.dumps({**line, "id": f"bad-{i}"}).encode()
            )
        else:
            lines.append(
                json.dumps(
                    {"id": f"row-{i}", "prompt": f"a red car number {i} on a wet street"}
                ).encode()
            )
    return b"\n".join(lines) + b"\n"


BATCH = [
    Case(
        "batch",
        "text-with-blank-lines",
        BatchFile("p.txt", b"a red car\n\n   \na blue boat\n"),
        BatchInvariants(),
    ),
    Case(
        "batch", "text-crlf", BatchFile("p.txt", b"a red car\r\na blue boat\r\n"), BatchInvariants()
    ),
    Case("batch", "text-bom", BatchFile("p.txt", b"\xef\xbb\xbfa red car\n"), BatchInvariants()),
    Case(
        "batch",
        "text-odd-rows",
        BatchFile("p.txt", "een zwarte kat op het dak\n🐱\na cat 一只猫\nx\n".encode()),
        BatchInvariants(),
    ),
    Case(
        "batch",
        "text-control-and-NUL",
        BatchFile("p.txt", b"a red\x00 car\na \x1b[31mblue\x07 boat\n"),
        BatchInvariants(),
    ),
    Case(
        "batch",
        "text-huge-line",
        BatchFile("p.txt", b"a red car\n" + b"x " * 12_000 + b"\n"),
        BatchInvariants(error_rows=1),
    ),
    Case(
        "batch",
        "text-not-utf8",
        BatchFile("p.txt", b"a red car\nun caf\xe9\n"),
        BatchInvariants(stops=True, names="p.txt"),
    ),
    Case(
        "batch",
        "text-empty-file",
        BatchFile("p.txt", b""),
        BatchInvariants(stops=True, names="p.txt"),
    ),
    Case(
        "batch",
        "text-only-blank-lines",
        BatchFile("p.txt", b"\n  \n\t\n"),
        BatchInvariants(stops=True, names="p.txt"),
    ),
    Case(
        "batch",
        "jsonl-not-json-line",
        BatchFile("p.jsonl", _jsonl({"prompt": "a cat"}, b"not json", {"prompt": "a dog"})),
        BatchInvariants(names="p.jsonl:2", error_rows=1),
    ),
    Case(
        "batch",
        "jsonl-array-line",
        BatchFile("p.jsonl", _jsonl({"prompt": "a cat"}, ["a list"])),
        BatchInvariants(names="p.jsonl:2", error_rows=1),
    ),
    Case(
        "batch",
        "jsonl-no-prompt",
        BatchFile("p.jsonl", _jsonl({"prompt": "a cat"}, {"id": "x"})),
        BatchInvariants(names="p.jsonl:2", error_rows=1),
    ),
    Case(
        "batch",
        "jsonl-prompt-int",
        BatchFile("p.jsonl", _jsonl({"prompt": 5}, {"prompt": "a dog"})),
        BatchInvariants(names="p.jsonl:1", error_rows=1),
    ),
    Case(
        "batch",
        "jsonl-empty-prompts",
        BatchFile("p.jsonl", _jsonl({"prompt": ""}, {"prompt": "   "})),
        BatchInvariants(names="p.jsonl:1", error_rows=2),
    ),
    Case(
        "batch",
        "jsonl-unknown-field",
        BatchFile("p.jsonl", _jsonl({"prompt": "a cat", "colour": "red"}, {"prompt": "a dog"})),
        BatchInvariants(names="p.jsonl:1", error_rows=1),
    ),
    Case(
        "batch",
        "jsonl-row-target-nosuch",
        BatchFile("p.jsonl", _jsonl({"prompt": "a cat", "target": "nosuch"}, {"prompt": "a dog"})),
        BatchInvariants(error_rows=1),
    ),
    Case(
        "batch",
        "jsonl-row-image-missing",
        BatchFile(
            "p.jsonl",
            _jsonl(
                {"prompt": "a cat", "target": "i2v", "image": "missing.png"}, {"prompt": "a dog"}
            ),
        ),
        BatchInvariants(error_rows=1),
    ),
    Case(
        "batch",
        "jsonl-row-image-truncated",
        BatchFile(
            "p.jsonl",
            _jsonl(
                {"prompt": "a cat", "target": "i2v", "image": "truncated.png"}, {"prompt": "a dog"}
            ),
        ),
        BatchInvariants(error_rows=1),
    ),
    Case(
        "batch",
        "jsonl-row-image-ok",
        BatchFile(
            "p.jsonl", _jsonl({"prompt": "the water ripples", "target": "i2v", "image": "ok.png"})
        ),
        BatchInvariants(),
    ),
    Case(
        "batch",
        "jsonl-duplicate-ids",
        BatchFile(
            "p.jsonl", _jsonl({"prompt": "a cat", "id": "a"}, {"prompt": "a dog", "id": "a"})
        ),
        BatchInvariants(stops=True, names="p.jsonl:2"),
    ),
    Case(
        "batch",
        "jsonl-bad-ids",
        BatchFile(
            "p.jsonl",
            _jsonl(
                {"prompt": "a cat", "id": True},
                {"prompt": "a dog", "id": [1]},
                {"prompt": "a fox", "id": ""},
            ),
        ),
        BatchInvariants(names="p.jsonl:1", error_rows=3),
    ),
    Case(
        "batch",
        "jsonl-task-and-target",
        BatchFile("p.jsonl", _jsonl({"prompt": "a cat", "task": "t2v", "target": "video"})),
        BatchInvariants(names="p.jsonl:1", error_rows=1),
    ),
    Case(
        "batch",
        "jsonl-only-markup-row",
        BatchFile("p.jsonl", _jsonl({"prompt": "<b></b>"}, {"prompt": "a cat <script>x</script>"})),
        BatchInvariants(error_rows=1),
    ),
    Case(
        "batch",
        "jsonl-line-separator-in-prompt",
        BatchFile("p.jsonl", '{"prompt": "a cat\u2028on a roof"}\n'.encode()),
        BatchInvariants(),
    ),
    Case(
        "batch",
        "jsonl-spec-bench-file",
        BatchFile("p.jsonl", _jsonl({"turns": ["hi"], "category": "x"})),
        BatchInvariants(stops=True, names="p.jsonl"),
    ),
    Case(
        "batch",
        "jsonl-lone-surrogate",
        BatchFile("p.jsonl", b'{"prompt": "a cat \\ud800 on a roof"}\n{"prompt": "a dog"}\n'),
        BatchInvariants(error_rows=1),
    ),
    # a --style is checked row by row (a row may name its own target, whose styles differ)
    Case(
        "batch",
        "bad-style-for-every-row",
        BatchFile("p.txt", b"a red car\na blue boat\n", args=("--style", "no-such-style")),
        BatchInvariants(error_rows=2),
    ),
    Case(
        "batch",
        "bad-target-for-the-run",
        BatchFile("p.txt", b"a red car\n", args=("--target", "nosuch")),
        BatchInvariants(stops=True, names="unknown target"),
    ),
    Case(
        "batch",
        "to-stdout",
        BatchFile(
            "p.jsonl", _jsonl({"prompt": "a cat"}, b"not json", {"prompt": "a dog"}), output=None
        ),
        BatchInvariants(error_rows=1),
    ),
    Case(
        "batch",
        "output-is-the-prompt-file",
        BatchFile("p.txt", b"a red car\n", same_output=True),
        BatchInvariants(stops=True, names="p.txt"),
    ),
    Case(
        "batch",
        "output-is-a-directory",
        BatchFile("p.txt", b"a red car\n", output="a-dir"),
        BatchInvariants(exits=(2,)),
    ),
    Case(
        "batch",
        "output-holds-garbage",
        BatchFile("p.txt", b"a red car\n", existing_output=b"hello\n"),
        BatchInvariants(stops=True, names="out.jsonl:1"),
    ),
    Case(
        "batch",
        "output-cut-off-line",
        BatchFile(
            "p.txt",
            b"a red car\na blue boat\n",
            existing_output=b'{"id": "1", "text": "A red car."}\n{"id": "2", "te',
        ),
        BatchInvariants(),
    ),
    Case(
        "batch",
        "resume-twice",
        BatchFile("p.jsonl", _jsonl({"prompt": "a cat"}, b"not json", {"prompt": "a dog"}), runs=2),
        BatchInvariants(error_rows=1),
    ),
    Case(
        "batch", "load-240-rows", BatchFile("p.jsonl", _load_file()), BatchInvariants(error_rows=24)
    ),
]

# ------------------------------------------------------------------------------------ HTTP

_BAD = "invalid_request"
_JSON = "invalid_json"
_CHAT = "/v1/chat/completions"
_USER = [{"role": "user", "content": "Name a colour."}]
_DEEP = b"[" * 10_000 + b"]" * 10_000

HTTP = [
    Case(
        "http",
        "ok-fox",
        post({"prompt": "a red fox in snow", "seed": 1}),
        Http(
            200, ok=Ok(skipped=False, starts_with="a red fox in snow", original="a red fox in snow")
        ),
    ),
    Case(
        "http",
        "404-unknown-path",
        Request("GET", "/v1/nope", None),
        Http(404, "not_found", "no such endpoint"),
    ),
    Case(
        "http",
        "405-GET-enhance",
        Request("GET", "/v1/enhance", None),
        Http(405, "method_not_allowed"),
    ),
    Case(
        "http",
        "405-POST-metrics",
        Request("POST", "/metrics", b""),
        Http(405, "method_not_allowed"),
    ),
    Case(
        "http",
        "405-DELETE-health",
        Request("DELETE", "/health", None),
        Http(405, "method_not_allowed"),
    ),
    Case("http", "body-not-utf8", Request(body=b'{"prompt": "un caf\xe9"}'), Http(400, _JSON)),
    Case("http", "body-not-json", Request(body=b"{not json"), Http(400, _JSON)),
    Case("http", "body-nested-10000", Request(body=_DEEP), Http(400, _JSON)),
    Case(
        "http", "prompt-nested-10000", Request(body=b'{"prompt": ' + _DEEP + b"}"), Http(400, _JSON)
    ),
    Case(
        "http",
        "ok-dutch",
        post({"prompt": "een zwarte kat op het dak"}),
        Http(200, ok=Ok(skipped=True, language="nl", starts_with="een zwarte kat op het dak")),
    ),
    Case("http", "body-array", post(["a cat"]), Http(400, _BAD, "must be a JSON object")),
    Case("http", "body-empty", Request(body=b""), Http(400, _BAD)),
    Case(
        "http",
        "content-type-text",
        Request(body=b'{"prompt": "a cat"}', content_type="text/plain"),
        Http(400, _BAD),
    ),
    Case(
        "http",
        "content-type-none",
        Request(body=b'{"prompt": "a cat"}', content_type=None),
        Http(400, _BAD),
    ),
    Case("http", "seed-true", post({"prompt": A_CAT, "seed": True}), Http(400, _BAD, "seed")),
    Case("http", "seed-str-7", post({"prompt": A_CAT, "seed": "7"}), Http(400, _BAD, "seed")),
    Case("http", "seed--1", post({"prompt": A_CAT, "seed": -1}), Http(400, _BAD, "seed")),
    Case(
        "http",
        "seed-2**62+1",
        post({"prompt": A_CAT, "seed": MAX_SEED + 1}),
        Http(400, _BAD, "seed"),
    ),
    Case("http", "seed-10**30", post({"prompt": A_CAT, "seed": 10**30}), Http(400, _BAD, "seed")),
    Case(
        "http",
        "ok-script-removed",
        post({"prompt": "a cat <script>alert(1)</script> on a roof"}),
        Http(
            200,
            ok=Ok(skipped=False, starts_with=A_CAT, original=A_CAT, absent=("<script", "alert")),
        ),
    ),
    Case("http", "force-yes", post({"prompt": A_CAT, "force": "yes"}), Http(400, _BAD, "force")),
    Case(
        "http",
        "temperature-hot",
        post({"prompt": A_CAT, "temperature": "hot"}),
        Http(400, _BAD, "temperature"),
    ),
    Case(
        "http",
        "temperature-NaN-literal",
        Request(body=b'{"prompt": "a cat", "temperature": NaN}'),
        Http(400, _BAD),
    ),
    Case(
        "http",
        "max_new_tokens-0",
        post({"prompt": A_CAT, "max_new_tokens": 0}),
        Http(400, _BAD, "max_new_tokens"),
    ),
    Case(
        "http", "field-unknown", post({"prompt": A_CAT, "colour": "red"}), Http(400, _BAD, "colour")
    ),
    Case("http", "prompt-int", post({"prompt": 5}), Http(400, _BAD, "prompt")),
    Case("http", "prompt-null", post({"prompt": None}), Http(400, _BAD, "prompt is empty")),
    Case(
        "http",
        "prompt-only-markup",
        post({"prompt": "<b></b>"}),
        Http(400, _BAD, "only HTML markup"),
    ),
    Case(
        "http", "ok-emoji", post({"prompt": "🐱"}), Http(200, ok=Ok(skipped=True, starts_with="🐱"))
    ),
    Case(
        "http",
        "strength-heavy",
        post({"prompt": A_CAT, "strength": "heavy"}),
        Http(400, _BAD, "strength"),
    ),
    Case(
        "http",
        "language-xx",
        post({"prompt": A_CAT, "language": "xx"}),
        Http(400, _BAD, "unknown language"),
    ),
    Case(
        "http",
        "style-unknown",
        post({"prompt": A_CAT, "style": "no-such-style"}),
        Http(400, _BAD, "unknown style"),
    ),
    Case(
        "http",
        "target-nosuch",
        post({"prompt": A_CAT, "target": "nosuch"}),
        Http(400, "unknown_target"),
    ),
    Case("http", "target-int", post({"prompt": A_CAT, "target": 5}), Http(400, _BAD, "target")),
    Case(
        "http",
        "prompt-over-max-prompt-chars",
        post({"prompt": "a " * SERVER_MAX_PROMPT_CHARS}),
        Http(400, _BAD, "this server takes at most"),
    ),
    Case(
        "http",
        "body-over-max-body-bytes",
        post({"prompt": "a" * (SERVER_MAX_BODY_BYTES + 10)}),
        Http(413, "request_too_large"),
    ),
    Case(
        "http",
        "ok-NUL-in-prompt",
        post({"prompt": "a cat\x00 on a roof", "target": "sdxl"}),
        Http(200, ok=Ok(skipped=False, starts_with="a cat")),
    ),
    Case(
        "http",
        "image-not-base64",
        post({"prompt": A_CAT, "target": "i2v", "image": "%%%"}),
        Http(400, "invalid_image"),
    ),
    Case(
        "http",
        "image-not-an-image",
        post({"prompt": A_CAT, "target": "i2v", "image": "aGVsbG8="}),
        Http(400, "invalid_image"),
    ),
    Case(
        "http",
        "prompt-lone-surrogate",
        Request(body=b'{"prompt": "a cat \\ud800 on a roof"}'),
        Http(400, _BAD, "lone surrogate"),
    ),
    Case(
        "http",
        "ok-lighthouse-sdxl",
        post({"prompt": "a lighthouse at dusk", "target": "sdxl", "seed": 3}),
        Http(
            200,
            ok=Ok(
                skipped=False, starts_with="a lighthouse at dusk", original="a lighthouse at dusk"
            ),
        ),
    ),
    Case(
        "http", "chat-no-messages", post({"model": "promptx"}, _CHAT), Http(400, _BAD, "messages")
    ),
    Case(
        "http",
        "chat-role-robot",
        post({"messages": [{"role": "robot", "content": "x"}]}, _CHAT),
        Http(400, _BAD, "role"),
    ),
    Case(
        "http",
        "chat-unknown-model",
        post({"model": "gpt-4o", "messages": _USER}, _CHAT),
        Http(404, "model_not_found"),
    ),
    Case("http", "chat-n-2", post({"messages": _USER, "n": 2}, _CHAT), Http(400, _BAD, "n")),
    Case(
        "http",
        "chat-messages-a-string",
        post({"messages": "hi"}, _CHAT),
        Http(400, _BAD, "messages"),
    ),
    Case(
        "http",
        "chat-over-max-prompt-chars",
        post({"messages": [{"role": "user", "content": "a " * 3000}]}, _CHAT),
        Http(400, _BAD, "this server takes at most"),
    ),
    Case(
        "http",
        "chat-lone-surrogate",
        Request(
            path=_CHAT,
            body=b'{"messages": [{"role": "user", "content": "hi \\ud800"}], "max_tokens": 2}',
        ),
        Http(400, _BAD, "lone surrogate"),
    ),
    Case(
        "http",
        "ok-fox-again",
        post({"prompt": "a red fox in snow", "seed": 1}),
        Http(
            200, ok=Ok(skipped=False, starts_with="a red fox in snow", original="a red fox in snow")
        ),
    ),
]

CASES: list[Case] = API + CLI + CLI_PROCESS + BATCH + HTTP


def by_surface(surface: str) -> list[Case]:
    return [c for c in CASES if c.surface == surface]
