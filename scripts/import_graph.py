"""Print the import cycles of the dtorch package: the strongly connected components of its module graph.

An edge A -> B means that A's top-level `import`/`from ... import` statements (not those inside functions or under
`if TYPE_CHECKING:`) need module B: `from B import name` and `import B` need B, `from P import sub` needs the
submodule P.sub. With `--strict`, A also needs the parent packages of every module it names (importing
`dtorch.nn.modules.conv` from outside `dtorch.nn` runs `dtorch/nn/__init__.py` first), except A's own packages,
which Python has already started when A runs. Usage:

    python scripts/import_graph.py [--strict] [--all] [package_dir]

prints each component of more than one module, largest first (with `--all`, its members too).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def module_names(root: Path) -> dict[str, Path]:
    """`dotted.name -> file` for every module of the package rooted at `root`."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Import statements that run at import time: module level, inside top-level if/try/with, not TYPE_CHECKING."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(node)
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for h in node.handlers:
                    visit(h.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.With):
                visit(node.body)

    visit(tree.body)
    return found


def edges(name: str, path: Path, modules: dict[str, Path], strict: bool = False) -> set[str]:
    """The modules of the package that module `name` (file `path`) needs at import time."""
    is_pkg = path.name == "__init__.py"
    targets: set[str] = set()
    for node in _top_level_imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
            continue
        if node.level:
            base = name.split(".") if is_pkg else name.split(".")[:-1]
            base = base[:len(base) - node.level + 1]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        for a in node.names:  # `from pkg import submodule` needs the submodule, `from mod import name` the module
            targets.add(f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod)
    out = {t for t in targets if t in modules}
    if strict:  # the parents run first, except those already started: the packages that contain `name`
        mine = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        out |= {p for t in targets for p in (".".join(t.split(".")[:i]) for i in range(1, t.count(".") + 1))
                if p in modules and p not in mine}
    out.discard(name)
    return out


def sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    result: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    result.append(sorted(comp))
    return result


def main(argv: list[str]) -> int:
    show_all, strict = "--all" in argv, "--strict" in argv
    args = [a for a in argv if a not in ("--all", "--strict")]
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "dtorch"
    modules = module_names(root)
    graph = {name: edges(name, path, modules, strict) for name, path in modules.items()}
    comps = sorted((c for c in sccs(graph) if len(c) > 1), key=len, reverse=True)
    print(f"{len(modules)} modules, {sum(map(len, graph.values()))} import edges, "
          f"{len(comps)} cycles; sizes: {[len(c) for c in comps] or 'none'}")
    for c in comps:
        print(f"- {len(c)} modules" + (":\n    " + "\n    ".join(c) if show_all else f": {', '.join(c[:6])} ..."))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
