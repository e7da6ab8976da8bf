"""build_runner: the one place that decides which code runs a model's passes."""

from __future__ import annotations

import pytest
import torch

from engine.bench.machine import machine_info
from engine.decode.sampling import SamplingParams
from engine.generator import Generator
from engine.runtime.quantize import int8_available
from engine.runtime.runner import Runner, build_runner
from tests.tiny import make_tiny_drafter, make_tiny_target


def _half_target():
    model = make_tiny_target().to(torch.bfloat16)
    model.dtype, model.precision = torch.bfloat16, "bfloat16"
    return model


def test_a_float32_model_runs_its_modules_exactly_with_contiguous_trees():
    runner = build_runner(make_tiny_target())
    assert runner.exact and runner.precision == "float32"
    assert runner.kernels() == {
        "device": "cpu",
        "precision": "float32",
        "pass": "Transformer",
        "linear": "Linear",
        "attention": "Attention",
        "lane_stride": 0,
        "max_columns": None,
        "cuda_graphs": False,
        "exact": True,
    }


def test_half_precision_on_a_cpu_gets_exact_rows_and_a_lane_layout():
    runner = build_runner(_half_target())
    kernels = runner.kernels()
    assert runner.exact and runner.precision == "bfloat16"
    assert kernels["attention"] == "RowwiseAttention"
    assert kernels["linear"] == "PaddedLinear"
    assert kernels["lane_stride"] == 32 and runner.layout is runner.model.layout


def test_mixed_precision_decodes_plainly_and_says_so():
    runner = build_runner(make_tiny_target(), "mixed")
    assert not runner.exact and runner.precision == "mixed"
    assert runner.kernels()["linear"] == "MixedLinear"
    generator = Generator(runner, tokenizer=None, drafter=make_tiny_drafter(make_tiny_target()))
    assert not generator.exact_batches and not generator.can_speculate
    assert generator.planner_for(SamplingParams(max_new_tokens=4)) is None  # plain decoding


@pytest.mark.skipif(not int8_available(), reason="no int8 CPU kernels in this PyTorch build")
def test_int8_is_plain_only_and_recorded_by_the_benchmark():
    runner = build_runner(make_tiny_target(), "int8")
    assert not runner.exact and runner.precision == "int8"
    info = machine_info(runner.model)
    assert info["dtype"] == "int8" and info["kernels"]["precision"] == "int8"


def test_a_precision_the_weights_cannot_take_is_refused():
    with pytest.raises(ValueError, match="needs a float32 model"):
        build_runner(_half_target(), "mixed")
    with pytest.raises(ValueError, match="cannot run as int4"):
        build_runner(make_tiny_target(), "int4")


def test_a_generator_given_a_model_builds_its_runner_and_one_given_a_runner_keeps_it():
    model = make_tiny_target()
    runner = build_runner(model)
    assert Generator(runner, tokenizer=None).runner is runner
    built = Generator(_half_target(), tokenizer=None)
    assert isinstance(built.runner, Runner) and built.exact_batches
    assert built.model.layout.lane_stride == 32  # made exact at construction
