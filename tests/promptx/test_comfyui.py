"""promptx's ComfyUI node pack, loaded the way ComfyUI loads it (by the path of its __init__.py),
run with the real embedded model: the node schemas, t2v / t2i / i2v enhancements, one model load
for a queue of items, the release with keep_loaded off, errors as one-line messages, and the
example workflows. ComfyUI itself is not installed (it is not on the package index).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

import promptx

PACK = Path(promptx.__file__).parent / "comfyui"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "comfyui"
WIDGETS = {"STRING", "INT", "FLOAT", "BOOLEAN"}
OPTIONS = {"default", "min", "max", "step", "multiline", "tooltip"}
ONE_LINE_LOADER = "from promptx.comfyui import *  # noqa: F401,F403"


def load_like_comfyui(init: Path):
    """What ComfyUI's ``load_custom_node`` does with a folder in custom_nodes."""
    name = str(init.parent).replace(".", "_x_")
    spec = importlib.util.spec_from_file_location(name, init)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pack():
    return load_like_comfyui(PACK / "__init__.py")


@pytest.fixture(scope="module")
def nodes(pack):
    return {name: cls() for name, cls in pack.NODE_CLASS_MAPPINGS.items()}


@pytest.fixture(autouse=True)
def nothing_held():
    from promptx.comfyui.held_enhancer import release_all

    release_all()
    yield
    release_all()


@pytest.fixture
def loads(monkeypatch):
    """A weak reference to every embedded backend (loaded model) built during the test."""
    from promptx.backends import embedded

    made = []

    class Counted(embedded.EmbeddedBackend):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append((weakref.ref(self), weakref.ref(self.generator)))

    monkeypatch.setattr(embedded, "EmbeddedBackend", Counted)
    return made


def image_tensor(path: Path):
    """A ComfyUI IMAGE: float [1, H, W, 3] in 0..1."""
    import numpy as np
    import torch
    from PIL import Image

    with Image.open(path) as image:
        pixels = np.asarray(image.convert("RGB"), dtype=np.float32) / 255
    return torch.from_numpy(pixels)[None]


def enhance(nodes, prompt, target, strength="light", seed=0, **optional):
    return nodes["PromptxEnhancePrompt"].enhance(prompt, target, strength, seed, **optional)


def loader(nodes, keep_loaded=True, **settings):
    chosen = dict(backend="embedded", base_url="", model="", dtype="auto") | settings
    return nodes["PromptxEnhancerLoader"].load(keep_loaded=keep_loaded, **chosen)[0]


# -- the pack as ComfyUI sees it -----------------------------------------------------------------


def test_the_pack_names_its_nodes(pack):
    assert set(pack.NODE_CLASS_MAPPINGS) == {"PromptxEnhancerLoader", "PromptxEnhancePrompt"}
    assert set(pack.NODE_DISPLAY_NAME_MAPPINGS) == set(pack.NODE_CLASS_MAPPINGS)
    assert all(name.startswith("promptx ") for name in pack.NODE_DISPLAY_NAME_MAPPINGS.values())


def test_the_one_line_loader_of_the_readme_works(pack, tmp_path):
    folder = tmp_path / "custom_nodes" / "promptx-nodes"  # where a link cannot be made
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(ONE_LINE_LOADER + "\n")
    assert ONE_LINE_LOADER in (EXAMPLES / "README.md").read_text()
    copy = load_like_comfyui(folder / "__init__.py")
    assert copy.NODE_CLASS_MAPPINGS == pack.NODE_CLASS_MAPPINGS
    assert copy.NODE_DISPLAY_NAME_MAPPINGS == pack.NODE_DISPLAY_NAME_MAPPINGS


def test_importing_the_pack_does_not_import_torch():
    code = "import sys, promptx.comfyui; assert 'torch' not in sys.modules, 'torch was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_registry_description_has_a_comfy_section():
    import tomllib

    described = tomllib.loads((PACK / "pyproject.toml").read_text())
    assert described["project"]["name"] and described["tool"]["comfy"]["DisplayName"]


