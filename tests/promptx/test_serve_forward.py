"""``promptx enhance`` through a running ``promptx serve`` (``$PROMPTX_SERVER`` / ``--server``):
real processes on loopback, no mocks. The forwarded answer equals the in-process one, the
forwarding process never imports torch, a server that is not there is a quick in-process
fallback, and a server's error is the in-process error line and status."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest
from PIL import Image

from tests.promptx.servers import ROOT, ServerProcess, free_port

pytestmark = pytest.mark.slow
pytest.importorskip("fastapi")

KEY = "forward-test-key-not-a-secret"
# one torch thread per process: the server and an in-process run share this 2-core machine, where a
# second thread mostly waits for a core (a full decode then took minutes instead of seconds)
THREADS = {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
FOX = ["a red fox in snow", "--seed", "1"]


@pytest.fixture(scope="module")
def server(model_dir):
    """A keyed server in float32, the precision the in-process runs it is compared with are given
    (as in test_serve.py: the converted float32 model is read-only, where the int4 file in the
    shared cache may be rewritten by other work while a test runs)."""
    process = ServerProcess("--api-key", KEY, "--dtype", "float32", env=THREADS).start()
    yield process
    assert process.stop() == 0, process.output()


def _env(server_url: str | None, *, key: str | None = KEY) -> dict:
    env = {
        k: v for k, v in os.environ.items() if k not in ("PROMPTX_SERVER", "PROMPTX_SERVE_API_KEY")
    }
    env.update(THREADS)
    if server_url is not None:
        env["PROMPTX_SERVER"] = server_url
    if key is not None:
        env["PROMPTX_SERVE_API_KEY"] = key
    return env


def enhance(
    *args: str, server: str | None = None, key: str | None = KEY
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "promptx", "enhance", *args],
        cwd=ROOT,
        env=_env(server, key=key),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _requests(server: ServerProcess) -> int:
    return server.output().count('"POST /v1/enhance"')


def test_light_answer_and_json_equal_in_process(server, tmp_path):
    before = _requests(server)
    remote = enhance(*FOX, "--strength", "light", "--json", server=server.url)
    local = enhance(*FOX, "--strength", "light", "--json")
    assert remote.returncode == local.returncode == 0, remote.stderr + local.stderr
    assert _requests(server) == before + 1 and remote.stderr == "" == local.stderr
    remote_json, local_json = json.loads(remote.stdout), json.loads(local.stdout)
    assert remote_json["text"].startswith("A red fox in snow.")
    remote_stats, local_stats = remote_json.pop("stats"), local_json.pop("stats")
    assert remote_json == local_json and remote_stats.keys() == local_stats.keys()
    timeless = [
        [line for line in done.stdout.splitlines() if '"latency_s"' not in line]
        for done in (remote, local)
    ]
    assert timeless[0] == timeless[1]  # the very same JSON text, but for the time taken
    streamed = enhance(*FOX, "--strength", "light", "--stream", server=server.url)  # sent whole
    assert (streamed.stdout, streamed.stderr) == (enhance(*FOX, "--strength", "light").stdout, "")
    assert _requests(server) == before + 2
    # an image goes as base64 and gives the in-process text; a missing one, the in-process error
    image = tmp_path / "beach.png"
    Image.new("RGB", (96, 64), (40, 90, 200)).save(image)
    args = [
        "the waves roll in",
        "-t",
        "i2v",
        "--image",
        str(image),
        "--seed",
        "2",
        "--strength",
        "light",
    ]
    assert enhance(*args, server=server.url).stdout == enhance(*args).stdout != ""
    missing = ["the waves roll in", "-t", "i2v", "--image", str(tmp_path / "none.png")]
    assert (enhance(*missing, server=server.url).stderr, enhance(*missing).stderr) == (
        f"promptx: error: image not found: {tmp_path / 'none.png'}\n",
    ) * 2


def test_full_strength_equals_in_process_and_never_imports_torch(server):
    """The forwarding process (the CLI's main, called in a fresh interpreter) ends without torch,
    transformers or the engine imported: a full-strength text can then only come from the server.
    It is the text, warning and status of the same command run in the process."""
    args = [*FOX, "--strength", "full", "--max-new-tokens", "24"]
    script = textwrap.dedent(f"""
        import sys
        from promptx.cli.main import main
        status = "no exit"
        try:
            main({["enhance", *args]!r})
        except SystemExit as done:
            status = done.code
        loaded = sorted(m for m in ("torch", "transformers", "engine") if m in sys.modules)
        print("STATUS", status, "LOADED", loaded)
    """)
    before = _requests(server)
    remote = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=_env(server.url),
        capture_output=True,
        text=True,
        timeout=300,
    )
    *text, last = remote.stdout.splitlines(keepends=True)
    assert last == "STATUS 0 LOADED []\n", remote.stdout + remote.stderr
    assert _requests(server) == before + 1
    local = enhance(*args, "--dtype", "float32")
    assert ("".join(text), remote.stderr, 0) == (local.stdout, local.stderr, local.returncode)
    assert local.stdout.strip()


def test_no_server_there_is_a_quick_in_process_fallback():
    from promptx.cli.forward import Unavailable, enhance_on_server

    closed = f"http://127.0.0.1:{free_port()}"
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        mute = f"http://127.0.0.1:{silent.getsockname()[1]}"
        for url, why in ((closed, "connection refused"), (mute, "no answer in time")):
            started = time.monotonic()
            with pytest.raises(Unavailable, match=why):
                enhance_on_server(url, "a fox", "video", {})
            assert time.monotonic() - started < 1.5
        local = enhance(*FOX, "--strength", "light")
        for url in (closed, mute):
            started = time.monotonic()
            quiet = enhance(*FOX, "--strength", "light", server=url)  # from $PROMPTX_SERVER: silent
            assert time.monotonic() - started < 20  # a shared 2-core machine
            assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, local.stdout, "")
        named = enhance(*FOX, "--strength", "light", "--server", closed)  # named: one note
        assert named.returncode == 0 and named.stdout == local.stdout
        assert named.stderr == (
            f"promptx: note: no promptx serve answers at {closed} (connection refused); "
            "enhancing in this process\n"
        )


def test_a_server_error_is_the_in_process_error_line(server):
    for args in (
        ["a cat", "-t", "nosuch"],
        ["a cat", "--style", "no-such-style", "--strength", "light"],
        [""],
    ):
        remote, local = enhance(*args, server=server.url), enhance(*args)
        assert local.returncode == 1 and local.stderr.startswith("promptx: error: ")
        assert (remote.returncode, remote.stdout, remote.stderr) == (
            local.returncode,
            local.stdout,
            local.stderr,
        )
        assert remote.stderr.count("\n") == 1 and "Traceback" not in remote.stderr


def test_key_and_in_process_only_options(server):
    refused = enhance("a cat", server=server.url, key="wrong-key-not-printed")
    assert (
        refused.returncode == 1
        and refused.stderr.count("\n") == 1
        and "Traceback" not in refused.stderr
    )
    assert (
        "PROMPTX_SERVE_API_KEY" in refused.stderr and "wrong-key-not-printed" not in refused.stderr
    )
    mixed = enhance(
        "a cat", "--server", server.url, "--model", "smollm2-135m-instruct", "--strength", "light"
    )
    assert mixed.returncode == 1 and "--model runs in this process" in mixed.stderr
    before = _requests(server)
    assert (
        enhance("a cat", "--dtype", "float32", "--strength", "light", server=server.url).returncode
        == 0
    )
    assert _requests(server) == before  # from the environment: run here, silently
    bad = enhance("a cat", "--server", "ftp://host/")
    assert bad.returncode == 1 and "is not a server URL" in bad.stderr
