"""Shared parameters: the download settings are declared once (``DownloadParams``) and are
YAML parameters of every built-in source, with the keys, defaults, errors and parameter dicts
(hence fingerprints) that each source had when it declared them itself."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import yaml

from curator.acquire.arxiv import Arxiv
from curator.acquire.base import DownloadParams, DownloadSource, FetchParams
from curator.acquire.common_crawl import CommonCrawl
from curator.acquire.read_warc import ReadWarc
from curator.acquire.warc_pages import WarcParams
from curator.acquire.wikipedia import Wikipedia
from curator.base.errors import ConfigError
from curator.core import pipeline as pl
from curator.core.params import StageParams
from curator.core.stage import ShardStage
from curator.extract.extract_html import ExtractOptions
from tests.acquire.helpers_acquire import GzBooks

DOWNLOAD = {"download_dir": "downloads", "delete_after_read": False, "retries": 5,
            "backoff_s": 1.0, "on_download_error": "fail", "http_timeout_s": 60.0,
            "source": None, "storage_options": None}


def _stage(entry: dict[str, Any]) -> Any:
    doc = {"name": "t", "work_dir": "w", "stages": [entry]}
    return pl.loads(yaml.safe_dump(doc)).nodes[0].stage


def test_download_parameters_are_declared_once_and_shared_by_every_source() -> None:
    assert {k: f.default for k, f in DownloadParams.model_fields.items()} == DOWNLOAD
    for cls in (CommonCrawl, Wikipedia, Arxiv, ReadWarc):
        assert issubclass(cls.Params, FetchParams), cls
        own = inspect.get_annotations(cls.Params)
        assert not set(own) & set(DOWNLOAD), cls  # not repeated in the source's own model
        fields = cls.params_model().model_fields
        want = set(DOWNLOAD) - ({"delete_after_read", "http_timeout_s"}
                                if cls is ReadWarc else set())
        assert want <= set(fields), cls
        for k in want:
            assert fields[k].default == DOWNLOAD[k], (cls, k)
            assert fields[k].description, (cls, k)  # help for curator stages NAME
    assert set(ReadWarc.params_model().model_fields) & {"delete_after_read",
                                                        "http_timeout_s"} == set()
    # the two web-archive sources share their extraction settings the same way
    for cls in (CommonCrawl, ReadWarc):
        assert issubclass(cls.Params, WarcParams), cls
        assert not set(inspect.get_annotations(cls.Params)) & set(WarcParams.model_fields)


def test_yaml_parameters_and_errors_are_those_each_source_declared() -> None:
    # extract_html's extraction options at their defaults (test_warc_extract_options.py)
    options = ExtractOptions().model_dump(mode="json")
    assert options["fallback_ratio"] == 0.5 and len(options) == 15
    cc = _stage({"common_crawl": {"snapshot": "CC-MAIN-2024-10", "retries": 2,
                                  "storage_options": {"anon": True}}})
    assert cc.params == {"snapshot": "CC-MAIN-2024-10", "base_url": "https://data.commoncrawl.org",
                         "files": None, "limit": None, "extractor": "trafilatura",
                         "timeout_s": 10.0, "max_page_mb": 10.0, "reader": "fastwarc",
                         "languages": None, "language_guess_below": 0.05, **options,
                         **DOWNLOAD, "retries": 2, "storage_options": {"anon": True}}
    assert (cc.retries, cc.storage_options, cc.backoff_s) == (2, {"anon": True}, 1.0)
    rw = _stage({"read_warc": {"paths": "a.warc", "source": "mine"}})
    assert rw.params == {"paths": "a.warc", "extractor": "trafilatura", "timeout_s": 10.0,
                         "max_page_mb": 10.0, "reader": "fastwarc", "languages": None,
                         "language_guess_below": 0.05, **options, "download_dir": "downloads",
                         "retries": 5, "backoff_s": 1.0, "on_download_error": "fail",
                         "source": "mine", "storage_options": None}
    assert rw.http_timeout_s == 60.0 and rw.delete_after_read is False  # fixed settings
    # arxiv's own default for the shared storage_options still applies (not in its params)
    ax = _stage({"arxiv": {"months": "2401", "base_url": "s3://arxiv"}})
    assert ax.storage_options == {"requester_pays": True}
    assert ax.params["storage_options"] is None

    for entry, msg in [
        ({"common_crawl": {"snapshot": "CC-MAIN-2024-10", "retries": "many"}},
         "stages[0].common_crawl.retries: Input should be a valid integer"),
        ({"wikipedia": {"on_download_error": "ignore"}},
         "stages[0].wikipedia.on_download_error: Input should be 'fail' or 'skip'"),
        ({"arxiv": {"months": "2401", "download_dirr": "x"}},
         "stages[0].arxiv.download_dirr: unknown key (did you mean 'download_dir'?)"),
        ({"read_warc": {"paths": "a.warc", "delete_after_read": True}},
         "stages[0].read_warc.delete_after_read: unknown key"),
    ]:
        with pytest.raises(ConfigError) as e:
            _stage(entry)
        assert msg in str(e.value) and "\n" not in str(e.value)


def test_python_construction_takes_shared_parameters_by_keyword() -> None:
    cc = CommonCrawl(snapshot="CC-MAIN-2024-10", retries=1, source="web")
    assert (cc.retries, cc.source, cc.http_timeout_s) == (1, "web", 60.0)
    assert Arxiv(months="2401", base_url="s3://arxiv").storage_options == {"requester_pays": True}
    with pytest.raises(ConfigError, match=r"^common_crawl\.retrys: unknown key$"):
        CommonCrawl(snapshot="CC-MAIN-2024-10", retrys=1)
    with pytest.raises(ConfigError, match=r"^read_warc\.http_timeout_s: unknown key$"):
        ReadWarc(paths="a.warc", http_timeout_s=3)


def test_a_custom_source_without_params_keeps_its_own_parameters() -> None:
    """A custom source written against DownloadSource (no ``**params`` in ``__init__``, or no
    ``__init__`` at all) gets no new YAML keys, so its parameters and fingerprint stay."""
    assert list(GzBooks.params_model().model_fields) == ["base_url", "first", "count"]
    books = GzBooks.from_params({"base_url": "http://x"})
    assert books.params == {"base_url": "http://x", "first": 1, "count": 3}
    assert books.retries == 5 and books.download_dir == "downloads"

    class Plain(DownloadSource):
        retries = 2  # a fixed setting, as before

    assert list(Plain.params_model().model_fields) == []
    assert Plain.from_params({}).retries == 2


def test_any_stage_can_share_a_parameter_group() -> None:
    class Window(StageParams):
        width: int = 80
        """characters kept each side"""
        mode: str = "both"

    class Clip(ShardStage):
        name = "clip_test"

        class Params(Window):
            keep: bool = True

    assert set(Clip.params_model().model_fields) == {"keep", "width", "mode"}
    clip = Clip.from_params({"width": 10})
    assert (clip.keep, clip.width, clip.mode) == (True, 10, "both")
    assert clip.params == {"keep": True, "width": 10, "mode": "both"}
    assert Clip.params_model().model_fields["width"].description == "characters kept each side"
    with pytest.raises(Exception, match="width"):
        Clip.from_params({"width": "wide"})
