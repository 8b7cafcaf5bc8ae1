"""LaTeX source -> the paper's body, the way RedPajama's arXiv subset was made.

1. pick the main file of a submission (the one with ``\\documentclass`` and
   ``\\begin{document}``) and inline its ``\\input``/``\\include`` files;
2. strip comments (``%`` to end of line, not ``\\%``), and ``comment`` environments;
3. expand simple argument-free macros defined with ``\\newcommand``/``\\renewcommand``/``\\def``;
4. keep the body from the first ``\\section`` (or ``\\chapter``) up to the bibliography, the
   appendix or ``\\end{document}``.

Verbatim material (``\\verb|...|``, ``\\lstinline``, and the ``verbatim``, ``lstlisting``,
``Verbatim`` and ``minted`` environments) is opaque to every rule: it is swapped for a
placeholder before the rules run and put back at the end, so ``\\verb|\\bibliography{x}|``
does not end the body, a ``%`` in a listing is not a comment and a macro name in an example is
not expanded.

The result is still LaTeX markup (math stays math) without preamble, comments or references.
"""

from __future__ import annotations

import posixpath
import re
import secrets

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
_VERB_ENVS = r"verbatim\*?|Verbatim\*?|BVerbatim|LVerbatim|lstlisting|minted"
# Scanned left to right, so whichever starts first wins: a comment hides a \verb in it, and a
# verbatim block hides a % in it.
_VERBATIM = re.compile(
    r"(?P<c>(?<!\\)%[^\n]*)"
    r"|(?P<v>\\(?:verb|lstinline)\*?(?P<d>[^A-Za-z\s*{\[])[^\n]*?(?P=d))"
    r"|(?P<e>\\begin\s*\{(?P<n>" + _VERB_ENVS + r")\}.*?\\end\s*\{(?P=n)\})",
    re.DOTALL)


class Verbatim:
    """Placeholders for verbatim material, private to one conversion (a random tag, so text
    that happens to contain a placeholder of another conversion is left alone)."""

    def __init__(self) -> None:
        self.tag = secrets.token_hex(4)
        self.items: list[str] = []
        self._back = re.compile("\ue000" + self.tag + r"(\d+)\ue001")

    def protect(self, tex: str) -> str:
        if "verb" not in tex and "\\begin" not in tex and "lstinline" not in tex:
            return tex

        def repl(m: re.Match[str]) -> str:
            if m.group("c") is not None:
                return m.group(0)
            self.items.append(m.group(0))
            return f"\ue000{self.tag}{len(self.items) - 1}\ue001"

        return _VERBATIM.sub(repl, tex)

    def restore(self, tex: str) -> str:
        if not self.items:
            return tex
        for _ in range(3):  # a placeholder may sit inside restored text only if nested
            new = self._back.sub(lambda m: self.items[int(m.group(1))], tex)
            if new == tex:
                break
            tex = new
        return tex


class LatexError(ValueError):
    """The source has no usable body (no main file, no section)."""


def strip_comments(tex: str) -> str:
    """Drop ``%`` comments and ``comment`` environments (verbatim material is kept as is)."""
    vb = Verbatim()
    return vb.restore(_strip_comments(vb.protect(tex)))


def _strip_comments(tex: str) -> str:
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


def inline_inputs(tex: str, files: dict[str, str], base_dir: str = "", depth: int = 0,
                  verbatim: Verbatim | None = None) -> str:
    """Replace ``\\input{x}``/``\\include{x}`` by the content of ``x`` (or ``x.tex``)."""
    if depth > 5:
        return tex
    vb = verbatim or Verbatim()

    def repl(m: re.Match[str]) -> str:
        name = m.group(1).strip()
        for cand in (name, name + ".tex"):
            key = posixpath.normpath(posixpath.join(base_dir, cand))
            if key in files:
                sub = _strip_comments(vb.protect(files[key]))
                return inline_inputs(sub, files, base_dir, depth + 1, vb)
        return ""

    if verbatim is None:
        return vb.restore(_INPUT.sub(repl, vb.protect(tex)))
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


def latex_body(tex: str, verbatim: Verbatim | None = None) -> str:
    """Comment-free, macro-expanded body from the first section to the references."""
    vb = verbatim or Verbatim()
    tex = expand_macros(_strip_comments(vb.protect(tex)))
    m = _START.search(tex)
    if not m:
        raise LatexError("no \\section or \\chapter")
    body = tex[m.start():]
    e = _END.search(body)
    if e:
        body = body[: e.start()]
    return vb.restore(_BLANKS.sub("\n\n", body).strip())


def submission_text(files: dict[str, str]) -> tuple[str, str]:
    """``(main file name, body)`` of a submission given as ``{name: source}``."""
    main = pick_main(files)
    base = posixpath.dirname(main)
    vb = Verbatim()
    tex = inline_inputs(_strip_comments(vb.protect(files[main])), files, base, verbatim=vb)
    return main, latex_body(tex, vb)
