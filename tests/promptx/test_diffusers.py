"""Tests for promptx.diffusers: pipeline class -> profile, the pipeline tokenizer's budget, the
wrapper.

Real tiny diffusers pipelines (StableDiffusionXLPipeline, WanPipeline) are built here offline
from randomly initialised components and run for one step (SDXL at 32x32, Wan 5 frames at 16x16,
on one torch thread: a second one only spins on this shared machine); their CLIP tokenizers
are CLIP's real BPE (vocab.json + merges.txt written from open_clip_torch's merges file, as in
test_encoder_count), the umT5-like one a word-level tokenizer trained here. Pipelines named
like other diffusers classes (SD3, FLUX, LTX, HunyuanVideo, Qwen-Image) are small stand-ins
with the same tokenizer attributes and ``__call__`` parameters. The writing is done by a
scripted Backend (test_backend_contract), through real Enhancers: the assessment, clean-up and
budget fitting are promptx's own. The class -> profile tests need neither diffusers nor torch.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from types import SimpleNamespace

import pytest

from promptx import Enhancer
from promptx.diffusers import (
    PIPELINE_TARGETS,
    EnhancedPipeline,
    enhance_for,
    enhance_pipeline,
    pipeline_encoder,
    target_for,
)
from promptx.diffusers.enhance import budgeted_profile, words_that_fit
from promptx.errors import InvalidInputError, UnknownTargetError
from promptx.profiles.registry import default_registry
from tests.promptx.test_backend_contract import ScriptedBackend
from tests.promptx.test_encoder_count import clip_files  # noqa: F401  (a fixture: CLIP's vocab + merges)

# ------------------------------------------------------------------ scripted answers

CAT_TAGS = (
    "ginger tabby cat, riding a red skateboard, sunny suburban street, low angle, motion blur, "
    "warm afternoon light, shallow depth of field, detailed fur, photograph, sharp focus, "
    "high quality"
)
# 91 CLIP tokens in 42 words (the sdxl profile allows 45): the token budget, not the word count,
# cuts it
CAT_TAGS_LONG = (
    "ginger tabby cat, riding a red skateboard, sunny suburban street, 8k uhd, 35mm, f/1.8, "
    "hyperrealistic, ultra-detailed fur, low-angle shot, motion-blurred asphalt, warm "
    "late-afternoon light, bokeh, shallow depth-of-field, film grain, kodak portra 400, octane "
    "render, trending on artstation, award-winning photograph, razor-sharp focus, masterpiece"
)
BOAT_TAGS = (
    "small blue wooden boat, floating on a calm lake, misty morning, soft golden light, "
    "reflections on the water, wide shot, photograph, sharp focus, high quality"
)
CAT_VIDEO = (
    "A ginger cat rides a red skateboard down a quiet sunlit street, its paws spread wide for "
    "balance. The camera tracks alongside at a low angle as warm afternoon light glows on the "
    "asphalt. Its fur ripples in the breeze and the wheels roll smoothly over the smooth pavement. "
    "Soft shadows stretch across the road, shallow depth of field, crisp detailed footage."
)
WAVES = (
    "The waves roll in slowly toward the shore and break into white foam on the sand. The camera "
    "holds a steady wide shot while the light shifts gently across the water and the foam slides "
    "back out."
)


class BatchingBackend(ScriptedBackend):
    """A scripted backend that batches: records how many requests each batched call carried."""

    batches = True

    def __init__(self, answers, prompt_style="full"):
        super().__init__(answers, prompt_style)
        self.batch_sizes = []

    def generate_many(self, requests):
        self.batch_sizes.append(len(requests))
        return super().generate_many(requests)


def scripted(*answers) -> Enhancer:
    return Enhancer(backend=ScriptedBackend(list(answers)), retries=0)


# -------------------------------------------------------- pipelines named like diffusers'


def stand_in(name: str, *, image: bool = False, negative: bool = True, **defaults):
    """A class named like a diffusers pipeline whose ``__call__`` takes these parameters and
    records its calls; components are given to the instance."""
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    if image:
        params.append(P("image", P.POSITIONAL_OR_KEYWORD, default=None))
    params.append(P("prompt", P.POSITIONAL_OR_KEYWORD, default=None))
    if negative:
        params += [
            P("negative_prompt", P.POSITIONAL_OR_KEYWORD, default=None),
            P("negative_prompt_embeds", P.POSITIONAL_OR_KEYWORD, default=None),
        ]
    params += [P(k, P.POSITIONAL_OR_KEYWORD, default=v) for k, v in defaults.items()]
    params.append(P("num_inference_steps", P.POSITIONAL_OR_KEYWORD, default=50))
    signature = inspect.Signature(params)

    def __init__(self, **components):
        self.calls = []
        for key, value in components.items():
            setattr(self, key, value)

    def __call__(self, *args, **kwargs):
        arguments = signature.bind(self, *args, **kwargs).arguments
        arguments.pop("self")
        self.calls.append(arguments)
        return SimpleNamespace(images=["image"])

    __call__.__signature__ = signature
    return type(name, (), {"__init__": __init__, "__call__": __call__})


# the class -> profile table of the brief, with what an image changes
EXPECTED = [
    ("WanPipeline", False, "wan-t2v"),
    ("WanImageToVideoPipeline", True, "wan-i2v"),
    ("LTXPipeline", False, "ltx-video"),
    ("LTXImageToVideoPipeline", True, "image-to-video"),
    ("LTXConditionPipeline", True, "image-to-video"),
    ("LTXConditionPipeline", False, "ltx-video"),
    ("CogVideoXPipeline", False, "cogvideox"),
    ("CogVideoXImageToVideoPipeline", True, "image-to-video"),
    ("HunyuanVideoPipeline", False, "hunyuan-video"),
    ("HunyuanVideoImageToVideoPipeline", True, "image-to-video"),
    ("FluxPipeline", False, "flux1"),
    ("FluxKontextPipeline", True, "flux2-edit"),
    ("FluxKontextPipeline", False, "flux1"),
    ("FluxImg2ImgPipeline", True, "image-to-image"),
    ("Flux2Pipeline", False, "flux2"),
    ("Flux2Pipeline", True, "flux2-edit"),
    ("Flux2KleinPipeline", False, "flux2"),
    ("Flux2KleinPipeline", True, "flux2-edit"),
    ("StableDiffusion3Pipeline", False, "sd3"),
    ("StableDiffusion3Img2ImgPipeline", True, "image-to-image"),
    ("StableDiffusionXLPipeline", False, "sdxl"),
    ("StableDiffusionXLImg2ImgPipeline", True, "image-to-image"),
    ("StableDiffusionPipeline", False, "sdxl"),
    ("StableDiffusionImg2ImgPipeline", True, "image-to-image"),
    ("QwenImagePipeline", False, "qwen-image"),
    ("QwenImageEditPipeline", True, "image-to-image"),
    ("QwenImageEditPlusPipeline", True, "image-to-image"),
    ("QwenImageImg2ImgPipeline", True, "image-to-image"),
]


@pytest.mark.parametrize(("name", "image", "profile"), EXPECTED)
def test_each_pipeline_class_maps_to_its_profile(name, image, profile):
    cls = stand_in(name, image=image)
    assert target_for(cls, image=image) == profile
    assert target_for(cls(), image=image) == profile
    assert target_for(name, image=image) == profile


def test_the_table_is_complete_and_every_profile_exists_with_the_right_task():
    assert {name for name, _, _ in EXPECTED} == set(PIPELINE_TARGETS)
    registry = default_registry()
    for name, image, profile in EXPECTED:
        task = registry.get(profile).task
        assert task in (("i2v", "i2i") if image else ("t2v", "t2i")), (name, profile, task)
        video = any(word in name for word in ("Wan", "LTX", "CogVideoX", "HunyuanVideo"))
        assert task.endswith("v") == video, (name, task)
    assert "sd15" in registry.get("sdxl").aliases  # SD 1.5 has its tags in the sdxl profile


def test_a_subclass_gets_the_profile_of_the_class_it_extends():
    class MyWan(stand_in("WanPipeline")):
        pass

    class Tuned(MyWan):
        pass

    assert target_for(Tuned()) == "wan-t2v"


def test_an_unknown_pipeline_needs_target():
    pipe = stand_in("MochiPipeline")()
    with pytest.raises(InvalidInputError, match=r"MochiPipeline.*target="):
        target_for(pipe)
    with pytest.raises(InvalidInputError, match="MochiPipeline"):
        enhance_for(pipe, "a cat on a skateboard", enhancer=scripted())
    result = enhance_for(
        pipe, "a cat on a skateboard", target="video", enhancer=scripted(CAT_VIDEO), seed=1
    )
    assert result.target == "video" and not result.fallback
    with pytest.raises(UnknownTargetError):
        enhance_for(pipe, "a cat", target="no-such-profile", enhancer=scripted())


def test_importing_promptx_diffusers_imports_neither_torch_nor_diffusers():
    code = (
        "import sys, promptx, promptx.diffusers; "
        "print(sorted(m for m in ('torch', 'diffusers', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_bad_options_are_invalid_input():
    pipe = stand_in("WanPipeline")()
    with pytest.raises(InvalidInputError, match="unknown option colour"):
        enhance_for(pipe, "a cat", enhancer=scripted(), colour="red")
    with pytest.raises(InvalidInputError, match="batch_size"):
        enhance_for(pipe, "a cat", enhancer=scripted(), batch_size=4)  # one prompt: no batch
    with pytest.raises(InvalidInputError, match="either enhancer= or Enhancer options"):
        enhance_pipeline(pipe, enhancer=scripted(), model="some/model")
    with pytest.raises(InvalidInputError, match="must be a promptx.Enhancer"):
        enhance_pipeline(pipe, enhancer=object())


# ------------------------------------------------------------------------ tokenizers


@pytest.fixture(scope="module")
def clip_tokenizer(clip_files):  # noqa: F811
    """transformers' CLIPTokenizer over CLIP's real BPE, with the 77 positions a pipeline's has."""
    from transformers import CLIPTokenizer

    tokenizer = CLIPTokenizer.from_pretrained(str(clip_files), local_files_only=True)
    tokenizer.model_max_length = 77
    return tokenizer


