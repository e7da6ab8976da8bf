"""Check that imports run down the layers (ARCHITECTURE.md), that promptx uses the engine through
its public names only (``engine``, ``engine.bench``), and that no modules import each other (a
cycle, even one closed by an import inside a function; ``if TYPE_CHECKING:`` imports do not count):
exit 1 and list every import that runs up and every cycle.

Every import counts, those inside functions too. Usage: ``python tools/check_layers.py [ROOT]``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

# position of each top-level unit; a unit may import units with a lower number only
LAYERS = {
    "engine": {
        "progress": 0,
        "runtime": 1,
        "weights": 2,
        "decode": 3,
        "speculative": 4,
        "planning": 5,
        "generator": 6,
        "bench": 7,
        "training": 7,
    },
    "promptx": {
        "errors": 0,
        "data_cache": 0,
        "text": 1,
        "profiles": 2,
        "quality": 3,
        "images": 3,
        "prompt_files": 3,
        "hub_cache": 3,
        "tuning_pairs": 3,
        "image_url": 3,
        "options": 3,
        "languages": 3,
        "request": 4,
        "draft_prompts": 5,
        "result": 4,
        "models": 4,
        "compose": 4,
        "backends": 5,
        "structured": 5,
        "tune": 6,
        "enhancer": 6,
        "batch_run": 7,
        "api": 7,
        "latency": 7,
        "serve": 8,
        "diffusers": 8,
        "comfyui": 8,
        "ray": 8,
        "cli": 9,
        "__main__": 10,
        "__init__": 10,
    },
}
# the engine modules promptx may import from: its public names (engine/__init__.py) and the bench's
ENGINE_SEAM = ("engine", "engine.bench")


def _module(root: Path, path: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def _imported(root: Path, path: Path, node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level == 0:
        return [node.module] if node.module else []
    package = _module(root, path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    if node.module:
        return [".".join(base + [node.module])]
    return [".".join(base + [alias.name]) for alias in node.names]


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def violations(root: Path) -> list[str]:
    """One line per import that runs up a layer, sideways between engine units, or from engine into
    promptx."""
    found = []
    for top, layers in LAYERS.items():
        for path in sorted((root / top).rglob("*.py")):
            module = _module(root, path)
            mine = _unit(module)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                for target in _imported(root, path, node):
                    head = target.split(".")[0]
                    if top == "engine" and head == "promptx":
                        found.append(f"{module} imports {target}: engine never imports promptx")
                        continue
                    if top == "promptx" and head == "engine" and target not in ENGINE_SEAM:
                        found.append(
                            f"{module} imports {target}: promptx uses the engine through "
                            f"{' and '.join(ENGINE_SEAM)} only (add the name to engine/__init__.py)"
                        )
                        continue
                    theirs = _unit(target)
                    if head != top or theirs == mine:
                        continue
                    if mine not in layers or theirs not in layers:
                        found.append(
                            f"{module} imports {target}: {mine if mine not in layers else theirs} "
                            "has no layer (add it to tools/check_layers.py and ARCHITECTURE.md)"
                        )
                    elif layers[theirs] >= layers[mine] and not (
                        top == "promptx" and layers[theirs] == layers[mine]
                    ):
                        found.append(f"{module} imports {target}: {theirs} is not below {mine}")
    return found


def _runtime_imports(tree: ast.AST):
    """The import nodes of a module that run when it runs (not those under ``if
    TYPE_CHECKING:``)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for child in node.body for n in ast.walk(child))
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skipped
    ]


def cycles(root: Path) -> list[str]:
    """One line per cycle of modules importing each other (at module level or inside functions:
    an import inside a function that closes a cycle only hides it)."""
    graph: dict[str, set[str]] = {}
    modules = {_module(root, p) for top in LAYERS for p in (root / top).rglob("*.py")}
    for top in LAYERS:
        for path in sorted((root / top).rglob("*.py")):
            module = _module(root, path)
            edges = graph.setdefault(module, set())
            for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
                for target in _imported(root, path, node):
                    while target and target not in modules:
                        target = target.rpartition(".")[0]
                    if target and target != module and not module.startswith(target + "."):
                        edges.add(target)
    return [
        " -> ".join(cycle + [cycle[0]]) for cycle in _strong_components(graph) if len(cycle) > 1
    ]


def _strong_components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, each sorted, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    found = violations(root)
    loops = cycles(root)
    for line in found:
        print(line)
    for line in loops:
        print(f"import cycle: {line}")
    print(f"{len(found)} import(s) against the layers, {len(loops)} import cycle(s)")
    return 1 if found or loops else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
