"""LaTeX source -> the paper's body, the way RedPajama's arXiv subset was made.

1. pick the main file of a submission (the one with ``\\documentclass`` and
   ``\\begin{document}``) and inline its ``\\input``/``\\include`` files;
2. strip comments (``%`` to end of line, not ``\\%``), and ``comment`` environments;
3. expand simple argument-free macros defined with ``\\newcommand``/``\\renewcommand``/``\\def``;
4. keep the body from the first ``\\section`` (or ``\\chapter``) up to the bibliography, the
   appendix or ``\\end{document}``.

The result is still LaTeX markup (math stays math) without preamble, comments or references.
"""

from __future__ import annotations

import posixpath
import re

_COMMENT = re.compile(r"(?<!\\)%.*")
_COMMENT_ENV = re.compile(r"\\begin\{comment\}.*?\\end\{comment\}", re.DOTALL)
_INPUT = re.compile(r"\\(?:input|include)\s*\{([^}]+)\}")
# \newcommand{\foo}{body} / \newcommand\foo{body} / \renewcommand* ... ; no [n] arguments
_NEWCMD = re.compile(
    r"\\(?:re)?newcommand\*?\s*\{?\s*(\\[A-Za-z]+)\s*\}?\s*(\{(?:[^{}]|\{[^{}]*\})*\})")
_DEF = re.compile(r"\\def\s*(\\[A-Za-z]+)\s*(\{(?:[^{}]|\{[^{}]*\})*\})")
_START = re.compile(r"\\(?:section|chapter)\*?\s*[\[{]")
_END = re.compile(
    r"\\begin\{thebibliography\}|\\bibliography\s*\{|\\printbibliography|\\appendix\b"
    r"|\\appendices\b"
    r"|\\begin\{appendix|\\begin\{appendices\}|\\end\{document\}")
_BLANKS = re.compile(r"\n\s*\n(\s*\n)+")


class LatexError(ValueError):
    """The source has no usable body (no main file, no section)."""


def strip_comments(tex: str) -> str:
    tex = _COMMENT_ENV.sub("", tex)
    out = []
    for line in tex.split("\n"):
        stripped = _COMMENT.sub("", line)
        if stripped.strip() or not line.lstrip().startswith("%"):
            out.append(stripped.rstrip())
    return "\n".join(out)


def expand_macros(tex: str, max_passes: int = 3) -> str:
    """Replace uses of argument-free macros by their definitions (definitions removed)."""
    macros: dict[str, str] = {}
    for rx in (_NEWCMD, _DEF):
        for m in rx.finditer(tex):
            macros[m.group(1)] = m.group(2)[1:-1]
    if not macros:
        return tex
    tex = _NEWCMD.sub("", tex)
    tex = _DEF.sub("", tex)
    names = sorted(macros, key=len, reverse=True)
    use = re.compile("(" + "|".join(re.escape(n) for n in names) + r")(?![A-Za-z])")
    for _ in range(max_passes):
        new = use.sub(lambda m: macros[m.group(1)], tex)
        if new == tex:
            break
        tex = new
    return tex


def inline_inputs(tex: str, files: dict[str, str], base_dir: str = "", depth: int = 0) -> str:
    """Replace ``\\input{x}``/``\\include{x}`` by the content of ``x`` (or ``x.tex``)."""
    if depth > 5:
        return tex

    def repl(m: re.Match[str]) -> str:
        name = m.group(1).strip()
        for cand in (name, name + ".tex"):
            key = posixpath.normpath(posixpath.join(base_dir, cand))
            if key in files:
                return inline_inputs(strip_comments(files[key]), files, base_dir, depth + 1)
        return ""

    return _INPUT.sub(repl, tex)


def pick_main(files: dict[str, str]) -> str:
    """Name of the main ``.tex`` file of a submission; :class:`LatexError` if there is none."""
    cands = [n for n in files
             if n.lower().endswith((".tex", ".ltx", ".latex")) or "." not in n.rsplit("/", 1)[-1]]
    best = [n for n in cands if "\\documentclass" in files[n] and "\\begin{document}" in files[n]]
    if not best:
        best = [n for n in cands if "\\begin{document}" in files[n]]
    if not best:
        raise LatexError("no .tex file with \\begin{document}")
    return max(best, key=lambda n: (len(files[n]), n))


def latex_body(tex: str) -> str:
    """Comment-free, macro-expanded body from the first section to the references."""
    tex = expand_macros(strip_comments(tex))
    m = _START.search(tex)
    if not m:
        raise LatexError("no \\section or \\chapter")
    body = tex[m.start():]
    e = _END.search(body)
    if e:
        body = body[: e.start()]
    return _BLANKS.sub("\n\n", body).strip()


def submission_text(files: dict[str, str]) -> tuple[str, str]:
    """``(main file name, body)`` of a submission given as ``{name: source}``."""
    main = pick_main(files)
    base = posixpath.dirname(main)
    tex = inline_inputs(strip_comments(files[main]), files, base)
    return main, latex_body(tex)