WORDS = (
    "a the cat rides red skateboard down quiet sunlit street its paws spread wide for balance "
    "camera tracks alongside at low angle as warm afternoon light glows on asphalt fur ripples in "
    "breeze and wheels roll smoothly over smooth pavement soft shadows stretch across road shallow "
    "depth of field crisp detailed footage ginger . , fox snow"
).split()


def word_tokenizer(
    cls_name: str = "T5TokenizerFast", *, eos: bool = True, specials=(), model_max_length=512
):
    """A word-level tokenizer (transformers class ``cls_name``) that adds ``</s>`` like T5."""
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        [" ".join(WORDS)],
        trainers.WordLevelTrainer(special_tokens=["<pad>", "</s>", "<unk>", *specials]),
    )
    if eos:
        tok.post_processor = processors.TemplateProcessing(
            single="$A </s>", special_tokens=[("</s>", tok.token_to_id("</s>"))]
        )
    extra = {"extra_ids": 0} if cls_name == "T5TokenizerFast" else {}
    wrapped = getattr(transformers, cls_name)(
        tokenizer_object=tok,
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=model_max_length,
        additional_special_tokens=list(specials),
        **extra,
    )
    return wrapped


def own_count(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False).input_ids)


def test_sd3_counts_with_its_t5_tokenizer_3_and_keeps_255(clip_tokenizer):
    t5 = word_tokenizer()
    SD3 = stand_in("StableDiffusion3Pipeline", max_sequence_length=256)
    pipe = SD3(tokenizer=clip_tokenizer, tokenizer_2=clip_tokenizer, tokenizer_3=t5)
    encoder = pipeline_encoder(pipe, "t5-xxl")
    assert (encoder.attribute, encoder.counter.name, encoder.max_tokens) == (
        "tokenizer_3",
        "pipeline:tokenizer_3",
        255,
    )
    assert encoder.counter.count(CAT_VIDEO) == own_count(t5, CAT_VIDEO)
    assert pipeline_encoder(pipe, "t5-xxl", {"max_sequence_length": 64}).max_tokens == 63
    clip = pipeline_encoder(pipe, "clip-l")
    assert (clip.attribute, clip.max_tokens) == (
        "tokenizer",
        75,
    )  # CLIP keeps 77 positions, whatever the call


