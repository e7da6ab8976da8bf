"""Issue 44: the fuzz table (``cases.py``) run against the API, the CLI, batch files and HTTP, one
test per case, and a little load on the API and the server (concurrent good and bad calls, none
crossed). Goal: no traceback, no internal error, no 500 and no hang over the whole table.

A hang is a call that does not answer within its deadline (``DEADLINE_S``); the test fails then
instead of blocking the suite. Known product bugs are ``xfail(strict=True)`` cases in the table.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest
from click.testing import CliRunner
from PIL import Image

import promptx
from promptx.cli.main import main
from promptx.errors import PromptxError
from promptx.result import EnhancedPrompt
from tests.reliability import cases as table
from tests.reliability.cases import (
    API,
    BATCH,
    CASES,
    CLI,
    CLI_PROCESS,
    HTTP,
    Asset,
    BatchInvariants,
    Case,
    Either,
    Exit,
    Http,
    Ok,
    Raises,
)

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 60  # an in-process call or a request that takes longer is a hang
PROCESS_DEADLINE_S = 120  # a whole `python -m promptx` (imports included) on a busy 2-core machine


def _params(cases: list[Case]):
    return [
        pytest.param(
            c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []
        )
        for c in cases
    ]


# ------------------------------------------------------------------------------- the table


def test_the_table_has_at_least_100_cases_on_every_surface():
    assert len(CASES) >= 100, len(CASES)
    counts = {s: len(table.by_surface(s)) for s in ("api", "cli", "cli-process", "batch", "http")}
    assert counts["api"] >= 40 and counts["cli"] + counts["cli-process"] >= 25, counts
    assert counts["batch"] >= 15 and counts["http"] >= 25, counts
    assert sum(counts.values()) == len(CASES)
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    for case in CASES:
        expected = case.expected.options if isinstance(case.expected, Either) else (case.expected,)
        kinds = {
            "api": (Raises, Ok),
            "cli": (Exit,),
            "cli-process": (Exit,),
            "batch": (BatchInvariants,),
            "http": (Http,),
        }[case.surface]
        assert all(isinstance(e, kinds) for e in expected), case.id


# ----------------------------------------------------------------------------- helpers


def within(seconds: float, work: Callable[[], Any]) -> Any:
    """``work()``'s value (or its exception); a test failure if it has not ended after
    ``seconds``."""
    box: dict = {}

    def run():
        try:
            box["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"hang: no answer within {seconds} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _png(width: int = 96, height: int = 64) -> bytes:
    image = Image.new("RGB", (width, height))
    image.putdata(
        [((x * 7) % 256, (y * 5) % 256, (x * y) % 256) for y in range(height) for x in range(width)]
    )
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    """The files ``Asset`` names: ok.png, truncated.png, not-an-image.png, a-dir (missing.png is not
    made)."""
    folder = tmp_path_factory.mktemp("assets")
    good = _png()
    (folder / "ok.png").write_bytes(good)
    (folder / "truncated.png").write_bytes(good[: len(good) // 2])
    (folder / "not-an-image.png").write_bytes(b"hello, I am not an image")
    (folder / "a-dir").mkdir()
    return folder


def resolve(value: Any, folder: Path) -> Any:
    """``value`` with each ``Asset`` replaced by its path (a str) in ``folder``."""
    if isinstance(value, Asset):
        return str(folder / value.name)
    if isinstance(value, dict):
        return {k: resolve(v, folder) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(resolve(v, folder) for v in value)
    return value


def check(expected: Any, run_check: Callable[[Any], None]) -> None:
    """``run_check(expected)``, or with ``Either``, passes when one of its options does."""
    if not isinstance(expected, Either):
        run_check(expected)
        return
    failures = []
    for option in expected.options:
        try:
            run_check(option)
            return
        except AssertionError as exc:
            failures.append(f"{type(option).__name__}: {exc}")
    raise AssertionError("no expected outcome matched:\n  " + "\n  ".join(failures))


def _starts_with(text: str, start: str) -> bool:
    """``text`` begins with ``start``, the first letter in either case (clean-up capitalises it)."""
    return text[:1].lower() == start[:1].lower() and text[1 : len(start)] == start[1:]


def _check_ok_fields(expected: Ok, text: str, skipped: bool, language: str, original: str) -> None:
    if expected.skipped is not None:
        assert skipped is expected.skipped, (
            f"skipped={skipped}, expected {expected.skipped}: {text[:120]!r}"
        )
    if expected.starts_with is not None:
        assert _starts_with(text, expected.starts_with), (
            f"{text[:120]!r} does not start with {expected.starts_with[:60]!r}"
        )
    if expected.language is not None:
        assert language == expected.language, (
            f"language {language!r}, expected {expected.language!r}"
        )
    if expected.original is not None:
        assert original == expected.original, (
            f"original_prompt {original!r}, expected {expected.original!r}"
        )
    for part in expected.absent:
        assert part not in text, f"{part!r} is in the text: {text[:200]!r}"


# ------------------------------------------------------------------------------------- API


@pytest.fixture(scope="module")
def enhancer():
    return promptx.Enhancer(quiet=True)


def _call(enhancer, call, folder: Path):
    prompt, options = resolve(call.prompt, folder), resolve(call.options, folder)
    if call.method == "enhance":
        return enhancer.enhance(prompt, call.target, **options)
    if call.method == "promptx.enhance":
        return promptx.enhance(prompt, call.target, **options)
    if call.method == "enhance_many":
        return enhancer.enhance_many(prompt, call.target, **options)
    if call.method == "stream":
        stream = enhancer.stream(prompt, call.target, **options)
        deltas = list(stream)
        assert stream.result is not None and "".join(deltas).strip(), (
            "a finished stream has a result and text"
        )
        return stream.result
    raise AssertionError(f"unknown method {call.method}")


def _check_api(expected, outcome: tuple[str, Any]) -> None:
    kind, value = outcome
    if isinstance(expected, Raises):
        assert kind == "raised", (
            f"expected {expected.error.__name__}, got a result: {str(value)[:200]!r}"
        )
        assert isinstance(value, expected.error), (
            f"expected {expected.error.__name__}, got {type(value).__name__}: {value}"
        )
        assert expected.match in str(value), f"{expected.match!r} not in {str(value)!r}"
        return
    assert kind == "ok", f"expected a result, got {type(value).__name__}: {value}"
    results = value if isinstance(value, list) else [value]
    if expected.count is not None:
        assert len(results) == expected.count
    for result in results:
        assert isinstance(result, EnhancedPrompt), type(result)
        try:
            json.loads(result.model_dump_json())
        except Exception as exc:  # noqa: BLE001 - a result that cannot be sent anywhere
            raise AssertionError(
                f"the result does not serialise to JSON: {type(exc).__name__}: {exc}"
            ) from None
        assert str(result) == result.text
    if not isinstance(value, list):
        _check_ok_fields(expected, value.text, value.skipped, value.language, value.original_prompt)


@pytest.mark.parametrize("case", _params(API))
def test_api(case: Case, enhancer, assets):
    try:
        outcome = ("ok", within(DEADLINE_S, lambda: _call(enhancer, case.input, assets)))
    except Exception as exc:  # noqa: BLE001 - judged below
        if not isinstance(exc, PromptxError):
            pytest.fail(
                f"untyped exception (a traceback for the caller): {type(exc).__name__}: {exc}"
            )
        outcome = ("raised", exc)
    check(case.expected, lambda e: _check_api(e, outcome))


def test_api_concurrent_calls_are_neither_lost_nor_crossed(enhancer):
    """64 calls from 8 threads on one Enhancer, good and bad mixed: each answer is its own."""
    prompts = [
        f"a {colour} {thing} on a hill"
        for colour in ("red", "blue", "green", "amber")
        for thing in ("car", "boat", "kite", "tram", "fox", "owl", "bell", "lamp")
    ]
    jobs = [
        (p, {"seed": i}, True) if i % 4 else (p, {"seed": -i - 1}, False)
        for i, p in enumerate(prompts)
    ]
    jobs += [(None, {}, False), ("", {}, False), (5, {}, False), ("<b></b>", {}, False)] * 4

    def one(job):
        prompt, options, _good = job
        try:
            return enhancer.enhance(prompt, "video", **options)
        except PromptxError as exc:
            return exc

    with ThreadPoolExecutor(8) as pool:
        answers = within(DEADLINE_S, lambda: list(pool.map(one, jobs)))
    for (prompt, options, good), answer in zip(jobs, answers):
        if good:
            assert isinstance(answer, EnhancedPrompt), (prompt, answer)
            assert answer.original_prompt == prompt and _starts_with(answer.text, prompt), (
                prompt,
                answer.text,
            )
        else:
            assert isinstance(answer, promptx.InvalidInputError), (prompt, options, answer)


# ------------------------------------------------------------------------------------- CLI


def _check_exit(expected: Exit, code: int, stdout: str, stderr: str) -> None:
    assert "Traceback" not in stdout + stderr, stderr[-2000:]
    assert "internal error" not in stderr, stderr[-1000:]
    assert code == expected.code, (
        f"exit {code}, expected {expected.code}; stderr: {stderr[-600:]!r}"
    )
    lines = [line for line in stderr.splitlines() if line.strip()]
    if expected.kind == "error":
        assert len(lines) == 1 and lines[0].startswith("promptx: error:"), (
            f"not one error line: {stderr[-600:]!r}"
        )
        assert expected.needle in lines[0], f"{expected.needle!r} not in {lines[0]!r}"
    elif expected.kind == "usage":
        assert "Error:" in stderr and expected.needle in stderr, stderr[-600:]
    else:
        assert expected.needle in stdout, f"{expected.needle!r} not in {stdout[:300]!r}"
        for part in expected.absent:
            assert part not in stdout, f"{part!r} in {stdout[:300]!r}"
        assert all(line.startswith("promptx: ") for line in lines), stderr[-600:]


@pytest.mark.parametrize("case", _params(CLI))
def test_cli(case: Case, assets):
    args = [str(a) for a in resolve(case.input.args, assets)]
    result = within(DEADLINE_S, lambda: CliRunner().invoke(main, args, input=case.input.stdin))
    escaped = result.exception if not isinstance(result.exception, SystemExit) else None
    assert escaped is None, f"an exception escaped the CLI: {type(escaped).__name__}: {escaped}"
    check(case.expected, lambda e: _check_exit(e, result.exit_code, result.stdout, result.stderr))


@pytest.mark.parametrize("case", _params(CLI_PROCESS))
def test_cli_process(case: Case, assets):
    args = [a if isinstance(a, bytes) else str(a) for a in resolve(case.input.args, assets)]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "promptx", *args],
            input=case.input.stdin or b"",
            capture_output=True,
            timeout=PROCESS_DEADLINE_S,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"hang: python -m promptx did not end within {PROCESS_DEADLINE_S} s")
    stdout, stderr = (
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )
    check(case.expected, lambda e: _check_exit(e, done.returncode, stdout, stderr))


# ----------------------------------------------------------------------------- batch files


def _input_lines(content: bytes) -> int:
    """Non-blank lines of a prompt file (as promptx reads it: UTF-8, lines end at \\n only)."""
    return sum(1 for line in content.decode("utf-8-sig", "replace").split("\n") if line.strip())


def _output_rows(text: str) -> list[dict]:
    rows = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        row = json.loads(line)
        assert isinstance(row, dict) and "id" in row, line[:200]
        assert ("error" in row) != ("text" in row), f"a line is a result or an error: {line[:200]}"
        rows.append(row)
    return rows


def _check_batch(case: Case, code: int, stdout: str, stderr: str, out: Path | None) -> None:
    expected: BatchInvariants = case.expected
    assert "Traceback" not in stdout + stderr, stderr[-2000:]
    assert "internal error" not in stderr, stderr[-1000:]
    assert code in expected.exits, (
        f"exit {code}, expected one of {expected.exits}; stderr: {stderr[-600:]!r}"
    )
    lines = [line for line in stderr.splitlines() if line.strip()]
    if table.BATCH_TIGHT and code != 2:
        assert (code == 1) == expected.stops, (
            f"exit {code}: the run {'should' if expected.stops else 'should not'} stop"
        )
    if code == 1:  # the run stopped: one error line that names the file or line
        assert lines and lines[-1].startswith("promptx: error:"), stderr[-600:]
        if expected.names:
            assert expected.names in lines[-1], f"{expected.names!r} not in {lines[-1]!r}"
        return
    if code == 2:
        assert "Error:" in stderr, stderr[-600:]
        return
    written = out.read_bytes().decode("utf-8") if out is not None else stdout
    rows = _output_rows(written)
    ids = [str(r["id"]) for r in rows]
    assert len(ids) == len(set(ids)), (
        f"an id written twice: {sorted(i for i in set(ids) if ids.count(i) > 1)}"
    )
    assert len(rows) == _input_lines(case.input.content), (
        f"{_input_lines(case.input.content)} input lines, {len(rows)} output lines"
    )
    if table.BATCH_TIGHT:
        errors = [r for r in rows if "error" in r]
        assert len(errors) == expected.error_rows, errors
        for row in errors:
            assert set(row) == {"id", "error"} and set(row["error"]) >= {"type", "message"}, row
            assert row["error"]["message"], row
        assert code == (3 if expected.error_rows else 0), (
            f"exit {code} with {len(errors)} error lines"
        )


@pytest.mark.parametrize("case", _params(BATCH))
def test_batch(case: Case, assets, tmp_path):
    spec = case.input
    for name in ("ok.png", "truncated.png"):
        shutil.copy(assets / name, tmp_path / name)
    (tmp_path / "a-dir").mkdir()
    source = tmp_path / spec.name
    source.write_bytes(spec.content)
    out = None if spec.output is None else (source if spec.same_output else tmp_path / spec.output)
    if spec.existing_output is not None:
        out.write_bytes(spec.existing_output)
    args = ["enhance", "--file", str(source), *spec.args] + (
        ["--output", str(out)] if out is not None else []
    )
    for _ in range(spec.runs):
        result = within(DEADLINE_S, lambda: CliRunner().invoke(main, args))
        escaped = result.exception if not isinstance(result.exception, SystemExit) else None
        assert escaped is None, f"an exception escaped the CLI: {type(escaped).__name__}: {escaped}"
        _check_batch(
            case,
            result.exit_code,
            result.stdout,
            result.stderr,
            None if out is None or out.is_dir() else out,
        )


# ------------------------------------------------------------------------------------ HTTP


@pytest.fixture(scope="module")
def server(model_dir):
    pytest.importorskip("fastapi")
    from tests.promptx.servers import ServerProcess

    process = ServerProcess(
        "--dtype",
        "float32",
        "--max-prompt-chars",
        str(table.SERVER_MAX_PROMPT_CHARS),
        "--max-body-bytes",
        str(table.SERVER_MAX_BODY_BYTES),
    ).start()
    yield process
    assert process.stop() == 0, process.output()[-3000:]


def _send(server, request) -> httpx.Response:
    headers = {"content-type": request.content_type} if request.content_type else {}
    try:
        return httpx.request(
            request.method,
            server.url + request.path,
            content=request.body,
            headers=headers,
            timeout=DEADLINE_S,
        )
    except httpx.TimeoutException:
        pytest.fail(f"hang: {request.method} {request.path} had no answer within {DEADLINE_S} s")


def _check_http(expected: Http, response: httpx.Response) -> None:
    status = response.status_code
    assert status < 500, f"{status} (a server error): {response.text[:300]!r}"
    assert status == expected.status, (
        f"{status}, expected {expected.status}: {response.text[:300]!r}"
    )
    try:
        payload = response.json()
    except ValueError:
        raise AssertionError(f"the answer is not JSON: {response.text[:300]!r}") from None
    if status >= 400:
        assert isinstance(payload, dict) and set(payload) == {"error"}, (
            f"not the error shape: {payload!r:.300}"
        )
        error = payload["error"]
        assert (
            isinstance(error.get("type"), str)
            and isinstance(error.get("message"), str)
            and error["message"]
        ), error
        if expected.type is not None:
            assert error["type"] == expected.type, (
                f"type {error['type']!r}, expected {expected.type!r}: {error}"
            )
        assert expected.needle in error["message"], (
            f"{expected.needle!r} not in {error['message']!r}"
        )
    elif expected.ok is not None:
        _check_ok_fields(
            expected.ok,
            payload["text"],
            payload["skipped"],
            payload["language"],
            payload["original_prompt"],
        )


@pytest.mark.parametrize("case", _params(HTTP))
def test_http(case: Case, server):
    response = _send(server, case.input)
    try:
        check(case.expected, lambda e: _check_http(e, response))
    finally:
        assert httpx.get(server.url + "/health", timeout=DEADLINE_S).status_code == 200, (
            "the server stopped serving"
        )


def test_http_concurrent_requests_are_neither_lost_nor_crossed(server):
    """48 requests from 12 threads, good and bad interleaved: each answer is about its own
    prompt."""
    goods = [
        f"a {colour} {thing} by the sea"
        for colour in ("red", "blue", "grey")
        for thing in ("car", "boat", "kite", "tram", "fox", "owl", "bell", "lamp")
    ]
    bads = [
        {"seed": True},
        {"force": "yes"},
        {"temperature": "hot"},
        {"target": "nosuch"},
        {"colour": "red"},
        {"strength": "heavy"},
    ]
    jobs = []  # (body, good)
    for i, prompt in enumerate(goods):
        jobs.append(
            ({"prompt": prompt, "seed": i, "target": ("video", "sdxl", "image")[i % 3]}, True)
        )
        jobs.append(({"prompt": prompt, **bads[i % len(bads)]}, False))

    def one(job):
        return httpx.post(server.url + "/v1/enhance", json=job[0], timeout=DEADLINE_S)

    with ThreadPoolExecutor(12) as pool:
        answers = within(DEADLINE_S * 2, lambda: list(pool.map(one, jobs)))
    assert len(answers) == len(jobs) == 48
    for (body, good), answer in zip(jobs, answers):
        if not good:
            assert answer.status_code == 400 and set(answer.json()) == {"error"}, (
                body,
                answer.text[:200],
            )
            continue
        assert answer.status_code == 200, (body, answer.text[:200])
        result = answer.json()
        assert result["original_prompt"] == body["prompt"] and _starts_with(
            result["text"], body["prompt"]
        ), (body, result["text"][:120])
    assert httpx.get(server.url + "/health", timeout=DEADLINE_S).status_code == 200
