"""Wrangler recipe syntax: one directive a line, read into typed steps.

The grammar is CDAP Wrangler's, both its classic form (`rename old new`, `drop a,b`) and its
newer form (`rename :old :new;`, `set-column :x exp:{ a + b }`):

- one directive a line; a trailing `;` is allowed; blank lines are skipped;
- a line whose first characters are `//` or `#` is a comment;
- columns are written `:name` or bare; `:'a name'` or `:"a name"` for names with spaces;
  lists are comma-separated (`:a,:b` or `a,b`) and, as a directive's last argument, may also be
  separated by spaces (`set-columns A B C`);
- texts may be quoted with `'` or `"` (a backslash escapes the quote, `\\uXXXX` a character);
- expressions are Spark SQL, written `exp:{ ... }` or as the rest of the line.

Every problem is a `RecipeError` naming the line; nothing is skipped silently.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lineage_assets.recipes.directives import Directive


class RecipeError(ValueError):
    """A recipe that cannot be read or run, with the line it stopped at."""

    def __init__(self, message: str, *, line: int | None = None, text: str | None = None):
        self.reason = message
        self.line = line
        self.text = text
        where = f"line {line}: " if line is not None else ""
        shown = f" (in `{text}`)" if text else ""
        super().__init__(f"{where}{message}{shown}")


@dataclass(frozen=True)
class Word:
    """One whitespace-separated word of a directive line, with where it starts."""

    raw: str
    start: int
    quoted: bool = False  # the whole word is one quoted text
    value: str = ""  # the text with quotes removed (quoted words) or as written
    block: bool = False  # an `exp:{...}` code block; value is what is inside the braces


@dataclass(frozen=True)
class Step:
    """One directive of a recipe: its place, its text and its typed arguments."""

    number: int  # 1-based position among the recipe's directives
    line: int  # 1-based line of the recipe text
    text: str  # the directive as written, without a trailing `;`
    name: str  # canonical directive name (aliases resolved)
    args: Mapping[str, Any] = field(default_factory=dict)

    @property
    def directive(self) -> "Directive":
        from lineage_assets.recipes.directives import DIRECTIVES

        return DIRECTIVES[self.name]

    def error(self, message: str) -> RecipeError:
        return RecipeError(f"{self.name}: {message}", line=self.line, text=self.text)


@dataclass(frozen=True)
class Recipe:
    """A parsed recipe: its text and its steps, in order."""

    text: str
    steps: tuple[Step, ...]

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)


_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def unescape(body: str, quote: str) -> str:
    """A quoted text's value: `\\<quote>` is the quote, `\\uXXXX` a character; other backslashes stay
    (regular expressions keep `\\d`)."""
    body = body.replace("\\" + quote, quote)
    return _UNICODE_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), body)


def outside_quotes(text: str, line: int) -> list[bool]:
    """For each character, whether it stands outside quotes and `{...}` blocks (a backslash
    escapes the next character inside quotes); unterminated quotes and unbalanced braces are
    errors."""
    free = [False] * len(text)
    quote_start, depth, i = None, 0, 0
    while i < len(text):
        ch = text[i]
        if quote_start is not None:
            if ch == "\\" and i + 1 < len(text):
                i += 2
                continue
            if ch == text[quote_start]:
                quote_start = None
        elif ch in "'\"":
            quote_start = i
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise RecipeError("unbalanced '}'", line=line, text=text)
        else:
            free[i] = depth == 0
        i += 1
    if quote_start is not None:
        raise RecipeError(f"unterminated quote {text[quote_start]} at column {quote_start + 1}", line=line, text=text)
    if depth > 0:
        raise RecipeError("unbalanced '{'", line=line, text=text)
    return free


def split_words(text: str, *, line: int) -> list[Word]:
    """Split a directive line into words, keeping quoted texts and `{...}` blocks whole."""
    free = outside_quotes(text, line)
    words: list[Word] = []
    i, n = 0, len(text)
    while i < n:
        if free[i] and text[i].isspace():
            i += 1
            continue
        start = i
        while i < n and not (free[i] and text[i].isspace()):
            i += 1
        words.append(_word(text[start:i], start))
    return words


def _word(raw: str, start: int) -> Word:
    if len(raw) >= 2 and raw[0] in "'\"" and raw[-1] == raw[0] and _one_quoted(raw):
        return Word(raw, start, quoted=True, value=unescape(raw[1:-1], raw[0]))
    block = re.fullmatch(r"exp\s*:\s*\{(.*)\}", raw, flags=re.S)
    if block:
        return Word(raw, start, block=True, value=block.group(1).strip())
    return Word(raw, start, value=raw)


def _one_quoted(raw: str) -> bool:
    """True when `raw` is a single quoted text (not `'a'||'b'`)."""
    quote, i = raw[0], 1
    while i < len(raw) - 1:
        if raw[i] == "\\":
            i += 2
            continue
        if raw[i] == quote:
            return False
        i += 1
    return True


def _strip_terminator(text: str, line: int) -> str:
    """Drop one trailing `;`; a `;` elsewhere outside quotes and braces is a second directive."""
    stripped = text.rstrip()
    if stripped.endswith(";"):
        stripped = stripped[:-1].rstrip()
    free = outside_quotes(stripped, line)
    if any(ch == ";" and free[i] for i, ch in enumerate(stripped)):
        raise RecipeError("one directive a line: found ';' before the end of the line", line=line, text=text.strip())
    return stripped


def is_comment(text: str) -> bool:
    return text.startswith("//") or text.startswith("#")


def parse(text: str) -> Recipe:
    """Read a recipe; raises `RecipeError` naming the line of the first problem."""
    from lineage_assets.recipes.directives import bind_arguments, lookup

    if not isinstance(text, str):
        raise RecipeError(f"a recipe is text, got {type(text).__name__}")
    steps: list[Step] = []
    # lines end at \n, \r\n or \r only: a U+2028 or a form feed inside a quoted text is text
    for line_no, raw_line in enumerate(re.split(r"\r\n|\r|\n", text), start=1):
        stripped = raw_line.strip()
        if not stripped or is_comment(stripped):
            continue
        body = _strip_terminator(stripped, line_no)
        if not body:
            continue
        words = split_words(body, line=line_no)
        directive = lookup(words[0].raw, line=line_no, text=body)
        args = bind_arguments(directive, body, words[1:], line=line_no)
        steps.append(Step(len(steps) + 1, line_no, body, directive.name, args))
    return Recipe(text, tuple(steps))