def test_sd3_without_its_t5_counts_with_clip_and_shrinks_the_word_budget(clip_tokenizer):
    SD3 = stand_in("StableDiffusion3Pipeline", max_sequence_length=256)
    pipe = SD3(
        tokenizer=clip_tokenizer, tokenizer_2=clip_tokenizer, tokenizer_3=None
    )  # loaded without T5
    encoder = pipeline_encoder(pipe, "t5-xxl")
    assert (encoder.attribute, encoder.max_tokens) == ("tokenizer", 75)
    profile, counter = budgeted_profile(scripted(), pipe, "sd3")
    assert counter is encoder.counter and profile.length.max_encoder_tokens == 75
    assert profile.length.max_words == words_that_fit(profile, counter, 75) < 150


def test_flux_counts_with_tokenizer_2_and_kontext_falls_back_to_its_longest_encoder(clip_tokenizer):
    t5 = word_tokenizer()
    flux = stand_in("FluxPipeline", max_sequence_length=512)(
        tokenizer=clip_tokenizer, tokenizer_2=t5
    )
    assert (
        pipeline_encoder(flux, "t5-xxl").attribute,
        pipeline_encoder(flux, "t5-xxl").max_tokens,
    ) == ("tokenizer_2", 511)
    # flux2-edit names a Mistral encoder; Kontext has CLIP and T5: the T5 carries the prompt
    kontext = stand_in("FluxKontextPipeline", image=True, max_sequence_length=512)(
        tokenizer=clip_tokenizer, tokenizer_2=t5
    )
    assert pipeline_encoder(kontext, "mistral").attribute == "tokenizer_2"
    assert pipeline_encoder(kontext, None).attribute == "tokenizer_2"


