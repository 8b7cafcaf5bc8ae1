from __future__ import annotations

import ftfy
import pytest
from helpers_filters import run_cli, run_pipeline, write_jsonl

from curator.core.errors import ConfigError
from curator.filters.langid import DEFAULT_MODEL, LanguageId, predict_languages

SAMPLES = {
    "en": "The committee will publish its final report on the river restoration next spring.",
    "fr": "Le comité publiera son rapport final sur la restauration de la rivière au printemps.",
    "de": "Der Ausschuss wird seinen Abschlussbericht über die Renaturierung im Frühjahr "
          "veröffentlichen.",
    "es": "El comité publicará su informe final sobre la restauración del río la próxima "
          "primavera.",
    "it": "Il comitato pubblicherà la sua relazione finale sul restauro del fiume la prossima "
          "primavera.",
    "ru": "Комитет опубликует свой окончательный доклад о восстановлении реки следующей весной.",
    "zh": "委员会将于明年春天发布关于河流修复的最终报告。",
    "ja": "委員会は来年の春に川の修復に関する最終報告書を発表する予定です。",
    "ar": "ستنشر اللجنة تقريرها النهائي حول إعادة تأهيل النهر في الربيع المقبل.",
    "ko": "위원회는 내년 봄에 하천 복원에 관한 최종 보고서를 발표할 예정입니다.",
}


def test_bundled_model_identifies_many_languages() -> None:
    langs, scores = predict_languages(list(SAMPLES.values()))
    assert langs == list(SAMPLES)
    assert all(s > 0.5 for s in scores)


def test_language_id_stage_keeps_chosen_languages(tmp) -> None:
    recs = [{"id": lang, "text": text + "\n" + text} for lang, text in SAMPLES.items()]
    recs.append({"id": "noise", "text": "xq zz 1234 ## qqq"})
    write_jsonl(tmp / "in.jsonl", recs)
    run = run_pipeline(tmp, [{"read_jsonl": {"paths": str(tmp / "in.jsonl")}},
                             {"language_id": {"languages": ["en", "zh", "ja"],
                                              "min_score": 0.65}}])
    out = {d.id: d for d in run.docs()}
    assert set(out) == {"en", "zh", "ja"}
    assert out["zh"].meta["language"] == "zh" and out["zh"].meta["language_score"] >= 0.65
    reasons = {r["id"]: r["rejected"]["reason"] for r in run.rejected("language_id")}
    assert reasons["fr"] == "language_id:other_language"
    assert reasons["ru"] == "language_id:other_language"
    counters = run.stage("language_id")["counters"]
    assert counters["language:ru"] == 1 and counters["language:en"] == 1
    assert sum(v for k, v in counters.items() if k.startswith("language:")) == len(recs)


def test_language_id_label_only_and_missing_model(tmp) -> None:
    stage = LanguageId.from_params({"label_only": True})
    assert stage.model_path == DEFAULT_MODEL
    with pytest.raises(ConfigError, match="not found"):
        LanguageId.from_params({"model_path": str(tmp / "nope.bin")})
    (tmp / "p.yaml").write_text(
        "name: t\nwork_dir: w\nstages:\n  - read_jsonl: {paths: x.jsonl}\n"
        f"  - language_id: {{model_path: {tmp / 'missing.ftz'}}}\n")
    p = run_cli("validate", "p.yaml", cwd=tmp, check=False)
    assert p.returncode != 0
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and "missing.ftz" in err[0] and "not found" in err[0]


BROKEN = [
    "The Mona Lisa doesnâ€™t have eyebrows.",  # mojibake
    "Caf\u00c3\u00a9 au lait &amp; croissants",  # UTF-8 read as Latin-1 + HTML entity
    "bell\x07 and\x1b[31m red\x1b[0m text",  # control characters / terminal escapes
    "ﬁne ﬂour in ＦＵＬＬＷＩＤＴＨ",  # ligatures and full-width letters
    "line one\r\nline two",
]


def test_fix_unicode_matches_ftfy_and_skips_clean_ascii(tmp) -> None:
    clean = "Plain ASCII text stays exactly as it is.\nSecond line."
    recs = [{"id": str(i), "text": t} for i, t in enumerate(BROKEN)]
    recs.append({"id": "clean", "text": clean})
    write_jsonl(tmp / "in.jsonl", recs)
    run = run_pipeline(tmp, [{"read_jsonl": {"paths": str(tmp / "in.jsonl")}},
                             {"fix_unicode": {}}])
    out = {d.id: d.text for d in run.docs()}
    for i, t in enumerate(BROKEN):
        assert out[str(i)] == ftfy.fix_text(t, uncurl_quotes=False)
        assert out[str(i)] != t
    assert out["0"] == "The Mona Lisa doesn’t have eyebrows."
    assert "\x07" not in out["2"] and "\x1b" not in out["2"]
    assert out["clean"] == clean
    assert run.stage("fix_unicode")["counters"]["fix_unicode:changed"] == len(BROKEN)


def test_fix_unicode_options_are_exposed(tmp) -> None:
    write_jsonl(tmp / "in.jsonl", [{"id": "a", "text": BROKEN[0]}])
    run = run_pipeline(tmp, [{"read_jsonl": {"paths": str(tmp / "in.jsonl")}},
                             {"fix_unicode": {"fix_encoding": False}}])
    assert run.docs()[0].text == BROKEN[0]


def test_lone_surrogates_do_not_fail_a_batch() -> None:
    from curator.core.document import Document
    from curator.filters.decontam import Matcher
    from curator.filters.heuristics import GopherRepetition

    bad = "broken \ud800 text " + SAMPLES["en"]
    langs, _ = predict_languages([bad, SAMPLES["fr"]])
    assert langs == ["en", "fr"]
    assert GopherRepetition.from_params({}).check(Document("x", bad * 3)) is not None
    assert Matcher({}).matches(bad) == []