@pytest.mark.parametrize("name", ["PromptxEnhancerLoader", "PromptxEnhancePrompt"])
def test_every_node_is_well_formed(pack, name):
    cls = pack.NODE_CLASS_MAPPINGS[name]
    assert isinstance(cls.__dict__["INPUT_TYPES"], classmethod)
    inputs = cls.INPUT_TYPES()
    assert set(inputs) <= {"required", "optional"} and inputs["required"]
    for spec in [*inputs["required"].values(), *inputs.get("optional", {}).values()]:
        assert isinstance(spec, tuple) and len(spec) in (1, 2)
        kind, options = spec[0], spec[1] if len(spec) == 2 else {}
        assert isinstance(options, dict) and set(options) <= OPTIONS
        if isinstance(kind, list):  # a combo
            assert (
                kind
                and all(isinstance(v, str) for v in kind)
                and options.get("default", kind[0]) in kind
            )
        else:
            assert isinstance(kind, str) and kind == kind.upper()
            if kind == "INT":
                assert options["min"] <= options["default"] <= options["max"]
            elif kind not in WIDGETS:
                assert not options  # a link: IMAGE, PROMPTX_ENHANCER
    assert isinstance(cls.RETURN_TYPES, tuple) and all(isinstance(t, str) for t in cls.RETURN_TYPES)
    assert isinstance(cls.RETURN_NAMES, tuple) and len(cls.RETURN_NAMES) == len(cls.RETURN_TYPES)
    assert callable(getattr(cls(), cls.FUNCTION)) and cls.CATEGORY == "promptx"


def test_the_loader_feeds_the_enhance_node(pack):
    loader_cls = pack.NODE_CLASS_MAPPINGS["PromptxEnhancerLoader"]
    enhance_cls = pack.NODE_CLASS_MAPPINGS["PromptxEnhancePrompt"]
    assert enhance_cls.INPUT_TYPES()["optional"]["enhancer"] == (loader_cls.RETURN_TYPES[0],)
    assert enhance_cls.RETURN_NAMES == ("enhanced", "negative", "report")


def test_the_targets_are_the_registry_s_profiles(pack):
    from promptx.profiles.registry import registry_for

    targets, spec = pack.NODE_CLASS_MAPPINGS["PromptxEnhancePrompt"].INPUT_TYPES()["required"][
        "target"
    ]
    assert targets == [p.name for p in registry_for(None).profiles()] and spec["default"] == "video"
    assert {"wan-t2v", "wan-i2v", "flux1", "sdxl"} <= set(targets)


# -- light: the vetted phrases, no model ---------------------------------------------------------


@pytest.mark.parametrize("target", ["wan-t2v", "flux1"])
def test_light_enhances_and_reports_what_it_added(nodes, target):
    text, negative, report = enhance(nodes, "a knight fighting a dragon", target, seed=3)
    assert "A knight fighting a dragon." in text and len(text) > 60
    assert f"target: {target}" in report and "strength: light" in report and "seed: 3" in report
    assert "  appearance: The knight has" in report and "outcome: enhanced" in report
    assert enhance(nodes, "a knight fighting a dragon", target, seed=3) == (text, negative, report)
    if target == "wan-t2v":
        assert "worst quality" in negative


def test_light_grounds_image_to_video_in_the_image_tensor(nodes, shared_data):
    image = image_tensor(shared_data / "images" / "wan_i2v_input.jpg")
    text, _, report = enhance(
        nodes, "she turns her head and smiles", "wan-i2v", seed=1, image=image
    )
    assert "She turns her head and smiles" in text and "target: wan-i2v (i2v)" in report
    text, _, _ = enhance(nodes, "", "wan-i2v", seed=1, image=image)  # the image alone is enough
    assert text
    _, _, report = enhance(nodes, "a red car", "wan-t2v", image=image)
    assert "image: not used" in report


def test_an_image_tensor_becomes_its_first_frame(shared_data):
    import torch
    from PIL import Image

    from promptx.comfyui.image_tensor import first_frame

    path = shared_data / "images" / "cogvideo_beach.png"
    frames = torch.cat([image_tensor(path), torch.zeros_like(image_tensor(path))])
    frame = first_frame(frames)
    with Image.open(path) as original:
        assert frame.size == original.size and frame.mode == "RGB"
        assert frame.tobytes() == original.convert("RGB").tobytes()
    assert (
        first_frame(torch.ones(1, 8, 6, 4)).mode == "RGBA"
        and first_frame(torch.ones(1, 8, 6, 1)).mode == "L"
    )


# -- errors: one line for the user ---------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt, target, words",
    [
        ("", "wan-t2v", "prompt is empty"),
        ("a cat", "no-such-target", "no-such-target"),
        ("", "wan-i2v", "needs an image or caption"),
    ],
)
def test_errors_reach_the_user_as_one_line(nodes, prompt, target, words):
    with pytest.raises(ValueError) as caught:
        enhance(nodes, prompt, target)
    message = str(caught.value)
    assert type(caught.value) is ValueError and message.startswith("promptx: ") and words in message
    assert (
        "\n" not in message and caught.value.__cause__ is None and caught.value.__suppress_context__
    )


