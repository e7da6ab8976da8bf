"""The prompts a drafter's self-distillation data starts from: public short prompt sets, per task,
rendered into generation items exactly as ``Enhancer`` renders them at serving time.

``load_prompt_specs`` reads the prompt sets of ``../shared/data/prompts`` (t2i: partiprompts.tsv
and t2i_compbench/*_train.txt; t2v: vbench_all_dimension.txt and its Chinese twin; i2v:
vbench_i2v_full_info.json, the image's name as its caption; i2i: edit instructions synthesized
over captions, with synthetic image facts; ``heldout``: geneval_prompts.txt,
t2i_compbench/*_val.txt, vbench2_full_text.txt and i2v/i2i items made with another seed).
``build_items`` renders them (``EnhanceRequest.build`` + ``render_messages`` + the model's chat
template) into ``engine.GenerationItem``s with a stable id, a mix of greedy and sampled decoding
at the profiles' temperatures.

Not here: the ``promptx draft`` commands that generate, train and evaluate (``promptx.cli.draft``),
the shards and training (``engine.training``).
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from .errors import InvalidInputError

TASKS = ("t2i", "t2v", "i2v", "i2i")
DEFAULT_PROMPTS_DIR = "../shared/data/prompts"

#: (width, height) of the synthetic input images of i2v/i2i items.
IMAGE_SIZES = (
    (1024, 1024),
    (1920, 1080),
    (1080, 1920),
    (1280, 720),
    (720, 1280),
    (832, 1104),
    (720, 480),
    (1510, 816),
    (1024, 768),
    (768, 1024),
    (512, 512),
    (4032, 3024),
    (3024, 4032),
    (1536, 1024),
)

_EDITS = (
    "make it night time",
    "turn it into a watercolor painting",
    "make it look like a pencil sketch",
    "add falling snow",
    "make it rain",
    "change the season to autumn",
    "make the sky a dramatic sunset",
    "remove the people in the background",
    "replace the background with a beach",
    "make it black and white",
    "give it a vintage film look",
    "turn it into an oil painting",
    "add a rainbow in the sky",
    "make the lighting warmer",
    "make it look like a photo from the 1970s",
    "add fog",
    "zoom out to show more",
    "change the background to a city street at night",
    "make it cartoon style",
    "add a cat sitting nearby",
    "make the colors more vibrant",
    "turn day into dusk",
    "add reflections on a wet ground",
    "place it in a snowy forest",
    "make it look like a miniature model",
    "add neon lights",
    "make it look like a movie poster",
    "remove the text",
    "replace the sky with stars",
    "make it look like pixel art",
    "add soft studio lighting",
    "make it spring with blooming flowers",
)
_COLORS = ("red", "blue", "green", "golden", "purple", "black", "white", "orange", "pink", "silver")
_EDIT_TEMPLATES = (
    "change the main color to {color}",
    "paint the walls {color}",
    "make the car {color}",
    "give the person a {color} jacket",
    "make the background {color}",
)


@dataclass(frozen=True)
class PromptSpec:
    task: str
    prompt: str
    source: str
    caption: str | None = None
    image: bool = False  # synthesize image facts (as if an image had been given)


# ---- prompt sources ------------------------------------------------------------------------------
def _lines(path: Path) -> list[str]:
    if not path.is_file():
        return []
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _parti(path: Path) -> list[str]:
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.DictReader(handle, delimiter="\t")
        return [row["Prompt"].strip() for row in rows if (row.get("Prompt") or "").strip()]


def _i2v_entries(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []


def _caption_of(entry: dict) -> str:
    return Path(entry.get("image_name") or "").stem.strip()


def _i2v_specs(entries: list[dict], rng: random.Random, source: str) -> list[PromptSpec]:
    specs = []
    for entry in entries:
        full = (entry.get("prompt_en") or "").strip()
        caption = _caption_of(entry)
        if not full:
            continue
        motion = full[len(caption) :].strip(" ,.") if caption and full.startswith(caption) else ""
        roll = rng.random()
        prompt = "" if roll < 0.1 else (motion if motion and roll < 0.6 else full)
        look = rng.random()  # image facts only / caption + facts / caption only
        has_image, text = (
            (True, None) if look < 0.4 else ((True, caption) if look < 0.7 else (False, caption))
        )
        if not prompt and not (has_image or text):
            text = caption
        specs.append(PromptSpec("i2v", prompt, source, caption=text or None, image=has_image))
    return specs


def _i2i_specs(captions: list[str], rng: random.Random, source: str) -> list[PromptSpec]:
    specs = []
    for caption in captions:
        if rng.random() < 0.3:
            edit = rng.choice(_EDIT_TEMPLATES).format(color=rng.choice(_COLORS))
        else:
            edit = rng.choice(_EDITS)
        look = rng.random()
        has_image, text = (
            (True, None) if look < 0.3 else ((True, caption) if look < 0.7 else (False, caption))
        )
        specs.append(PromptSpec("i2i", edit, source, caption=text, image=has_image))
    return specs


def load_prompt_specs(
    prompts_dir: str | Path, tasks: Sequence[str] = TASKS, *, seed: int = 0, heldout: bool = False
) -> dict[str, list[PromptSpec]]:
    """Prompt specs per task from the public prompt sets (``heldout``: the sets not used for
    training)."""
    root = Path(prompts_dir)
    if not root.is_dir():
        raise InvalidInputError(f"prompt directory {root} does not exist (see --prompts-dir)")
    rng = random.Random(f"specs:{seed}:{heldout}")
    out: dict[str, list[PromptSpec]] = {}
    i2v = _i2v_entries(root / "vbench_i2v_full_info.json")
    captions = sorted({_caption_of(e) for e in i2v if _caption_of(e)})
    if "t2i" in tasks:
        if heldout:
            texts = [("geneval", t) for t in _lines(root / "geneval_prompts.txt")]
            texts += [
                ("compbench-val", t)
                for p in sorted((root / "t2i_compbench").glob("*_val.txt"))
                for t in _lines(p)
            ]
        else:
            texts = [("parti", t) for t in _parti(root / "partiprompts.tsv")]
            texts += [
                ("compbench", t)
                for p in sorted((root / "t2i_compbench").glob("*_train.txt"))
                for t in _lines(p)
            ]
        out["t2i"] = [PromptSpec("t2i", t, src) for src, t in texts]
    if "t2v" in tasks:
        names = (
            (("vbench2", "vbench2_full_text.txt"),)
            if heldout
            else (
                ("vbench", "vbench_all_dimension.txt"),
                ("vbench-cn", "vbench_all_dimension_cn.txt"),
            )
        )
        out["t2v"] = [PromptSpec("t2v", t, src) for src, name in names for t in _lines(root / name)]
    if "i2v" in tasks:
        out["i2v"] = _i2v_specs(i2v, rng, "vbench-i2v")
    if "i2i" in tasks:
        parti = _parti(root / "partiprompts.tsv")
        pool = captions + [p for p in parti if 3 <= len(p.split()) <= 14][:600]
        out["i2i"] = _i2i_specs(pool, rng, "synth-i2i")
    return {task: specs for task, specs in out.items() if specs}


def _interleave(per_task: dict[str, list[PromptSpec]], seed: int) -> Iterator[PromptSpec]:
    """Round-robin over the tasks, each task's prompts in a seeded shuffled order."""
    queues = []
    for task in TASKS:
        specs = list(per_task.get(task, []))
        random.Random(f"order:{seed}:{task}").shuffle(specs)
        queues.append(specs)
    for i in range(max((len(q) for q in queues), default=0)):
        for q in queues:
            if i < len(q):
                yield q[i]