def test_the_budget_is_the_smaller_of_the_profile_and_the_encoder():
    t5 = word_tokenizer()
    ltx = stand_in("LTXPipeline", max_sequence_length=128)(tokenizer=t5)
    enhancer = scripted(" ".join([CAT_VIDEO] * 3))  # about 180 words, 190 tokens here
    # the profile allows 255 T5 tokens; LTXPipeline tokenizes to 128 (127 and EOS): the words shrink
    # with it
    profile, counter = budgeted_profile(enhancer, ltx, "ltx-video")
    words = words_that_fit(profile, counter, 127)
    assert (profile.length.max_encoder_tokens, profile.length.max_words) == (127, words)
    assert 60 < words < 180 and profile.length.min_words == round(60 * words / 180)
    assert (
        default_registry().get("ltx-video").length.max_words == 180
    )  # the registry's is untouched
    result = enhance_for(ltx, "a cat on a skateboard", enhancer=enhancer, seed=1)
    assert result.target == "ltx-video" and not result.fallback, result.reason
    assert f"{profile.length.min_words} to {words} words" in enhancer.backend.chats[0][0]["content"]
    assert result.stats.encoder_counter == "pipeline:tokenizer"
    assert result.stats.encoder_tokens == own_count(t5, result.text) <= 127
    assert result.negative_prompt == default_registry().get("ltx-video").negative_prompt
    # a profile budget below the pipeline's stays as it is
    big = stand_in("LTXPipeline", max_sequence_length=1024)(tokenizer=t5)
    assert budgeted_profile(enhancer, big, "ltx-video")[0] is default_registry().get("ltx-video")


