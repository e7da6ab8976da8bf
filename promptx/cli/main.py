"""The ``promptx`` command line: enhance prompts, list templates and models.

Errors print one line (``promptx: error: ...``) and exit non-zero; ``--debug``
shows the traceback instead.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
from pathlib import Path

import click
from click.core import ParameterSource

from ..errors import InvalidInputError, PromptxError
from ..options import HTTP, travelling
from .common import MODEL_HELP
from .per_call import flag_name, per_call_option

EXIT_ERROR, EXIT_USAGE = 1, 2


class LazyGroup(click.Group):
    """A group whose ``lazy`` subcommands ("name": "module:attribute") are imported only when
    used, so that ``promptx enhance`` does not import the bench, draft or eval code."""

    def __init__(self, *args, lazy: dict[str, str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, name: str):
        if name in self.lazy and name not in self.commands:
            module, _, attribute = self.lazy[name].partition(":")
            self.add_command(getattr(importlib.import_module(module, __package__), attribute), name)
        return super().get_command(ctx, name)


class PromptxGroup(LazyGroup):
    """Turns promptx errors, interrupts and unexpected failures into one-line messages."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except PromptxError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"promptx: error: {exc}", err=True)
            ctx.exit(EXIT_ERROR)
        except KeyboardInterrupt:
            click.echo("promptx: interrupted", err=True)
            ctx.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except Exception as exc:  # a bug: still one line, with the way to see more
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(
                f"promptx: internal error: {type(exc).__name__}: {exc} "
                "(run with --debug for the traceback)",
                err=True,
            )
            ctx.exit(EXIT_ERROR)


