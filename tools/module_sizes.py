"""Lines of code per module of the package, docstrings, comments and blank lines excluded.

Usage::

    python tools/module_sizes.py [--limit 400] [--top 15] [PACKAGE_DIR]

Prints the largest modules as a table and exits with status 1 when one is over ``--limit``
(the project's rule: modules stay under about 400 lines of code).
"""

from __future__ import annotations

import argparse
import ast
import io
import sys
import tokenize
from pathlib import Path


def docstring_lines(tree):
    """Line numbers taken by the docstrings of the module, its classes and functions."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                    first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def lines_of_code(source):
    """Lines holding a token other than a comment, outside docstrings."""
    skipped = docstring_lines(ast.parse(source))
    code = set()
    ignored = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
               tokenize.ENCODING, tokenize.ENDMARKER}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in ignored:
            code.update(line for line in range(token.start[0], token.end[0] + 1) if line not in skipped)
    return len(code)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?", default=str(Path(__file__).resolve().parents[1] / "sklearn_ltr"))
    parser.add_argument("--limit", type=int, default=400)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    root = Path(args.package)
    sizes = sorted(((lines_of_code(path.read_text()), str(path.relative_to(root.parent)))
                    for path in root.rglob("*.py")), reverse=True)
    print(f"{'module':<52} {'code lines':>10}")
    for size, name in sizes[:args.top]:
        print(f"{name:<52} {size:>10}{'  OVER' if size > args.limit else ''}")
    over = [name for size, name in sizes if size > args.limit]
    print(f"{len(sizes)} modules, {sum(size for size, _ in sizes)} lines of code; largest {sizes[0][0]}; "
          f"{len(over)} over {args.limit}.")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