def test_templates_around_the_prompt_take_their_share():
    hunyuan_template = {
        "template": "<|start|>system: describe the video<|eot_id|><|start|>user: {}<|eot_id|>",
        "crop_start": 9,
    }
    llama = word_tokenizer(
        "PreTrainedTokenizerFast",
        eos=False,
        specials=("<|eot_id|>", "<|start|>"),
        model_max_length=10**30,
    )
    hunyuan = stand_in(
        "HunyuanVideoPipeline", max_sequence_length=256, prompt_template=hunyuan_template
    )(tokenizer=llama)
    encoder = pipeline_encoder(hunyuan, "llama")
    assert encoder.max_tokens == 255  # the template's start is cropped, its <|eot_id|> is not
    assert pipeline_encoder(hunyuan, "llama", {"max_sequence_length": 100}).max_tokens == 99

    qwen_tok = word_tokenizer(
        "PreTrainedTokenizerFast", eos=False, specials=("<|im_start|>", "<|im_end|>")
    )
    qwen = stand_in("QwenImagePipeline", max_sequence_length=512)(tokenizer=qwen_tok)
    qwen.prompt_template_encode = (
        "<|im_start|>system\ndescribe<|im_end|>\n"
        "<|im_start|>user\n{}<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    qwen.tokenizer_max_length = 1024
    assert (
        pipeline_encoder(qwen, "qwen2.5-vl").max_tokens == 512 - 3
    )  # <|im_end|> <|im_start|> assistant

    chat = word_tokenizer("PreTrainedTokenizerFast", eos=False)
    chat.chat_template = (
        "{% for m in messages %}[{{ m.role }}] {% for c in m.content %}{{ c.text }} "
        "{% endfor %}{% endfor %}"
    )
    flux2 = stand_in("Flux2Pipeline", image=True, negative=False, max_sequence_length=512)(
        tokenizer=chat
    )
    flux2.system_message = "describe the cat and the street"
    rendered = chat.apply_chat_template(
        [
            {"role": "system", "content": [{"type": "text", "text": flux2.system_message}]},
            {"role": "user", "content": [{"type": "text", "text": ""}]},
        ],
        tokenize=False,
    )
    assert pipeline_encoder(flux2, "mistral").max_tokens == 512 - own_count(chat, rendered)
    assert own_count(chat, rendered) > own_count(chat, flux2.system_message)


def test_a_pipeline_without_a_tokenizer_keeps_the_enhancers_own_counter():
    pipe = stand_in("WanPipeline", max_sequence_length=512)()
    assert pipeline_encoder(pipe, "umt5-xxl") is None
    result = enhance_for(pipe, "a cat on a skateboard", enhancer=scripted(CAT_VIDEO), seed=1)
    assert result.target == "wan-t2v" and result.stats.encoder_counter == "estimate"


def test_an_image_to_video_pipeline_grounds_the_enhancement_in_the_image():
    from PIL import Image

    backend = ScriptedBackend([WAVES])
    I2V = stand_in("WanImageToVideoPipeline", image=True, max_sequence_length=512)
    pipe = I2V(tokenizer=word_tokenizer())
    photo = Image.new("RGB", (64, 36))
    result = enhance_for(
        pipe,
        "",
        image=photo,
        caption="waves on a beach",
        seed=1,
        enhancer=Enhancer(backend=backend, retries=0),
    )
    assert (
        result.target == "wan-i2v"
        and not result.fallback
        and result.text.startswith("The waves roll in")
    )
    assert "64x36 pixels, landscape, aspect ratio 16:9" in backend.chats[0][-1]["content"]


def test_the_wrapper_on_a_stand_in_passes_image_positionally_and_fills_the_negative():
    from PIL import Image

    backend = ScriptedBackend([WAVES])
    pipe = stand_in("WanImageToVideoPipeline", image=True, max_sequence_length=512)(
        tokenizer=word_tokenizer()
    )
    wrapped = enhance_pipeline(
        pipe, enhancer=Enhancer(backend=backend, retries=0), caption="waves on a beach", seed=1
    )
    photo = Image.new("RGB", (48, 48))
    wrapped(photo, "the waves roll in", enhance_prompt=True, num_inference_steps=2)
    call = pipe.calls[-1]
    assert call["image"] is photo and call["prompt"].startswith("The waves roll in")
    assert call["negative_prompt"] == default_registry().get("wan-i2v").negative_prompt
    assert call["num_inference_steps"] == 2 and "enhance_prompt" not in call
    assert "48x48 pixels, square" in backend.chats[0][-1]["content"]


def test_one_image_per_prompt_grounds_each_prompt_in_its_own_image():
    from PIL import Image

    backend = ScriptedBackend([WAVES, WAVES])
    pipe = stand_in("WanImageToVideoPipeline", image=True, max_sequence_length=512)(
        tokenizer=word_tokenizer()
    )
    wrapped = enhance_pipeline(
        pipe, enhancer=Enhancer(backend=backend, retries=0), caption="waves on a beach", seed=1
    )
    photos = [Image.new("RGB", (64, 36)), Image.new("RGB", (48, 48))]
    wrapped(photos, ["the waves roll in", "the waves roll in"], enhance_prompt=True)
    assert "64x36 pixels" in backend.chats[0][-1]["content"]
    assert "48x48 pixels, square" in backend.chats[1][-1]["content"]
    assert pipe.calls[-1]["image"] is photos and len(pipe.calls[-1]["prompt"]) == 2


def test_a_pipeline_without_negative_prompt_gets_none():
    pipe = stand_in("Flux2Pipeline", image=True, negative=False, max_sequence_length=512)()
    flux_answer = (
        "A ginger cat rides a red skateboard down a quiet sunlit street, its paws spread wide for "
        "balance, warm afternoon light, low camera angle, shallow depth of field, "
        "detailed photograph."
    )
    enhance_pipeline(pipe, enhancer=scripted(flux_answer), seed=1)(
        prompt="a cat on a skateboard", enhance_prompt=True
    )
    assert set(pipe.calls[-1]) == {"prompt"} and pipe.calls[-1]["prompt"].startswith("A ginger cat")


# ----------------------------------------------------------------- real tiny pipelines


@pytest.fixture(scope="module")
def sdxl(clip_tokenizer, one_thread):
    """A real StableDiffusionXLPipeline: tiny random UNet, VAE and CLIP text encoders, CLIP's
    BPE."""
    pytest.importorskip("diffusers")
    import torch
    from diffusers import (
        AutoencoderKL,
        EulerDiscreteScheduler,
        StableDiffusionXLPipeline,
        UNet2DConditionModel,
    )
    from transformers import (
        CLIPTextConfig,
        CLIPTextModel,
        CLIPTextModelWithProjection,
        CLIPTokenizer,
    )

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64),
        layers_per_block=1,
        sample_size=16,
        in_channels=4,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        attention_head_dim=(2, 4),
        use_linear_projection=True,
        addition_embed_type="text_time",
        addition_time_embed_dim=8,
        transformer_layers_per_block=(1, 1),
        projection_class_embeddings_input_dim=80,
        cross_attention_dim=64,
        norm_num_groups=8,
    )
    vae = AutoencoderKL(
        block_out_channels=[16, 32],
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        down_block_types=["DownEncoderBlock2D"] * 2,
        up_block_types=["UpDecoderBlock2D"] * 2,
        sample_size=32,
        norm_num_groups=8,
    )
    config = CLIPTextConfig(
        bos_token_id=49406,
        eos_token_id=49407,
        pad_token_id=49407,
        hidden_size=32,
        intermediate_size=37,
        num_attention_heads=4,
        num_hidden_layers=2,
        vocab_size=49408,
        projection_dim=32,
    )
    tokenizer_2 = CLIPTokenizer.from_pretrained(clip_tokenizer.name_or_path, local_files_only=True)
    tokenizer_2.model_max_length = 77
    scheduler = EulerDiscreteScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        steps_offset=1,
        timestep_spacing="leading",
    )
    pipe = StableDiffusionXLPipeline(
        vae=vae,
        text_encoder=CLIPTextModel(config),
        text_encoder_2=CLIPTextModelWithProjection(config),
        tokenizer=clip_tokenizer,
        tokenizer_2=tokenizer_2,
        unet=unet,
        scheduler=scheduler,
    )
    pipe.set_progress_bar_config(disable=True)
    return pipe