def test_a_malformed_image_is_a_message(nodes):
    import torch

    with pytest.raises(ValueError, match=r"^promptx: image must be a ComfyUI IMAGE of shape"):
        enhance(nodes, "she smiles", "wan-i2v", image=torch.zeros(1, 4, 4, 2))


def test_an_unknown_loader_setting_is_a_message(nodes):
    with pytest.raises(ValueError, match=r"^promptx: unknown backend 'vllm'"):
        loader(nodes, backend="vllm")


# -- medium: the model, loaded once --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "target, prompt",
    [("wan-t2v", "a fox running through snow"), ("flux1", "a bowl of ramen on a wooden table")],
)
def test_medium_ranks_with_the_embedded_model(nodes, model_dir, target, prompt):
    text, _, report = enhance(nodes, prompt, target, "medium", seed=5)
    assert prompt in text.lower() and "strength: medium" in report and "added:" in report
    assert enhance(nodes, prompt, target, "medium", seed=5)[0] == text


@pytest.mark.slow
def test_medium_image_to_video_with_an_image(nodes, model_dir, shared_data):
    image = image_tensor(shared_data / "images" / "wan_girl.png")
    text, _, report = enhance(
        nodes,
        "she waves at the camera",
        "wan-i2v",
        "medium",
        seed=2,
        image=image,
        caption="a girl in a yellow coat",
    )
    assert "She waves at the camera" in text and "strength: medium" in report


@pytest.mark.slow
def test_a_queue_loads_the_model_once(nodes, model_dir, loads):
    held = {loader(nodes) for _ in range(10)}  # the loader run again for each queued item
    assert len(held) == 1
    held = held.pop()
    texts = {
        enhance(
            nodes, f"a lighthouse in a storm number {i}", "flux1", "medium", seed=i, enhancer=held
        )[0]
        for i in range(10)
    }
    assert len(texts) == 10 and len(loads) == 1
    assert held.held and held.enhancer.backend is loads[0][0]()
    for i in range(3):  # no enhancer input: the default, held too
        enhance(nodes, "a lighthouse in a storm", "flux1", "medium", seed=i)
    assert len(loads) == 1  # the loader's defaults are the default


@pytest.mark.slow
def test_keep_loaded_off_frees_the_model_after_each_call(nodes, model_dir, loads):
    held = loader(nodes, keep_loaded=False)
    for seed in range(2):
        text, _, _ = enhance(
            nodes, "a fox running through snow", "wan-t2v", "medium", seed=seed, enhancer=held
        )
        assert text and not held.held
        backend, generator = loads[-1]
        assert backend() is None and generator() is None  # nothing keeps the model alive
    assert len(loads) == 2
    assert loader(nodes, keep_loaded=True) is held and held.keep_loaded


# -- the example workflows -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, target", [("wan_t2v_promptx.json", "wan-t2v"), ("flux_t2i_promptx.json", "flux1")]
)
def test_the_example_workflows_use_the_nodes(pack, name, target):
    graph = json.loads((EXAMPLES / name).read_text())
    mine = {i: node for i, node in graph.items() if node["class_type"].startswith("Promptx")}
    assert {node["class_type"] for node in mine.values()} <= set(pack.NODE_CLASS_MAPPINGS)
    for node in graph.values():  # links point at nodes and outputs that exist
        for value in node["inputs"].values():
            if isinstance(value, list):
                source = graph[value[0]]
                cls = pack.NODE_CLASS_MAPPINGS.get(source["class_type"])
                assert cls is None or value[1] < len(cls.RETURN_TYPES)
    for node in mine.values():
        spec = pack.NODE_CLASS_MAPPINGS[node["class_type"]].INPUT_TYPES()
        assert set(spec["required"]) <= set(node["inputs"])
        assert set(node["inputs"]) <= set(spec["required"]) | set(spec.get("optional", {}))
    (enhance_id,) = [i for i, node in mine.items() if node["class_type"] == "PromptxEnhancePrompt"]
    assert mine[enhance_id]["inputs"]["target"] == target
    encoders = [n for n in graph.values() if n["class_type"] == "CLIPTextEncode"]
    assert any(n["inputs"]["text"] == [enhance_id, 0] for n in encoders)  # before the text encoder