@click.group(
    cls=PromptxGroup,
    lazy={
        "bench": ".bench:bench",
        "eval": ".eval:eval_command",
        "calibrate": ".calibrate:calibrate",
        "draft": ".draft:draft",
        "tune": ".tune:tune_command",
        "serve": ".serve:serve_command",
    },
)
@click.version_option(package_name="promptx")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Enhance prompts for image and video generators, offline."""
    ctx.obj = {"debug": debug}


def run() -> None:
    """The console entry point: ``main``, then end the process without interpreter teardown.

    Tearing down after a model was loaded (freeing hundreds of MB of tensors one by one,
    unwinding torch's module state) takes most of a second, and the OS reclaims all of it
    at once anyway. Output streams and logging are flushed first; if a non-daemon thread
    is still running, the process exits the normal way so that it can finish.
    """
    try:
        main()
        status = 0
    except SystemExit as done:
        status = _exit_status(done.code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the reader went away, or the stream is closed
            pass
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    if any(
        t.is_alive() and not t.daemon
        for t in threading.enumerate()
        if t is not threading.main_thread()
    ):
        sys.exit(status)
    os._exit(status)


def _exit_status(code: object) -> int:
    """The process status ``sys.exit(code)`` would give."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _read_prompt(prompt: str | None) -> str:
    """The one prompt to enhance: the argument, or stdin with '-' (or when piped)."""
    if prompt == "-" or (prompt is None and not sys.stdin.isatty()):
        return _stdin_text().strip()
    if prompt is None:
        raise InvalidInputError(
            "give a PROMPT argument, '-' or --file (see promptx enhance --help)"
        )
    return prompt


def _stdin_text() -> str:
    """Standard input as UTF-8 text (a byte-order mark dropped); other bytes are a typed error."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream without bytes (a test's StringIO)
        return sys.stdin.read()
    try:
        return stream.read().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"standard input is not UTF-8 text (byte {exc.start}: "
            f"{exc.object[exc.start : exc.start + 1]!r}); convert it, e.g. with iconv"
        ) from None


@main.command()
@click.argument("prompt", required=False)
@click.option(
    "-t",
    "--target",
    default="video",
    show_default=True,
    help="Target profile or alias (see 'promptx templates list').",
)
@click.option(
    "-f",
    "--file",
    "file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A batch: one prompt per line, or JSON lines with prompt (and id, target, image, "
    "caption); prints one JSON line per row.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="With --file: write the JSON lines here, resumably (a rerun skips the rows already done).",
)
@per_call_option("image", type=click.Path(path_type=Path, dir_okay=False))
@per_call_option("caption")
@click.option("--model", help=MODEL_HELP)
@per_call_option("seed")
@per_call_option("temperature")
@per_call_option("max_new_tokens")
@per_call_option("style")
@per_call_option("language")
@per_call_option("system_prompt")
@click.option(
    "--templates-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Extra template directory.",
)
@per_call_option("force")
@per_call_option("strength")
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@click.option(
    "--stream",
    is_flag=True,
    help="Show the model's words as they are generated (on stdout when it is a terminal, else on "
    "stderr); stdout ends with the final text.",
)
@click.option("--no-speculative", is_flag=True, help="Decode without speculation (for comparison).")
@click.option(
    "--drafter",
    type=click.Path(path_type=Path),
    help="Drafter checkpoint for speculative decoding.",
)
@click.option(
    "--planner",
    type=click.Choice(("harness", "tree")),
    default="harness",
    show_default=True,
    help="Draft tree sizing: the cost-aware harness or the drafter's fixed tree.",
)
@click.option(
    "--dtype",
    default="auto",
    show_default=True,
    help="Model precision: auto (the fastest here), float32, bfloat16, float16, int4 (4-bit "
    "weights, bf16 activations, speculation kept; the auto choice on CPUs with native bf16 for "
    "models whose weights are 4-bit already, like the embedded one), mixed (fp32 prompt, bf16 "
    "token steps; the auto choice on CPUs without native bf16) or int8 (lower quality). mixed and "
    "int8 decode without speculation: use float32 for it on such CPUs.",
)
@click.option(
    "--backend", help="embedded (default), openai, or a backend named in the promptx config file."
)
@click.option(
    "--base-url",
    help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (implies --backend "
    "openai; env PROMPTX_BASE_URL). The key comes from $PROMPTX_API_KEY.",
)
@click.option(
    "--remote-model",
    help="The server's model name (default: the first it lists; env PROMPTX_REMOTE_MODEL).",
)
@click.option(
    "--vision",
    is_flag=True,
    default=None,
    help="The remote model sees images: send i2v/i2i images to it.",
)
@click.option(
    "--encoder-tokenizer",
    type=click.Path(path_type=Path, exists=True),
    help="A tokenizer or diffusers pipeline directory: count the text-encoder budget with it "
    "exactly (default: CLIP BPE for SDXL when open_clip_torch is installed, else an estimate).",
)
@click.option(
    "--ray",
    "on_ray",
    is_flag=True,
    help="With --file: enhance on Ray (pip install 'promptx[ray]'), one model per worker.",
)
@click.option(
    "--address",
    help="With --ray: the Ray cluster to join (e.g. auto, or ray://HOST:10001); "
    "default: a local one.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --ray: how many workers (each loads the model once; the CPUs are shared out).",
)
@click.option(
    "--server",
    envvar="PROMPTX_SERVER",
    metavar="URL",
    help="A running 'promptx serve' (e.g. http://127.0.0.1:8000; env PROMPTX_SERVER) to send the "
    "prompt to, with no model loaded here; if none answers, the prompt is enhanced here. Options "
    "that run here only (--file, --model, --dtype, --drafter, --backend, ...) are an error with "
    "--server and skip $PROMPTX_SERVER. The key: $PROMPTX_SERVE_API_KEY.",
)
@click.pass_context
def enhance(
    ctx,
    prompt,
    target,
    file,
    output,
    model,
    templates_dir,
    as_json,
    stream,
    no_speculative,
    drafter,
    planner,
    dtype,
    backend,
    base_url,
    remote_model,
    vision,
    encoder_tokenizer,
    on_ray,
    address,
    workers,
    server,
    **per_call,
) -> None:
    """Enhance PROMPT (or stdin with '-', or each line of --file)."""
    # per_call: the flags of the per-call options (promptx.options.EnhanceOptions), by option name
    _check_batch_flags(prompt, file, output, stream, on_ray, address, workers)
    text = None
    if server:
        here = _flags_that_run_here(
            per_call,
            file=file,
            model=model,
            templates_dir=templates_dir,
            no_speculative=no_speculative,
            drafter=drafter,
            planner=planner,
            dtype=dtype,
            backend=backend,
            base_url=base_url,
            remote_model=remote_model,
            vision=vision,
            encoder_tokenizer=encoder_tokenizer,
        )
        text, result = _try_server(ctx, server, prompt, target, per_call, here)
        if result is not None:
            _show(result, as_json=as_json, shown=False)
            return
    system_prompt = per_call["system_prompt"]  # the Enhancer's: every call of this command
    options = {name: value for name, value in per_call.items() if name != "system_prompt"}
    if on_ray:
        if (
            backend not in (None, "embedded")
            or base_url
            or options["image"]
            or encoder_tokenizer
            or system_prompt
        ):
            raise InvalidInputError(
                "--ray runs the embedded model on each worker; --backend, --base-url, --image, "
                "--encoder-tokenizer and --system-prompt are not supported with it (images go "
                "in the file's rows)"
            )
        _enhance_file_on_ray(
            file,
            output,
            target,
            address,
            workers,
            dict(
                model=model,
                dtype=None if dtype == "auto" else dtype,
                drafter=drafter,
                templates_dir=templates_dir,
            ),
            {
                **{name: value for name, value in options.items() if name != "image"},
                "speculative": False if no_speculative else None,
            },
        )
        return
    enhancer = _local_enhancer(
        model=model,
        backend=backend,
        base_url=base_url,
        remote_model=remote_model,
        vision=vision,
        templates_dir=templates_dir,
        system_prompt=system_prompt,
        no_speculative=no_speculative,
        drafter=drafter,
        planner=planner,
        dtype=dtype,
        encoder_tokenizer=encoder_tokenizer,
    )
    if file is not None:
        _enhance_file(enhancer, file, output, target, options)
        return
    _enhance_one(
        enhancer,
        _read_prompt(prompt) if text is None else text,
        target,
        options,
        stream=stream,
        as_json=as_json,
    )


def _check_batch_flags(prompt, file, output, stream, on_ray, address, workers) -> None:
    """Refuse the flags of a batch without --file, and --file with a prompt or --stream."""
    if file is not None and (stream or prompt is not None):
        raise InvalidInputError(
            "--file enhances the file's prompts: give no PROMPT and no --stream"
        )
    if output is not None and file is None:
        raise InvalidInputError("--output writes a batch: use it with --file")
    if (on_ray or address or workers != 1) and file is None:
        raise InvalidInputError(
            "--ray, --address and --workers enhance a batch: use them with --file"
        )
    if (address or workers != 1) and not on_ray:
        raise InvalidInputError("--address and --workers are options of --ray")


def _flags_that_run_here(
    per_call: dict,
    *,
    file,
    model,
    templates_dir,
    no_speculative,
    drafter,
    planner,
    dtype,
    backend,
    base_url,
    remote_model,
    vision,
    encoder_tokenizer,
) -> list[str]:
    """The flags given that a ``promptx serve`` does not take: the per-call options that do not
    travel over HTTP, and those of a batch or of this process's model."""
    given = {
        "--file": file is not None,
        "--model": model,
        **{
            flag_name(name): value
            for name, value in per_call.items()
            if name not in travelling(HTTP)
        },
        "--templates-dir": templates_dir,
        "--no-speculative": no_speculative,
        "--drafter": drafter,
        "--planner": planner != "harness",
        "--dtype": dtype != "auto",
        "--backend": backend,
        "--base-url": base_url,
        "--remote-model": remote_model,
        "--vision": vision,
        "--encoder-tokenizer": encoder_tokenizer,
    }
    return [flag for flag, value in given.items() if value]


def _try_server(ctx, server: str, prompt: str | None, target: str, per_call: dict, here: list[str]):
    """(the prompt, the result of the ``promptx serve`` at ``server``): (None, None) where flags
    that run ``here`` skip a server from $PROMPTX_SERVER, (the prompt, None) where none answers
    there. Flags that run here with ``--server`` on the command line are an error."""
    explicit = ctx.get_parameter_source("server") is ParameterSource.COMMANDLINE
    if here and explicit:
        raise InvalidInputError(
            f"--server sends one prompt to a running promptx serve, which uses its own "
            f"model and settings; {', '.join(here)} run{'s' if len(here) == 1 else ''} "
            "in this process: drop one or the other"
        )
    if here:  # $PROMPTX_SERVER is skipped silently for options that run here
        return None, None
    text = _read_prompt(prompt)
    sent = {name: value for name, value in per_call.items() if name in travelling(HTTP)}
    return text, _on_server(server, text, target, sent, explicit=explicit)


def _local_enhancer(
    *,
    model,
    backend,
    base_url,
    remote_model,
    vision,
    templates_dir,
    system_prompt,
    no_speculative,
    drafter,
    planner,
    dtype,
    encoder_tokenizer,
):
    """The Enhancer of an in-process run, after refusing flags of the other kind of backend."""
    from ..enhancer import Enhancer

    remote = backend not in (None, "embedded") or base_url is not None
    if remote and (model or drafter):
        raise InvalidInputError(
            "--model and --drafter are for the embedded backend; name the server's model "
            "with --remote-model"
        )
    if not remote and (remote_model or vision):
        raise InvalidInputError(
            "--remote-model and --vision need a remote backend (--base-url or --backend)"
        )
    return Enhancer(
        remote_model if remote else model,
        backend=backend,
        base_url=base_url,
        vision=vision,
        templates_dir=templates_dir,
        system_prompt=system_prompt,
        speculative=not no_speculative,
        drafter=drafter,
        planner=planner,
        dtype=None if dtype == "auto" else dtype,
        encoder_tokenizer=encoder_tokenizer,
    )


def _enhance_one(
    enhancer, text: str, target: str, options: dict, *, stream: bool, as_json: bool
) -> None:
    """Enhance one prompt in this process and print it (streamed as it is written,
    with --stream)."""
    if stream:
        result, shown = _streamed(
            enhancer.stream(text, target, **options), on_stdout=not as_json and sys.stdout.isatty()
        )
    else:
        result, shown = enhancer.enhance(text, target, **options), False
    _show(result, as_json=as_json, shown=shown)


def _on_server(server: str, text: str, target: str, options: dict, *, explicit: bool):
    """The result of the ``promptx serve`` at ``server``, or None when none answers there (with a
    note on stderr when the user named the server on the command line). ``--stream`` is not
    forwarded: ``/v1/enhance`` answers with the whole result, before a local model would load."""
    from .forward import Unavailable, enhance_on_server, server_url

    url = server_url(server)
    try:
        return enhance_on_server(url, text, target, options)
    except Unavailable as why:
        if explicit:
            click.echo(
                f"promptx: note: no promptx serve answers at {url} ({why}); "
                "enhancing in this process",
                err=True,
            )
        return None


def _show(result, *, as_json: bool, shown: bool) -> None:
    """Print the result (its text, or JSON), then a warning for a fallback or a note for a skip."""
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    elif not shown:
        click.echo(result.text)
    if result.fallback:
        click.echo(f"promptx: warning: returned the original prompt ({result.reason})", err=True)
    elif result.skipped:
        click.echo(f"promptx: note: returned the prompt unchanged ({result.reason})", err=True)


def _streamed(stream, *, on_stdout: bool):
    """Show the deltas as they come (on stdout when it is a terminal, else on stderr) and return
    the result, and whether stdout already shows its final text. A revised stream (its attempt
    rejected, or the text cleaned) shows the final text again, after a note."""
    for delta in stream:
        if not stream.revised:
            click.echo(delta, nl=False, err=not on_stdout)
    click.echo(err=not on_stdout)
    if on_stdout and stream.revised:
        click.echo("promptx: note: the streamed text was revised; the final text:", err=True)
    return stream.result, on_stdout and not stream.revised


def _enhance_file(enhancer, file: Path, output: Path | None, target: str, options: dict) -> None:
    """Every row of ``file``, as JSON lines on stdout or resumably into ``output``."""
    from ..batch_run import check_run, run_batch

    check_run(enhancer.profile, target, options)
    _run_rows(
        file,
        output,
        "enhancing",
        lambda rows, log, emit, on_row: run_batch(
            enhancer, rows, target, options, log=log, emit=emit, on_row=on_row
        ),
    )


def _enhance_file_on_ray(
    file: Path,
    output: Path | None,
    target: str,
    address: str | None,
    workers: int,
    enhancer_options: dict,
    options: dict,
) -> None:
    """``_enhance_file`` on Ray: the same rows, lines and resuming, one model per worker."""
    from ..ray import check_target, enhance_file_on_ray, require_ray

    require_ray()
    chosen = {k: v for k, v in enhancer_options.items() if v}
    check_target(target, options, chosen)
    _run_rows(
        file,
        output,
        f"enhancing on Ray ({workers} worker{'s' if workers > 1 else ''})",
        lambda rows, log, emit, on_row: enhance_file_on_ray(
            rows,
            log,
            target,
            options,
            address=address,
            workers=workers,
            enhancer_options=chosen,
            emit=emit,
            on_row=on_row,
        ),
    )


def _run_rows(file: Path, output: Path | None, label: str, run) -> None:
    """Read ``file``'s rows and ``run(rows, log, emit, on_row)`` them with a progress bar; on
    Ctrl-C, say how many rows are safe in ``output``; at the end, what was done, and exit with
    ``EXIT_ROWS_FAILED`` when some rows were written as error lines."""
    from ..batch_run import EXIT_ROWS_FAILED, ResultLog, describe, pending, read_rows

    rows = read_rows(file)
    log = ResultLog(output, source=file) if output is not None else None
    with click.progressbar(length=len(pending(rows, log)), label=label, file=sys.stderr) as bar:
        try:
            summary = run(rows, log, None if log else click.echo, lambda: bar.update(1))
        except KeyboardInterrupt:
            if log is not None:
                written = sum(r.id in log.done for r in rows)
                click.echo(
                    f"\npromptx: interrupted; {written} of {len(rows)} rows are "
                    f"in {output}: rerun the same command to resume",
                    err=True,
                )
            raise
    click.echo(f"promptx: {describe(summary, output)}", err=True)
    if summary.failed:
        raise click.exceptions.Exit(EXIT_ROWS_FAILED)


@main.group()
def templates() -> None:
    """List and show target profiles."""


@templates.command("list")
@click.option("--templates-dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--json", "as_json", is_flag=True)
def templates_list(templates_dir, as_json) -> None:
    """List target profiles with their task and aliases."""
    from ..profiles.registry import registry_for

    registry = registry_for(templates_dir)
    rows = [
        {"name": p.name, "task": p.task, "generator": p.generator, "aliases": p.aliases}
        for p in registry.profiles()
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        aliases = f"  (aliases: {', '.join(row['aliases'])})" if row["aliases"] else ""
        click.echo(f"{row['name']:<16} {row['task']:<4} {row['generator']}{aliases}")


@templates.command("show")
@click.argument("name")
@click.option("--templates-dir", type=click.Path(path_type=Path, file_okay=False))
def templates_show(name, templates_dir) -> None:
    """Show one profile as JSON (NAME may be an alias)."""
    from ..profiles.registry import registry_for

    click.echo(registry_for(templates_dir).get(name).model_dump_json(indent=2))


@main.group(
    cls=LazyGroup, invoke_without_command=True, lazy={"export": ".model_export:models_export"}
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def models(ctx, as_json) -> None:
    """Show the available models and whether they are prepared in the cache (``models export``
    writes the prepared model out for other engines)."""
    if ctx.invoked_subcommand is not None:
        return
    from ..models import cache_root, list_models

    rows = list_models()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"cache: {cache_root()}")
    for row in rows:
        state = "cached" if row["cached"] else "not prepared yet"
        mark = " (default)" if row.get("default") else ""
        click.echo(
            f"{row['name']}{mark}: {state}" + (f" — {row['error']}" if row.get("error") else "")
        )


if __name__ == "__main__":  # pragma: no cover
    main()