@pytest.fixture()
def prompts_seen(sdxl, monkeypatch):
    """What the SDXL pipeline's encode_prompt is given, call by call."""
    seen, original = [], sdxl.encode_prompt

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(sdxl, "encode_prompt", spy)
    return seen


TINY = dict(num_inference_steps=1, height=32, width=32, output_type="np")


def test_sdxl_maps_to_the_sdxl_profile_and_counts_with_its_clip_tokenizer(sdxl):
    assert target_for(sdxl) == "sdxl"
    encoder = pipeline_encoder(sdxl, "clip-l")
    assert (encoder.attribute, encoder.counter.name, encoder.max_tokens) == (
        "tokenizer",
        "pipeline:tokenizer",
        75,
    )
    assert own_count(sdxl.tokenizer, CAT_TAGS_LONG) > 75
    result = enhance_for(sdxl, "a cat on a skateboard", enhancer=scripted(CAT_TAGS_LONG), seed=1)
    assert result.target == "sdxl" and not result.fallback, result.reason
    assert result.stats.encoder_counter == "pipeline:tokenizer"
    assert result.stats.encoder_tokens == own_count(sdxl.tokenizer, result.text) <= 75
    assert result.text.startswith("ginger tabby cat, riding a red skateboard")
    assert result.negative_prompt == default_registry().get("sdxl").negative_prompt
    assert sdxl.tokenizer.model_max_length == 77  # the pipeline's tokenizer is left as it was