# ---- rendering into generation items -------------------------------------------------------------
def _image_for(key: str):
    from PIL import Image

    width, height = IMAGE_SIZES[
        int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % len(IMAGE_SIZES)
    ]
    return Image.new("1", (width, height))


def prefix_length(tokenizer, messages: list[dict], ids: Sequence[int]) -> int:
    """Tokens of the chat before its last user turn (shared by prompts of one
    profile/style/language)."""
    try:
        head = tokenizer.encode(tokenizer.render_chat(messages[:-1], add_generation_prompt=False))
    except Exception:  # noqa: BLE001 - a template that cannot render a partial chat: no sharing
        return 0
    n = 0
    for a, b in zip(head, ids):
        if a != b:
            break
        n += 1
    return min(n, max(0, len(ids) - 1))


def build_items(
    tokenizer,
    registry,
    per_task: dict[str, list[PromptSpec]],
    *,
    limit: int | None = None,
    seed: int = 0,
    greedy_fraction: float = 0.3,
    style_fraction: float = 0.25,
    max_new_tokens: int | None = None,
    max_prompt_tokens: int | None = None,
    prompt_style: str = "full",
):
    """GenerationItems for the prompt specs, rendered as the Enhancer renders them at serving time
    (``prompt_style``: the model's, see ``promptx.models.prompt_style_of``)."""
    from engine import SamplingParams
    from engine import GenerationItem

    from .errors import PromptxError
    from .options import EnhanceOptions
    from .request import EnhanceRequest

    profiles = {task: [p for p in registry.profiles() if p.task == task] for task in TASKS}
    items, seen = [], set()
    for spec in _interleave(per_task, seed):
        if limit is not None and len(items) >= limit:
            break
        choices = profiles.get(spec.task) or []
        if not choices:
            continue
        rng = random.Random(f"item:{seed}:{spec.task}:{spec.source}:{spec.prompt}:{spec.caption}")
        profile = rng.choice(choices)
        style = (
            rng.choice(sorted(profile.styles))
            if profile.styles and rng.random() < style_fraction
            else None
        )
        greedy = rng.random() < greedy_fraction
        sample_seed = rng.randrange(2**31)
        image = _image_for(f"{spec.prompt}|{spec.caption}") if spec.image else None
        try:
            request = EnhanceRequest.build(
                profile,
                spec.prompt,
                EnhanceOptions(image=image, caption=spec.caption, style=style, seed=sample_seed),
            )
            if request.skip_reason:
                continue
            messages = request.chat(prompt_style)
        except PromptxError:
            continue
        ids = tokenizer.encode_chat(messages)
        if max_prompt_tokens and len(ids) > max_prompt_tokens:
            continue
        budget = (
            min(request.max_new_tokens, max_new_tokens)
            if max_new_tokens
            else request.max_new_tokens
        )
        params = SamplingParams(
            temperature=0.0 if greedy else request.temperature,
            top_p=1.0 if greedy else profile.top_p,
            repetition_penalty=profile.repetition_penalty,
            max_new_tokens=budget,
            seed=None if greedy else sample_seed,
        )
        # the rendered tokens are part of the id: after a template change nothing counts as done
        key = json.dumps(
            [
                profile.name,
                request.style,
                request.language,
                request.prompt,
                request.caption,
                request.image_facts,
                greedy,
                params.seed,
                budget,
                hashlib.sha256(json.dumps(ids).encode()).hexdigest(),
            ],
            ensure_ascii=False,
        )
        item_id = hashlib.sha256(key.encode()).hexdigest()[:16]
        if item_id in seen:
            continue
        seen.add(item_id)
        meta = {
            "task": spec.task,
            "profile": profile.name,
            "source": spec.source,
            "style": request.style,
            "language": request.language,
            "prompt": request.prompt,
            "caption": request.caption,
            "image_facts": request.image_facts,
            "greedy": greedy,
        }
        items.append(
            GenerationItem(
                item_id, tuple(ids), params, prefix_length(tokenizer, messages, ids), meta
            )
        )
    return items
