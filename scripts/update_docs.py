"""Regenerate (or check) every output block of README.md and docs/*.md from the real command.

A block is marked by the command that produces it, on the line right before its fenced block::

    <!-- output-of: recompile-cli run sample_programs/train_loop.py --epochs 1 -->
    ```
    ...
    ```

Each command runs once, from the repository root, through ``bash -c`` with a pinned environment
(``JAX_PLATFORMS=cpu``, ``COLUMNS=100``, this interpreter's ``bin`` folder first on ``PATH``, no
GitHub variables), stdout and stderr together; paths under the repository root are shown
relative to it (tracebacks name files by absolute path).

``python scripts/update_docs.py [FILE...]`` rewrites the blocks (of every document, or of the
files named), running the commands in document order (a command may read files an earlier one
wrote); ``--check`` only compares, with timings and version numbers masked (``masked``), and
exits 1 on a difference. ``tests/integration/test_docs.py`` uses the same functions.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- output-of: (?P<command>.+?) -->\n(?P<fence>`{3,})[^\n]*\n", re.M)
# A number with a decimal point (seconds, versions such as 0.10.2, losses): masked whole.
_DECIMAL = re.compile(r"\d+(?:\.\d+)+")
_SPACES = re.compile(r"[ \t]+")
_RULE = re.compile(r"-{2,}")


@dataclass(frozen=True)
class Block:
    """One marked output block: its file, command, and the text between its fences."""

    path: Path
    command: str
    start: int  # offset of the block's text (after the opening fence line)
    end: int  # offset of the closing fence line
    text: str


def documents(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown file under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("**/*.md"))]


def blocks(path: Path) -> list[Block]:
    """The marked output blocks of one Markdown file, in order."""
    source = path.read_text(encoding="utf-8")
    found = []
    for match in MARKER.finditer(source):
        fence = match.group("fence")
        start = match.end()
        end = source.find("\n" + fence + "\n", start - 1)
        if end < 0:
            raise ValueError(f"{path}: the block of `{match.group('command')}` is not closed")
        end += 1
        found.append(Block(path, match.group("command"), start, end, source[start:end]))
    return found


def environment() -> dict[str, str]:
    """The pinned environment the commands run in."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GITHUB_", "RECOMPILE_CLI_", "PYTEST_"))}
    env.update(JAX_PLATFORMS="cpu", COLUMNS="100", LINES="50", PYTHONUNBUFFERED="1",
               NO_COLOR="1", TERM="dumb", PYTHONHASHSEED="0",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    return env


def run(command: str, root: Path = ROOT, timeout: float = 600) -> str:
    """What ``command`` prints (stdout and stderr together), ending with one newline."""
    done = subprocess.run(["bash", "-c", command], cwd=root, env=environment(), timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # A traceback names files by absolute path: show them relative to the repository root, as
    # a reader who runs the command from their checkout reads them.
    return done.stdout.replace(f"{root}{os.sep}", "").rstrip("\n") + "\n"


def masked(text: str) -> str:
    """The text with decimal numbers, runs of spaces and table rules made uniform, and the rows
    of a table ranked by measured seconds (a ``seconds`` column) in a fixed order: rows of
    close cost change places from run to run, as timings do."""
    text = _DECIMAL.sub("#", text)
    text = _RULE.sub("--", text)
    lines = [_SPACES.sub(" ", line).rstrip() for line in text.strip().splitlines()]
    for start, line in enumerate(lines):
        if start and set(line) <= {"-", " "} and "--" in line and "seconds" in lines[start - 1]:
            end = next((i for i in range(start + 1, len(lines)) if not lines[i]), len(lines))
            lines[start + 1:end] = sorted(lines[start + 1:end])
    # the headline's functions of equal re-compiles come in order of compile seconds
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) and _HEADLINE_FUNCTION.match(lines[end]):
            end += 1
        lines[start:end] = sorted(lines[start:end])
        start = end + 1
    return "\n".join(lines)


_HEADLINE_FUNCTION = re.compile(
    r"^[\w.<>\[\]]+: \d+ compiles?, (\d+ re-compiles? \(|no re-compile)")


def update(paths: list[Path], outputs: dict[str, str], check: bool) -> list[str]:
    """Rewrite (or, with ``check``, compare) the blocks of ``paths``; return what differs."""
    stale = []
    for path in paths:
        found = blocks(path)
        for block in found:  # in document order: a command may read what an earlier one wrote
            if block.command not in outputs:
                outputs[block.command] = run(block.command)
            if masked(outputs[block.command]) != masked(block.text):
                stale.append(f"{path.relative_to(ROOT)}: `{block.command}`")
        if check or not found:
            continue
        # Read again right before writing (the commands take a while), and replace from the
        # end so that the offsets of the earlier blocks hold.
        source = path.read_text(encoding="utf-8")
        for block in reversed(blocks(path)):
            if block.command in outputs:
                source = source[:block.start] + outputs[block.command] + source[block.end:]
        path.write_text(source, encoding="utf-8")
    return stale


def main(argv: list[str]) -> int:
    """``[--check] [FILE...]``: every document, or only the files named."""
    check = "--check" in argv
    named = [Path(arg).resolve() for arg in argv if arg != "--check"]
    stale = update(named or documents(), {}, check)
    for line in stale:
        print(("stale: " if check else "updated: ") + line)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