def test_the_wrapper_runs_a_real_sdxl_call_with_the_enhanced_prompt(sdxl, prompts_seen):
    wrapped = enhance_pipeline(sdxl, enhancer=scripted(CAT_TAGS), seed=1)
    assert (
        isinstance(wrapped, EnhancedPipeline) and wrapped.unet is sdxl.unet
    )  # the pipeline's attributes
    out = wrapped(prompt="a cat on a skateboard", enhance_prompt=True, guidance_scale=5.0, **TINY)
    assert out.images.shape == (1, 32, 32, 3)
    [result] = out.enhanced_prompts
    assert wrapped.last_enhanced == out.enhanced_prompts
    assert (
        result.text.startswith("ginger tabby cat")
        and result.stats.encoder_counter == "pipeline:tokenizer"
    )
    assert prompts_seen[-1]["prompt"] == result.text
    assert prompts_seen[-1]["negative_prompt"] == result.negative_prompt != ""


def test_a_list_of_prompts_is_enhanced_in_one_batched_call(sdxl, prompts_seen):
    backend = BatchingBackend([CAT_TAGS, BOAT_TAGS])
    wrapped = enhance_pipeline(sdxl, enhancer=Enhancer(backend=backend, retries=0), seed=1)
    out = wrapped(
        prompt=["a cat on a skateboard", "a blue boat on a lake"], enhance_prompt=True, **TINY
    )
    assert backend.batch_sizes == [2]  # both first attempts in one batched decode
    assert out.images.shape[0] == 2
    assert [r.text for r in out.enhanced_prompts] == prompts_seen[-1]["prompt"]
    assert [r.original_prompt for r in out.enhanced_prompts] == [
        "a cat on a skateboard",
        "a blue boat on a lake",
    ]
    assert (
        prompts_seen[-1]["negative_prompt"] == [default_registry().get("sdxl").negative_prompt] * 2
    )


def test_a_given_negative_prompt_is_kept(sdxl, prompts_seen):
    wrapped = enhance_pipeline(sdxl, enhancer=scripted(CAT_TAGS), seed=1)
    out = wrapped(
        "a cat on a skateboard", negative_prompt="painting, sketch", enhance_prompt=True, **TINY
    )
    assert prompts_seen[-1]["negative_prompt"] == "painting, sketch"
    assert prompts_seen[-1]["prompt"] == out.enhanced_prompts[0].text


def test_without_enhance_prompt_the_call_goes_through_untouched(sdxl, prompts_seen):
    backend = ScriptedBackend([])  # asked for text, it would fail
    wrapped = enhance_pipeline(sdxl, enhancer=Enhancer(backend=backend))
    out = wrapped(prompt="a cat on a skateboard", **TINY)
    assert (
        prompts_seen[-1]["prompt"] == "a cat on a skateboard"
        and prompts_seen[-1]["negative_prompt"] is None
    )
    assert not hasattr(out, "enhanced_prompts") and backend.chats == []
    wrapped(prompt="a cat on a skateboard", enhance_prompt=False, **TINY)
    assert backend.chats == [] and wrapped.last_enhanced is None


