"""``promptx calibrate``: grid options, one-line errors, and a tiny real measurement."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from promptx.cli.calibrate import parse_grid
from promptx.cli.main import main
from promptx.errors import InvalidInputError


def test_parse_grid():
    assert parse_grid("tokens", "8, 1,4", (1,)) == (1, 4, 8)
    assert parse_grid("tokens", None, (1, 2)) == (1, 2)
    with pytest.raises(InvalidInputError, match="--widths 'a'"):
        parse_grid("widths", "a", (1,))
    with pytest.raises(InvalidInputError, match=">= 1"):
        parse_grid("batches", "0,2", (1,))


def test_bad_grid_is_a_one_line_error():
    result = CliRunner().invoke(main, ["calibrate", "--tokens", "x"])
    assert result.exit_code == 1 and result.output.startswith("promptx: error: --tokens 'x'")


@pytest.mark.slow
def test_calibrate_writes_a_table_the_harness_can_load(model_dir, tmp_path):
    from engine.planning.cost_table import CostTable

    out = tmp_path / "table.json"
    result = CliRunner().invoke(
        main,
        [
            "calibrate",
            "--tokens",
            "1,4",
            "--contexts",
            "32",
            "--batches",
            "1,2",
            "--widths",
            "1,2",
            "--repeats",
            "1",
            "--threads",
            "1",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    table = CostTable.load(out)
    assert printed["path"] == str(out) and table.tokens == [1, 4] and table.batches == [1, 2]
    assert table.verify_seconds(4, 32, 2) > 0 and table.draft_seconds(2) > 0
