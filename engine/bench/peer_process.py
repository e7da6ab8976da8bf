"""Each bench peer in its own process, so that one that crashes or hangs is reported, not fatal.

A native library can kill the process that loads it (llama.cpp built for
another CPU dies with SIGILL), and a peer can hang. ``PeerProcess`` builds its
peer (``engine.bench.peers.make_peer``) in a child process started with
``spawn`` and asks it for one timed decode at a time over a pipe (timing
happens in the child, so the pipe costs nothing measured). A peer that dies,
raises, or answers nothing within ``timeout_s`` is marked ``crashed`` with the
reason and asked nothing more. ``make_peers`` starts one per name (llama.cpp killed by
SIGILL while loading is started once more without its extra buffer types: AMX, repacking).

Not here: the peers themselves (``engine.bench.peers``), the report.
"""

from __future__ import annotations

import multiprocessing
import signal
from dataclasses import replace
from typing import Callable, Sequence

from ..decode.sampling import SamplingParams
from .peers import Peer, PeerSpec, PeerUnavailable, check_available, make_peer
from .sample import Sample

LOAD_TIMEOUT_S = 900.0  # loading a model in the child (a cold transformers import included)
DECODE_TIMEOUT_S = 900.0  # one decode


class PeerCrashed(RuntimeError):
    """The peer's process died, raised, or did not answer in time."""


class PeerProcess:
    """A peer living in a child process; ``decode`` returns the child's timed ``Sample``.
    ``note``: how it had to be set up, when not as asked (None: as asked)."""

    def __init__(
        self,
        spec: PeerSpec,
        factory: Callable[[PeerSpec], Peer] = make_peer,
        load_timeout_s: float = LOAD_TIMEOUT_S,
        timeout_s: float = DECODE_TIMEOUT_S,
    ) -> None:
        context = multiprocessing.get_context("spawn")
        self.name, self.crashed, self.timeout_s, self.note = spec.name, None, timeout_s, None
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_serve,
            args=(child, factory, spec),
            daemon=True,
            name=f"promptx-peer-{spec.name}",
        )
        self._process.start()
        child.close()
        try:
            kind, message = self._receive(load_timeout_s)
        except PeerCrashed as exc:
            raise PeerUnavailable(f"crashed while loading: {exc}") from None
        if kind == "error":
            self.close()
            raise PeerUnavailable(message)

    def decode(self, prompt_ids: Sequence[int], params: SamplingParams) -> Sample | None:
        """One timed decode, or None once the peer has crashed (``crashed`` says why)."""
        if self.crashed is not None:
            return None
        try:
            self._conn.send((list(prompt_ids), params))
            kind, value = self._receive(self.timeout_s)
            if kind == "error":
                raise PeerCrashed(value)
        except (PeerCrashed, OSError) as exc:
            self.crashed = str(exc)
            self.close()
            return None
        return value

    def close(self) -> None:
        """Stop the child (politely, then by force)."""
        if self._process.is_alive():
            try:
                self._conn.send(None)
            except OSError:
                pass
            self._process.join(5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        self._conn.close()

    def _receive(self, timeout_s: float) -> tuple[str, object]:
        if not self._conn.poll(timeout_s):
            self._process.kill()
            self._process.join(5)
            raise PeerCrashed(f"no answer in {timeout_s:.0f} s")
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            self._process.join(5)
            raise PeerCrashed(exit_reason(self._process.exitcode)) from None


def exit_reason(code: int | None) -> str:
    """'killed by SIGILL', 'exited with code 3', ... for a child's exit code."""
    if code is None:
        return "the process stopped answering"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def _serve(conn, factory: Callable[[PeerSpec], Peer], spec: PeerSpec) -> None:
    """The child: build the peer, then answer decode requests until told to stop (None)."""
    try:
        peer = factory(spec)
    except Exception as exc:  # reported to the parent as the reason it is skipped
        conn.send(
            (
                "error",
                str(exc) if isinstance(exc, PeerUnavailable) else f"{type(exc).__name__}: {exc}",
            )
        )
        return
    conn.send(("ready", None))
    while (request := conn.recv()) is not None:
        try:
            conn.send(("sample", peer.decode(*request)))
        except Exception as exc:  # a failing decode: the parent marks the peer crashed
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
            return


def make_peers(
    names: Sequence[str],
    generator,
    model_dir,
    gguf_path=None,
    factory: Callable[[PeerSpec], Peer] = make_peer,
    **spec_options,
) -> tuple[list[PeerProcess], dict]:
    """A ``PeerProcess`` per name; unavailable ones are reported as ``{"available": False,
    "skipped": why}`` (``PeerError`` for an unknown name). ``spec_options``: ``PeerSpec.of``'s
    keywords (``ignore_eos``, ``keep_prefix``)."""
    peers, skipped = [], {}
    for name in names:
        spec = PeerSpec.of(name, generator, model_dir, gguf_path, **spec_options)
        try:
            check_available(spec)
            peers.append(_started(spec, factory))
        except PeerUnavailable as exc:
            skipped[name] = {"available": False, "skipped": str(exc)}
    return peers, skipped


EXTRA_BUFFERS_NOTE = (
    "llama.cpp died of {why} with its extra buffer types (AMX, weight repacking) on this machine; "
    "it runs without them"
)


def _started(spec: PeerSpec, factory: Callable[[PeerSpec], Peer]) -> PeerProcess:
    """The peer's process; llama.cpp killed by SIGILL while loading (its AMX kernels: see
    ``LlamaCppPeer``) is started again without its extra buffer types, and says so (``note``)."""
    try:
        return PeerProcess(spec, factory)
    except PeerUnavailable as exc:
        if spec.name != "llamacpp" or not spec.extra_buffers or "SIGILL" not in str(exc):
            raise
        peer = PeerProcess(replace(spec, extra_buffers=False), factory)
        peer.note = EXTRA_BUFFERS_NOTE.format(why="SIGILL")
        return peer


def close_peers(peers: Sequence[PeerProcess]) -> None:
    for peer in peers:
        peer.close()