def test_always_enhances_unless_told_not_and_tuples_keep_the_results_on_the_wrapper(
    sdxl, prompts_seen
):
    wrapped = enhance_pipeline(sdxl, enhancer=scripted(CAT_TAGS), always=True, seed=1)
    images = wrapped(prompt="a cat on a skateboard", return_dict=False, **TINY)
    assert isinstance(images, tuple) and prompts_seen[-1]["prompt"].startswith("ginger tabby cat")
    assert wrapped.last_enhanced[0].text == prompts_seen[-1]["prompt"]
    wrapped(prompt="a fox", enhance_prompt=False, **TINY)
    assert prompts_seen[-1]["prompt"] == "a fox"


@pytest.fixture(scope="module")
def wan(one_thread):
    """A real WanPipeline: tiny random transformer, VAE and umT5 encoder, a word-level umT5-like
    tokenizer."""
    pytest.importorskip("diffusers")
    import torch
    from diffusers import (
        AutoencoderKLWan,
        FlowMatchEulerDiscreteScheduler,
        WanPipeline,
        WanTransformer3DModel,
    )
    from transformers import UMT5Config, UMT5EncoderModel

    torch.manual_seed(0)
    tokenizer = word_tokenizer()
    vae = AutoencoderKLWan(
        base_dim=3,
        z_dim=16,
        dim_mult=[1, 1, 1, 1],
        num_res_blocks=1,
        temperal_downsample=[False, True, True],
    )
    transformer = WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=16,
        out_channels=16,
        text_dim=32,
        freq_dim=256,
        ffn_dim=32,
        num_layers=2,
        cross_attn_norm=True,
        qk_norm="rms_norm_across_heads",
        rope_max_seq_len=32,
    )
    encoder = UMT5EncoderModel(
        UMT5Config(
            vocab_size=len(tokenizer),
            d_model=32,
            d_kv=8,
            d_ff=37,
            num_layers=1,
            num_heads=4,
            relative_attention_num_buckets=8,
            decoder_start_token_id=0,
            pad_token_id=0,
            eos_token_id=1,
        )
    )
    pipe = WanPipeline(
        tokenizer=tokenizer,
        text_encoder=encoder,
        vae=vae,
        transformer=transformer,
        scheduler=FlowMatchEulerDiscreteScheduler(shift=7.0),
    )
    pipe.set_progress_bar_config(disable=True)
    return pipe


def test_a_real_wan_call_counts_with_its_umt5_tokenizer_within_the_calls_max_sequence_length(wan):
    assert target_for(wan) == "wan-t2v"
    encoder = pipeline_encoder(wan, "umt5-xxl")
    assert (encoder.attribute, encoder.max_tokens) == ("tokenizer", 511)
    wrapped = enhance_pipeline(wan, enhancer=scripted(CAT_VIDEO), seed=1)
    out = wrapped(
        "a cat on a skateboard",
        enhance_prompt=True,
        max_sequence_length=48,
        height=16,
        width=16,
        num_frames=5,
        num_inference_steps=1,
        output_type="np",
    )
    assert out.frames.shape == (1, 5, 16, 16, 3)
    [result] = out.enhanced_prompts
    assert result.target == "wan-t2v" and not result.fallback, result.reason
    assert result.stats.encoder_counter == "pipeline:tokenizer"
    assert (
        result.stats.encoder_tokens
        == own_count(wan.tokenizer, result.text)
        <= 47
        < own_count(wan.tokenizer, CAT_VIDEO)
    )
    assert result.negative_prompt.startswith("Bright tones")


@pytest.mark.slow
def test_the_shared_embedded_model_enhances_for_a_real_sdxl_pipeline(sdxl, model_dir):
    result = enhance_for(sdxl, "a fox in the snow", seed=1, max_new_tokens=60, strength="full")
    assert result.target == "sdxl" and result.stats.backend == "embedded"
    assert result.stats.encoder_counter == "pipeline:tokenizer"
    assert result.stats.encoder_tokens == own_count(sdxl.tokenizer, result.text) <= 75
    light = enhance_for(
        sdxl, "a fox in the snow", seed=1
    )  # the default: vetted phrases, same budget
    assert (
        light.strength == "light"
        and light.added
        and light.stats.encoder_counter == "pipeline:tokenizer"
    )
    assert light.stats.encoder_tokens == own_count(sdxl.tokenizer, light.text) <= 75
